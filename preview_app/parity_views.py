"""The parity check page (`/sessions/<id>/parity/`) and its JSON API (`POST /api/sessions/<id>/parity`): what
SillyTavern sent beside what the studio assembles with builtin-st (`parity`). Both are reads: nothing is stored;
the page offers the golden pin form (`preview:golden-pin`) to users who may approve goldens.

The page works without JavaScript (a POST form, multipart for the upload); with htmx the form swaps only the result
partial. Every logged-in user who can read the session may check it, as on the preview page."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from assembly.errors import CodedError
from preview_app.access import can_approve_goldens, can_edit_session, session_for_read
from preview_app.forms import ParityForm, PreviewOptionsForm
from preview_app.parity import Sent, read_sent, session_parity
from preview_app.presenters import error_context
from preview_app.text_views import text_parity_api
from preview_app.views import refusals_as_pages
from studio.errors import invalid
from studio.http import MAX_BODY_BYTES, api_route, json_object, ok, parse_json, too_large, uploaded_file

# What the API body may hold beside `sent`: the preview's turn options.
OPTION_FIELDS = ("generation", "quiet_prompt", "tokenizer")


def _pasted(text: str, field: str) -> Any:
    size = len(text.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise too_large(field, size)
    if not text.strip():
        raise invalid(field, "a pasted request body or messages array, or a file")
    return parse_json(text.encode("utf-8"), field)


def _posted_sent(request) -> Sent:
    """The page's POST: an uploaded file (capped at 5 MiB by `uploaded_file`) wins over the pasted text."""
    if request.content_type == "multipart/form-data" and request.FILES.get("file") is not None:
        raw, _name = uploaded_file(request, "file")
        return read_sent(parse_json(raw, "file"), path="file")
    return read_sent(_pasted(request.POST.get("sent", ""), "sent"))


def _options(data) -> PreviewOptionsForm:
    options = PreviewOptionsForm({key: data[key] for key in OPTION_FIELDS if key in data})
    if not options.is_valid():
        raise invalid(*options.first_error())
    return options


@refusals_as_pages
@require_http_methods(["GET", "POST"])
def parity(request, pk):
    """The form; on POST the comparison, or the refusal (400 / 413 / 415 for the input, the engine's status for an
    assembly it refuses) in place of the result."""
    session = session_for_read(pk)
    if session.completion == "text":  # a prompt string is compared on the text page's own check
        return redirect("preview:text-parity", pk=session.pk)
    context: dict[str, Any] = {"session": session, "can_pin": can_approve_goldens(request.user),
                               "can_edit_session": can_edit_session(request.user, session)}
    status = 200
    if request.method == "POST":
        try:
            options = PreviewOptionsForm(request.POST)
            context.update(form=ParityForm(request.POST), preview_options=options)
            if not options.is_valid():
                raise invalid(*options.first_error())
            report = session_parity(session=session, sent=_posted_sent(request), options=options.request_fields())
            context.update(report=report, pin="generation" not in options.request_fields())  # goldens pin normal ones
        except RequestDataTooBig:
            context.update(form=ParityForm(), preview_options=PreviewOptionsForm())
            context["error"], status = error_context(too_large("sent", None)), 413
        except CodedError as error:
            if error.status == 413:  # do not send five megabytes back into the text area
                context["form"] = ParityForm()
            context["error"], status = error_context(error), error.status
    else:
        context.update(form=ParityForm(), preview_options=PreviewOptionsForm())
    template = "preview/parity.html#result" if request.htmx and request.method == "POST" else "preview/parity.html"
    return render(request, template, context, status=status)


@api_route("POST")
def session_parity_api(request, pk):
    """{"sent": <a chat-completion request body, a messages array, or either as pasted text>, "generation"?,
    "quiet_prompt"?, "tokenizer"?} -> {"ok", "identical", "rows", "assembled", "sent", "notes", ...}."""
    session = session_for_read(pk)
    body = json_object(request)
    unknown = sorted(set(body) - {"sent", *OPTION_FIELDS})
    if unknown:
        raise invalid(unknown[0], "one of sent, " + ", ".join(OPTION_FIELDS))
    if "sent" not in body:
        raise invalid("sent", 'a chat-completion request body ({"messages": [...]}) or a messages array')
    if session.completion == "text":  # the prompt string sent, or the backend's body with "prompt"
        return ok(text_parity_api(session, body["sent"]))
    value = _pasted(body["sent"], "sent") if isinstance(body["sent"], str) else body["sent"]
    report = session_parity(session=session, sent=read_sent(value), options=_options(body).request_fields())
    return ok(report.to_json())
