"""The text-completion pages of a session: the prompt preview (`/sessions/<pk>/text/`, read-only: QA's too), its
settings (designers), and two templates of one kind compared on the session. Every page works without JavaScript;
htmx swaps the prompt part alone."""

from __future__ import annotations

import difflib
from typing import Any

from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assembly.errors import CodedError
from assembly.sillytavern.text_templates import TEXT_SETTINGS_DEFAULTS
from preview_app import presenters, services
from preview_app.access import can_approve_goldens, can_edit_session, session_for_edit, session_for_read
from preview_app.models import Session
from preview_app.previews import TEXT_STRATEGY, session_request, session_text_templates, text_request
from preview_app.text_forms import TextSettingsForm
from preview_app.text_parity import read_sent_text, text_parity
from preview_app.text_preview import text_preview, untrimmed_request
from strategies_app.access import resource_for_read
from strategies_app.models import Strategy, TextTemplate
from strategies_app.text_templates import KINDS, master_document
from studio.engine_runs import assemble
from studio.errors import invalid
from studio.http import MAX_BODY_BYTES, too_large

TEXT_GENERATIONS = ("normal", "continue", "impersonate")  # what text completion builds


def _template_names(session: Session) -> dict[str, str]:
    return {kind: ((row.name, row.pk) if row is not None else ("", None))
            for kind, row in session_text_templates(session).items()}


def run_text(request_data: dict[str, Any], *, template_names: dict[str, str] | None = None):
    """The preview of a text request: the result, and (to list what was trimmed) the same request with room."""
    result = assemble(request_data)
    untrimmed = assemble(untrimmed_request(request_data))
    return text_preview(request_data, result, untrimmed=untrimmed, template_names=template_names), result


def _settings_form(session: Session, data=None) -> TextSettingsForm:
    """The session's settings as the engine reads them (SillyTavern's defaults where the session sets none)."""
    settings = session.text_settings or {}
    return TextSettingsForm(data, initial={
        "completion": session.completion, "instruct_template": session.instruct_template_id,
        "context_template": session.context_template_id, "sysprompt_template": session.sysprompt_template_id,
        "instruct_enabled": session.instruct_enabled,
        **{name: settings[name] if settings.get(name) is not None else TEXT_SETTINGS_DEFAULTS[name]
           for name in services.TEXT_SETTING_KEYS}})


def _page(request, session: Session, *, status: int = 200, form=None, form_error=None):
    context: dict[str, Any] = {"session": session, "editable": can_edit_session(request.user, session),
                               "form": form or _settings_form(session), "form_error": form_error,
                               "kinds": [k for k in KINDS if k != "reasoning"],
                               "pin_revision": builtin_st_revision() if can_approve_goldens(request.user) else None}
    generation = request.GET.get("generation") or "normal"
    context.update(generation=generation, generations=TEXT_GENERATIONS)
    if session.completion == "text":
        try:
            if generation not in TEXT_GENERATIONS:
                raise invalid("generation", "one of " + ", ".join(TEXT_GENERATIONS))
            data = session_request(session, "builtin-st")
            if generation != "normal":
                data["generation"] = {**data.get("generation", {}), "type": generation}
            context["text"], _result = run_text(data, template_names=_template_names(session))
        except CodedError as error:
            context["error"], status = presenters.error_context(error), error.status
    if request.htmx and form is None:
        return render(request, "preview/text.html#text-prompt", context, status=status)
    return render(request, "preview/text.html", context, status=status)


@require_GET
def text_preview_page(request, pk):
    session = session_for_read(pk)
    return _page(request, session)


@require_POST
def text_settings(request, pk):
    """Designers: chat or text completion, the templates, instruct on or off, the context and response sizes and
    SillyTavern's other text-completion settings."""
    try:
        session = session_for_edit(request.user, pk)
    except CodedError as error:
        return render(request, "preview/error.html", {"error": presenters.error_context(error)},
                      status=error.status)
    form = _settings_form(session, request.POST)
    if not form.is_valid():  # each error beside its field, in the page's language
        return _page(request, session, status=400, form=form)
    try:
        data = form.cleaned_data
        services.session_text_update(
            session=session, completion=data["completion"], instruct_template=data["instruct_template"],
            context_template=data["context_template"], sysprompt_template=data["sysprompt_template"],
            instruct_enabled=data["instruct_enabled"],
            text_settings={**(session.text_settings or {}),
                           **{name: data[name] for name in services.TEXT_SETTING_KEYS if data[name] is not None}})
    except CodedError as error:
        return _page(request, session, status=error.status, form=form, form_error=presenters.error_context(error))
    return redirect(reverse("preview:text", args=[session.pk]))


def _template_choice(kind: str, side: str, value: str | None, fallback: TextTemplate | None) -> TextTemplate | None:
    """The template `?a=` / `?b=` names (the session's own when absent), refused unless it is of `kind`."""
    if not value:
        return fallback
    row = resource_for_read("template", value)
    if row.kind != kind:
        raise invalid(side, f"the id of a template of kind {kind}")
    return row


@require_GET
def text_compare(request, pk):
    """Two templates of one kind (`?kind=instruct&a=<id>&b=<id>`) on the same session, side by side: each prompt
    with its spans, and the lines that differ."""
    session = session_for_read(pk)
    kind = request.GET.get("kind", "instruct")
    context: dict[str, Any] = {"session": session, "kind": kind, "choices": TextTemplate.objects.filter(
        kind=kind if kind in KINDS else "instruct"), "kinds": [k for k in KINDS if k != "reasoning"]}
    try:
        if kind not in ("instruct", "context", "sysprompt"):
            raise invalid("kind", "instruct, context or sysprompt")
        current = session_text_templates(session)[kind]
        a = _template_choice(kind, "a", request.GET.get("a"), current)
        b = _template_choice(kind, "b", request.GET.get("b"), current)
        context.update(a=a, b=b)
        sides = []
        for row in (a, b):
            data = text_request(session, session_request(session, "builtin-st")["conversation"],
                                session.persona.name if session.persona is not None else "User",
                                swap={kind: row})
            names = {**_template_names(session), kind: (row.name, row.pk) if row is not None else ("", None)}
            sides.append(run_text(data, template_names=names)[0])
        context["sides"] = sides
        context["diff"] = line_diff(sides[0].prompt, sides[1].prompt)
        context["diff_counts"] = {op: sum(1 for line in context["diff"] if line["op"] == op)
                                  for op in ("removed", "added")}
    except CodedError as error:
        context["error"] = presenters.error_context(error)
        return render(request, "preview/text_compare.html", context, status=error.status)
    return render(request, "preview/text_compare.html", context)


# The line pairs difflib may compare: its search is quadratic, and a pasted prompt (parity) is anyone's text.
MATCHED_LINE_PAIRS = 1_000_000


def line_diff(a: str, b: str) -> list[dict[str, str]]:
    """The two prompts' lines: each kept, removed (only in A) or added (only in B), in order. The common head and
    tail are kept at once; the lines between them are matched by difflib only while their pairs stay within
    MATCHED_LINE_PAIRS, else they are listed as removed, then added."""
    a_lines, b_lines = a.split("\n"), b.split("\n")
    head, most = 0, min(len(a_lines), len(b_lines))
    while head < most and a_lines[head] == b_lines[head]:
        head += 1
    tail = 0
    while tail < most - head and a_lines[-1 - tail] == b_lines[-1 - tail]:
        tail += 1
    a_middle, b_middle = a_lines[head:len(a_lines) - tail], b_lines[head:len(b_lines) - tail]
    if len(a_middle) * len(b_middle) > MATCHED_LINE_PAIRS:
        opcodes = [("replace", 0, len(a_middle), 0, len(b_middle))]
    else:
        opcodes = difflib.SequenceMatcher(a=a_middle, b=b_middle, autojunk=False).get_opcodes()
    rows = [{"op": "same", "text": line} for line in a_lines[:head]]
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            rows += [{"op": "same", "text": line} for line in a_middle[i1:i2]]
            continue
        rows += [{"op": "removed", "text": line} for line in a_middle[i1:i2]]
        rows += [{"op": "added", "text": line} for line in b_middle[j1:j2]]
    rows += [{"op": "same", "text": line} for line in a_lines[len(a_lines) - tail:]]
    return rows


@require_http_methods(["GET", "POST"])
def text_parity_page(request, pk):
    """Paste the prompt string SillyTavern sent (or its backend body): is it the one builtin-st builds? A read:
    nothing is stored."""
    session = session_for_read(pk)
    context: dict[str, Any] = {"session": session, "sent": request.POST.get("sent", "")}
    status = 200
    if request.method == "POST":
        try:
            if len(context["sent"].encode("utf-8")) > MAX_BODY_BYTES:
                context["sent"] = ""
                raise too_large("sent", None)
            sent = read_sent_text(context["sent"])
            if session.completion != "text":
                raise invalid("session", "a text-completion session (this one uses chat completion)")
            data = session_request(session, "builtin-st")
            result = assemble(data)
            report = text_parity(result.request.prompt or "", list(result.request.stop or ()), sent)
            context.update(report=report, diff=[] if report.prompt_same else line_diff(
                result.request.prompt or "", sent.prompt))
        except CodedError as error:
            context["error"], status = presenters.error_context(error), error.status
    template = "preview/text_parity.html#result" if request.htmx and request.method == "POST" \
        else "preview/text_parity.html"
    return render(request, template, context, status=status)


def text_parity_api(session: Session, value: Any) -> dict[str, Any]:
    """The parity API's answer for a text-completion session: `value` is the pasted prompt or the backend body."""
    sent = read_sent_text(value)
    result = assemble(session_request(session, "builtin-st"))
    return text_parity(result.request.prompt or "", list(result.request.stop or ()), sent).to_json()


def builtin_st_revision() -> str | None:
    """The sha of builtin-st's latest revision: the revision a text session's golden is pinned with."""
    strategy = Strategy.objects.filter(slug=TEXT_STRATEGY).first()
    revision = strategy.revisions.first() if strategy is not None else None
    return revision.revision if revision is not None else None


@require_GET
def text_templates_export(request, pk):
    """The session's instruct, context and system-prompt templates as one SillyTavern master export."""
    session = session_for_read(pk)
    rows = {kind: row for kind, row in session_text_templates(session).items() if row is not None}
    response = JsonResponse(master_document(rows), json_dumps_params={"ensure_ascii": False, "indent": 4})
    response["Content-Disposition"] = f'attachment; filename="session-{session.pk}-text-templates.json"'
    return response
