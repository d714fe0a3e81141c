"""The text-template editor (`/text-templates/<id>/edit/?session=<id>`): a designer edits an instruct template's
sequences (a context template's story string, a system prompt's text) and sees, on a text session of their choice,
the prompt the edit gives and one sentence saying what it changed, computed from the prompt before (the template as
stored) and after (as edited): lines, tokens, stop strings, or why nothing changed.

Works without JavaScript: "Preview the change" posts the form and shows the page with the effect; "Save" stores it
(with the digest of the fields it started from, so a stale edit is refused, never merged). With htmx, typing
previews the effect in place."""

from __future__ import annotations

from typing import Any

from django import forms
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_http_methods, require_POST

from assembly.errors import CodedError
from preview_app import presenters
from preview_app.access import session_for_read
from preview_app.models import Session
from preview_app.previews import session_request, text_request
from preview_app.text_preview import TextPreview, shown_stop
from preview_app.text_views import line_diff, run_text
from strategies_app import services as template_services
from strategies_app.access import (
    EDIT_STRATEGY,
    can_copy_text_templates,
    can_edit_text_template,
    resource_for_read,
    role_refusal,
    text_template_for_edit,
)
from strategies_app.models import TextTemplate
from strategies_app.text_templates import EDITABLE_FIELDS
from studio.errors import invalid

LONG_FIELDS = ("story_string", "content", "post_history")  # texts of many lines: a taller box


# Each field as SillyTavern's Advanced Formatting panel names it; its JSON key is shown beside, as code.
FIELD_WORDS = {
    "input_sequence": gettext_lazy("User Message Prefix"), "input_suffix": gettext_lazy("User Message Suffix"),
    "output_sequence": gettext_lazy("Assistant Message Prefix"),
    "output_suffix": gettext_lazy("Assistant Message Suffix"),
    "system_sequence": gettext_lazy("System Message Prefix"), "system_suffix": gettext_lazy("System Message Suffix"),
    "first_input_sequence": gettext_lazy("First User Prefix"), "last_input_sequence": gettext_lazy("Last User Prefix"),
    "first_output_sequence": gettext_lazy("First Assistant Prefix"),
    "last_output_sequence": gettext_lazy("Last Assistant Prefix"),
    "last_system_sequence": gettext_lazy("System Instruction Prefix"),
    "story_string_prefix": gettext_lazy("Story String Prefix"),
    "story_string_suffix": gettext_lazy("Story String Suffix"), "stop_sequence": gettext_lazy("Stop Sequence"),
    "story_string": gettext_lazy("Story String"), "chat_start": gettext_lazy("Chat Start"),
    "example_separator": gettext_lazy("Example Separator"), "content": gettext_lazy("System Prompt"),
    "post_history": gettext_lazy("Post-History Instructions"),
}


def _form_class(kind: str) -> type[forms.Form]:
    fields = {name: forms.CharField(label=FIELD_WORDS.get(name, name), required=False, strip=False, widget=forms.Textarea(attrs={
        "rows": 10 if name in LONG_FIELDS else 2, "spellcheck": "false", "class": "mono"}))
        for name in EDITABLE_FIELDS.get(kind, ())}
    return type("TemplateFieldsForm", (forms.Form,), fields)


def _posted(form: forms.Form) -> dict[str, str]:
    """The edited texts, with the browser's CRLF line ends read as the template's LF."""
    return {name: value.replace("\r\n", "\n") for name, value in form.cleaned_data.items()}


def _sessions() -> list[Session]:
    return list(Session.objects.filter(completion="text").order_by("name", "pk")[:200])


def _chosen_session(request, sessions: list[Session]) -> Session | None:
    wanted = request.GET.get("session") or request.POST.get("session")
    if wanted:
        return session_for_read(wanted)
    return sessions[0] if sessions else None


def _run(session: Session, kind: str, fields: dict[str, Any]) -> TextPreview:
    user_name = session.persona.name if session.persona is not None else "User"
    data = text_request(session, session_request(session, "builtin-st")["conversation"], user_name,
                        swap={kind: fields})
    return run_text(data)[0]


def template_effect(kind: str, changed: list[str], before: TextPreview, after: TextPreview) -> dict[str, Any]:
    """The edit's effect on the session's prompt, in one sentence, and the lines that differ."""
    if not changed:
        return {"changed": False, "sentence": _("Nothing edited yet: the prompt below is this session's with the "
                                                "template as stored."), "diff": []}
    stop_added = [s for s in after.stop if s not in before.stop]
    stop_removed = [s for s in before.stop if s not in after.stop]
    if before.prompt == after.prompt and not stop_added and not stop_removed:
        if kind == "instruct" and not after.instruct_on:
            reason = _("instruct mode is off in this session, so its instruct template is not used")
        else:
            reason = ngettext("%(fields)s does not occur in it", "%(fields)s do not occur in it",
                              len(changed)) % {"fields": ", ".join(changed)}
        return {"changed": False, "sentence": _("No change to this session's prompt: %(reason)s.") % {
            "reason": reason}, "diff": []}
    diff = line_diff(before.prompt, after.prompt)
    removed = sum(1 for line in diff if line["op"] == "removed")
    added = sum(1 for line in diff if line["op"] == "added")
    delta = after.total_tokens - before.total_tokens
    parts = []
    if before.prompt != after.prompt:
        parts.append(_("the prompt changes: %(removed)s lines out, %(added)s lines in; %(before)s → %(after)s tokens "
                       "(%(delta)s)") % {"removed": removed, "added": added, "before": before.total_tokens,
                                         "after": after.total_tokens, "delta": f"{delta:+d}"})
    if stop_added:
        parts.append(_("stop strings added: %(stops)s") % {"stops": ", ".join(shown_stop(s) for s in stop_added)})
    if stop_removed:
        parts.append(_("stop strings removed: %(stops)s") % {"stops": ", ".join(shown_stop(s) for s in stop_removed)})
    sentence = _("Editing %(fields)s: %(effects)s.") % {"fields": ", ".join(changed), "effects": "; ".join(parts)}
    return {"changed": True, "sentence": sentence, "diff": diff}


def _page(request, template: TextTemplate, *, form=None, status: int = 200, error=None, saved: bool = False):
    sessions = _sessions()
    editable = can_edit_text_template(request.user, template)
    form = form if form is not None else _form_class(template.kind)(
        initial={name: template.fields.get(name, "") for name in EDITABLE_FIELDS.get(template.kind, ())})
    context: dict[str, Any] = {"template": template, "form": form, "sessions": sessions, "editable": editable,
                               "can_copy": can_copy_text_templates(request.user), "error": error, "saved": saved,
                               "digest": template_services.text_template_digest(template.fields)}
    if template.kind not in EDITABLE_FIELDS:  # a reasoning template: data the prompt does not read
        context.update(unused=True, can_copy=False, export=reverse("api-resource-export", args=["template", template.pk]))
        return render(request, "preview/text_template_editor.html", context, status=status)
    session = None
    try:
        session = _chosen_session(request, sessions)
        context["session"] = session
        if session is not None:
            before = _run(session, template.kind, template.fields)
            edited = {**template.fields, **(_posted(form) if form.is_bound and form.is_valid() else {})}
            changed = [name for name in EDITABLE_FIELDS.get(template.kind, ())
                       if edited.get(name, "") != template.fields.get(name, "")]
            after = _run(session, template.kind, edited) if changed else before
            context.update(text=after, effect=template_effect(template.kind, changed, before, after))
    except CodedError as failure:
        context["run_error"] = presenters.error_context(failure)
    name = "preview/text_template_editor.html#template-effect" if request.htmx and form.is_bound \
        else "preview/text_template_editor.html"
    return render(request, name, context, status=status)


@require_http_methods(["GET", "POST"])
def template_editor(request, pk):
    """GET: the template's fields and its effect on a session. POST `action=preview`: the effect of the posted
    fields (nothing stored); `action=save`: store them (the template's owner or an admin)."""
    template = resource_for_read("template", pk)
    if request.method == "GET":
        return _page(request, template, saved=bool(request.GET.get("saved")))
    form = _form_class(template.kind)(request.POST)
    if request.POST.get("action") != "save":
        return _page(request, template, form=form)
    try:
        template = text_template_for_edit(request.user, pk)
        if not form.is_valid():
            raise invalid(*next(iter(form.errors.items())))  # a Textarea posts text: only a forged form lands here
        template_services.text_template_update(template=template, changes=_posted(form),
                                               expected=request.POST.get("expected", ""))
    except CodedError as failure:
        fresh = TextTemplate.objects.get(pk=template.pk)
        return _page(request, fresh, form=form if failure.code != "TEMPLATE_CHANGED" else None,
                     status=failure.status, error=presenters.error_context(failure))
    session = request.POST.get("session")
    return redirect(reverse("preview:text-template-edit", args=[template.pk]) + "?saved=1" +
                    (f"&session={session}" if session else ""))


@require_POST
def template_copy(request, pk):
    """An editable copy of a template (a built-in's, another user's), owned by its maker; opens its editor."""
    source = resource_for_read("template", pk)
    try:
        if not can_copy_text_templates(request.user):
            raise role_refusal(request.user, EDIT_STRATEGY, "copy text-completion templates")
        copy = template_services.text_template_copy(user=request.user, source=source)
    except CodedError as failure:
        return render(request, "preview/error.html", {"error": presenters.error_context(failure)},
                      status=failure.status)
    session = request.POST.get("session")
    return redirect(reverse("preview:text-template-edit", args=[copy.pk]) + (f"?session={session}" if session else ""))
