"""Pages of sessions, previews, comparisons and goldens (web.md screens 3, 4, 5, 7), and the home page.

Every page works without JavaScript: reads are GET pages, writes are POST forms (CSRF-checked by Django) that
redirect back on success and re-render the page with the refusal inline on failure, with the refusal's status
(400 bad input, 403 not allowed, 404, 409). Permissions are checked here, through the access helpers, before any
service is called; templates only hide controls a role could not use anyway.
"""

from __future__ import annotations

import json
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import Count
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assembly import AssemblyError, assemble, get_placement_capabilities
from assembly.reading import MAX_IMPORT_BYTES
from assembly.sillytavern.chat import export_chat
from preview_app import services
from preview_app.access import APPROVE_GOLDEN, EDIT_ANY_SESSION, EDIT_SESSION, session_for_edit, session_for_read
from preview_app.compare import align_messages
from preview_app.diagnostics_text import meaning
from preview_app.forms import (
    ApplyForm,
    CommitForm,
    EventForm,
    MoveForm,
    PinForm,
    PreviewOptionsForm,
    SessionCreateForm,
    SessionForm,
)
from preview_app.goldens import golden_statuses
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from preview_app.previews import session_chat_log, session_request
from preview_app.request_rows import render_rows
from preview_app.result_display import client_messages, display, excerpt
from preview_app.strategy_choice import APPLIED, choice_options, query_choice, resolve_choice
from strategies_app.access import require, revision_for_read, strategy_for_read
from strategies_app.api import REFUSALS, too_large
from strategies_app.errors import ServiceError, invalid, not_found
from strategies_app.models import Character, Persona, Preset, Strategy, StrategyRevision, WorldBook


def home(request):
    """Landing page after login: what the studio holds (strategies, sessions, resources) and the positions the
    engine supports."""
    return render(request, "home.html", {
        "positions": get_placement_capabilities(_FULL_LAYOUT)["positions"],
        "strategies": Strategy.objects.filter(visible=True).select_related("owner"),
        "sessions": Session.objects.select_related("applied_strategy", "owner"),
        "resources": [(_("Presets"), Preset.objects.all()), (_("Characters"), Character.objects.all()),
                      (_("Personas"), Persona.objects.all()), (_("World books"), WorldBook.objects.all())],
        "golden_count": GoldenSnapshot.objects.count(),
        "roles": sorted(request.user.groups.values_list("name", flat=True)),
        "can_create_session": request.user.has_perm(EDIT_SESSION),
    })


# A layout that declares every anchor, so the home page can list all placement positions the engine knows.
_FULL_LAYOUT = {
    "character": {"start": 0, "end": 1},
    "examples": {"start": 1, "end": 2},
    "conversation": {"message_indices": [], "empty_index": 2},
    "author_note": 2,
    "outlets": {"example": 2},
}


# ---------------------------------------------------------------------------------------------- plumbing


def _error_context(error) -> dict[str, Any]:
    data = error.to_json()
    return {**data, "meaning": meaning(data["code"])}


def _error_page(request, error):
    return render(request, "preview/error.html", {"error": _error_context(error)}, status=error.status)


def refusals_as_pages(view):
    """A refusal nobody handled inline (403, 404, ...) becomes an error page with its status."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except REFUSALS as error:
            return _error_page(request, error)

    return wrapped


def can_edit(user, session: Session) -> bool:
    return user.has_perm(EDIT_SESSION) and (session.owner_id == user.pk or user.has_perm(EDIT_ANY_SESSION))


def _event(session: Session, seq: int) -> SessionEvent:
    event = SessionEvent.objects.filter(session=session, seq=seq).first()
    if event is None:
        raise not_found(f"message of session {session.pk}", seq)
    return event


def _safe_next(request, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return fallback


# ---------------------------------------------------------------------------------------------- sessions


@require_GET
def sessions(request):
    rows = Session.objects.select_related("owner", "character", "applied_strategy", "applied_revision").annotate(
        message_count=Count("events", distinct=True), golden_count=Count("goldens", distinct=True))
    return render(request, "preview/sessions.html", {"sessions": rows,
                                                     "can_create": request.user.has_perm(EDIT_SESSION)})


@refusals_as_pages
@require_http_methods(["GET", "POST"])
def session_create(request):
    require(request.user, EDIT_SESSION, "create sessions")
    # a new session scans world books as SillyTavern does; the API keeps each book's own setting unless told
    form = SessionCreateForm(request.POST or None, initial={"native_available": True, "system_prompt_update": "head",
                                                            "world_info_activation": "keywords"})
    if request.method == "POST" and form.is_valid():
        session = services.session_create(user=request.user, **form.service_fields())
        messages.success(request, _("Session created."))
        return redirect("preview:session", pk=session.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "preview/session_create.html", {"form": form}, status=status)


def _apply_options(session: Session) -> list[tuple[str, list[tuple[str, str]]]]:
    """The apply picker: per strategy its latest saved revision and each revision (drafts cannot be applied)."""
    revisions: dict[int, list[StrategyRevision]] = {}
    for revision in StrategyRevision.objects.filter(strategy__visible=True).only(
            "id", "strategy_id", "revision", "note", "created_at"):
        revisions.setdefault(revision.strategy_id, []).append(revision)
    groups = [(_("Assembly"), [("off", _("off: send the conversation unchanged"))])]
    for strategy in Strategy.objects.filter(visible=True).only("id", "slug", "name"):
        saved = revisions.get(strategy.pk, [])
        if not saved:
            continue
        options = [(strategy.slug, _("%(strategy)s: latest saved revision (%(sha)s)") % {
            "strategy": strategy.slug, "sha": saved[0].revision[:12]})]
        options += [(f"{strategy.slug}@{r.revision}", f"{strategy.slug} @ {r.revision[:12]}" +
                     (f" · {r.note}" if r.note else "")) for r in saved]
        groups.append((f"{strategy.name} ({strategy.slug})", options))
    return groups


def _event_form(event: SessionEvent) -> EventForm:
    return EventForm(prefix=f"e{event.seq}", initial={
        "role": event.role, "content": event.content, "name": event.name, "tool_call_id": event.tool_call_id,
        "tool_calls": event.tool_calls})


def _event_rows(session: Session, events: list[SessionEvent], editable: bool, editing: str,
                edit_errors: dict[int, EventForm]) -> list[dict[str, Any]]:
    """Per history message: its edit form when it is being edited, and the URLs and accessible names of its
    buttons (built here once, not with a url and a translate tag per message in the template)."""
    if not editable:
        return [{"event": event, "seq": str(event.seq)} for event in events]
    base = reverse("preview:session", args=[session.pk])
    up, down, delete = _("Move message %(seq)s up"), _("Move message %(seq)s down"), _("Delete message %(seq)s")
    edit = _("Edit message %(seq)s")
    rows = []
    for event in events:
        show_form = event.seq in edit_errors or editing == str(event.seq)
        seq = {"seq": event.seq}
        rows.append({"event": event, "seq": str(event.seq), "form": (edit_errors.get(event.seq) or _event_form(event)) if show_form else None,
                     "move_url": f"{base}events/{event.seq}/move/", "delete_url": f"{base}events/{event.seq}/delete/",
                     "up_label": up % seq, "down_label": down % seq, "delete_label": delete % seq,
                     "edit_label": edit % seq})
    return rows


def _session_page(request, session: Session, *, status: int = 200, edit_errors=None, **overrides):
    """The session page. Only the message being edited (`?edit=<seq>`, or the one whose edit was refused) carries
    its form, so a long history stays a light page."""
    editable = can_edit(request.user, session)
    events = list(session.events.order_by("seq"))
    edit_errors = edit_errors or {}
    editing = request.GET.get("edit", "")
    context = {
        "session": session, "events": events, "editable": editable,
        "event_rows": _event_rows(session, events, editable, editing, edit_errors),
        "world_books": list(session.world_books.all()),
        "last_seq": events[-1].seq if events else 0,
        "goldens": session.goldens.select_related("revision__strategy"),
        "settings_form": SessionForm(initial=SessionForm.initial_for(session)) if editable else None,
        "event_form": EventForm(prefix="new", initial={"role": "user"}) if editable else None,
        "apply_options": _apply_options(session) if editable else [],
        "applied_value": (session.applied_strategy.slug + "@" + session.applied_revision.revision
                          if session.applied_revision else "off"),
        "commit_form": CommitForm() if editable else None,
        "host_json": json.dumps(session.host, indent=2, ensure_ascii=False),
        "greetings": ([(i, excerpt(text)) for i, text in enumerate(services.card_greetings(session.character))
                       if text.strip()] if editable and not events else []),
    }
    context.update(overrides)
    return render(request, "preview/session.html", context, status=status)


@refusals_as_pages
@require_GET
def session_detail(request, pk):
    return _session_page(request, session_for_read(pk))


@refusals_as_pages
@require_POST
def session_edit(request, pk):
    session = session_for_edit(request.user, pk)
    form = SessionForm(request.POST)
    if not form.is_valid():
        return _session_page(request, session, status=400, settings_form=form, open_settings=True)
    services.session_update(session=session, **form.service_fields())
    messages.success(request, _("Session settings saved."))
    return redirect("preview:session", pk=session.pk)


@refusals_as_pages
@require_POST
def session_greet(request, pk):
    """Start an empty history with the greeting chosen from the card's first message and alternate greetings."""
    session = session_for_edit(request.user, pk)
    raw = request.POST.get("greeting", "")
    index = int(raw) if raw.isdigit() else raw
    try:
        event = services.session_greet(session=session, index=index)
    except ServiceError as error:
        return _session_page(request, session, status=error.status, greeting_error=error.message)
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{event.seq}")


@refusals_as_pages
@require_POST
def session_copy(request, pk):
    """A copy of the session (resources, settings, history, applied strategy) owned by whoever copies it."""
    require(request.user, EDIT_SESSION, "create sessions")
    copy = services.session_copy(session=session_for_read(pk), user=request.user)
    messages.success(request, _("This is a copy; the original is unchanged."))
    return redirect("preview:session", pk=copy.pk)


@refusals_as_pages
@require_POST
def session_delete(request, pk):
    session = session_for_edit(request.user, pk)
    try:
        services.session_delete(session=session)
    except ServiceError as error:
        return _session_page(request, session, status=error.status, delete_error=error.message)
    messages.success(request, _("Session “%(name)s” deleted.") % {"name": session.name})
    return redirect("preview:sessions")


@refusals_as_pages
@require_GET
def chat_export(request, pk):
    """The session as a SillyTavern chat file (.jsonl), to open in SillyTavern or import elsewhere."""
    session = session_for_read(pk)
    response = HttpResponse(export_chat(session_chat_log(session)), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="session-{session.pk}.jsonl"'
    return response


@refusals_as_pages
@require_POST
def chat_import(request, pk):
    """Append a SillyTavern chat file (.jsonl) to the history; a refused file stores nothing and says why."""
    session = session_for_edit(request.user, pk)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise invalid("file", "a SillyTavern chat file (.jsonl)")
        if upload.size > MAX_IMPORT_BYTES:  # refused before it is read into memory
            raise too_large("file", upload.size)
        created, hidden = services.chat_import(session=session, data=upload.read(),
                                               take_author_note=request.POST.get("author_note") == "1")
    except REFUSALS as error:
        return _session_page(request, session, status=error.status, import_error=error.message)
    messages.success(request, ngettext("Imported %(count)s message.", "Imported %(count)s messages.", len(created))
                     % {"count": len(created)} + (" " + ngettext(
                         "%(hidden)s hidden message was left out.", "%(hidden)s hidden messages were left out.",
                         hidden) % {"hidden": hidden} if hidden else ""))
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{created[0].seq}")


@refusals_as_pages
@require_POST
def event_add(request, pk):
    session = session_for_edit(request.user, pk)
    form = EventForm(request.POST, prefix="new")
    if not form.is_valid():
        return _session_page(request, session, status=400, event_form=form)
    event = services.event_append(session=session, **form.service_fields())
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{event.seq}")


@refusals_as_pages
@require_POST
def event_edit(request, pk, seq):
    session = session_for_edit(request.user, pk)
    event = _event(session, seq)
    form = EventForm(request.POST, prefix=f"e{event.seq}")
    if not form.is_valid():
        return _session_page(request, session, status=400, edit_errors={event.seq: form})
    services.event_update(event=event, **form.service_fields())
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{event.seq}")


@refusals_as_pages
@require_POST
def event_delete(request, pk, seq):
    session = session_for_edit(request.user, pk)
    services.event_delete(event=_event(session, seq))
    messages.success(request, _("Message %(seq)s deleted.") % {"seq": seq})
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + "#history")


@refusals_as_pages
@require_POST
def event_move(request, pk, seq):
    session = session_for_edit(request.user, pk)
    form = MoveForm(request.POST)
    if not form.is_valid():
        raise invalid("direction", "up or down")
    moved = services.event_move(event=_event(session, seq), offset=form.offset)
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{moved.seq}")


@refusals_as_pages
@require_POST
def session_apply(request, pk):
    session = session_for_edit(request.user, pk)
    form = ApplyForm(request.POST)
    try:
        if not form.is_valid():
            raise invalid("choice", "off, a strategy id or <strategy id>@<revision>")
        choice = form.cleaned_data["choice"].strip()
        if choice == "off":
            services.strategy_apply(session=session, strategy=None)
        else:
            slug, _at, sha = choice.partition("@")
            services.strategy_apply(session=session, strategy=strategy_for_read(slug), revision=sha or None)
    except REFUSALS as error:  # shown next to the picker; the stored selection is unchanged
        return _session_page(request, session, status=error.status, apply_error=_error_context(error),
                             applied_value=request.POST.get("choice", ""))
    messages.success(request, _("Strategy applied.") if choice != "off" else _("Assembly turned off."))
    return redirect("preview:session", pk=session.pk)


@refusals_as_pages
@require_POST
def turn_commit(request, pk):
    session = session_for_edit(request.user, pk)
    form = CommitForm(request.POST)
    try:
        if not form.is_valid():
            raise invalid("expected_seq", "the number of the last message you saw")
        created = services.turn_commit(session=session, reply=form.cleaned_data["reply"],
                                       expected_seq=form.cleaned_data["expected_seq"])
    except REFUSALS as error:  # shown next to the reply; nothing was appended
        return _session_page(request, session, status=error.status, commit_error=_error_context(error),
                             commit_form=form)
    messages.success(request, _("Turn committed: %(count)s message(s) appended to the history.")
                     % {"count": len(created)})
    return redirect(_safe_next(request, reverse("preview:session", args=[session.pk]) + "#history"))


# ---------------------------------------------------------------------------------------------- preview


def _preview_request(session: Session, choice, options: PreviewOptionsForm | None = None) -> dict[str, Any]:
    request = session_request(session, choice.document)
    if options is not None:
        request.update(options.request_fields())
    return request


def _canonical_preview_url(session: Session, choice, options: PreviewOptionsForm) -> str:
    query = {**choice.query, **options.query()}
    url = reverse("preview:preview", args=[session.pk])
    return url + ("?" + urlencode(query) if query else "")


@refusals_as_pages
@require_GET
def preview(request, pk):
    """The request a session sends with a strategy, read-only (web.md screen 3)."""
    session = session_for_read(pk)
    options = PreviewOptionsForm(request.GET or None)
    if "pick" in request.GET:  # the picker's GET form: turn it into the bookmarkable ?strategy=&revision= URL
        return redirect(_canonical_preview_url(session, resolve_choice(session, request.GET["pick"]), options))
    context: dict[str, Any] = {
        "session": session, "options": choice_options(session), "preview_options": options,
        "editable": can_edit(request.user, session), "can_pin": request.user.has_perm(APPROVE_GOLDEN),
        "commit_form": CommitForm(), "query": request.GET.urlencode(),
    }
    status = 200
    try:
        choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
        context["choice"] = choice
        if options.is_bound and not options.is_valid():
            status = 400
        result = assemble(_preview_request(session, choice, options)).model_dump(mode="json")
        context["view"] = display(result)
        context["rows_html"] = render_rows(context["view"].rows)
        context["last_seq"] = session.events.order_by("-seq").values_list("seq", flat=True).first() or 0
        if choice.revision is not None:
            context["golden"] = GoldenSnapshot.objects.filter(session=session, revision=choice.revision).first()
    except REFUSALS as error:
        context["error"] = _error_context(error)
        status = error.status
    return render(request, "preview/preview.html", context, status=status)


def _export(request, pk, shape: str):
    if shape not in ("result", "messages"):
        raise not_found("export", f"{shape}.json")
    session = session_for_read(pk)
    choice = query_choice(session, request.GET.get("strategy"), request.GET.get("revision"))
    options = PreviewOptionsForm(request.GET)
    if not options.is_valid():
        raise invalid(*options.first_error())
    result = assemble(_preview_request(session, choice, options)).model_dump(mode="json")
    body = result if shape == "result" else {"messages": client_messages(result)}
    revision = (choice.revision.revision[:12] if choice.revision else "draft")
    response = JsonResponse(body, json_dumps_params={"ensure_ascii": False, "indent": 2})
    name = f"session-{session.pk}-{choice.strategy.slug}-{revision}-{shape}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def preview_export(request, pk, shape):
    """`result.json`: the AssemblyResult; `messages.json`: {"messages": [...]} as a chat client sends them.
    Refusals answer in the API's error JSON."""
    try:
        return _export(request, pk, shape)
    except REFUSALS as error:
        return JsonResponse(error.to_json(), status=error.status, json_dumps_params={"ensure_ascii": False})


# ---------------------------------------------------------------------------------------------- compare


def _side(session: Session, spec: str | None, options: PreviewOptionsForm) -> dict[str, Any]:
    """One side of a comparison: its choice and result, or the refusal that stopped it."""
    try:
        choice = resolve_choice(session, spec)
    except REFUSALS as error:
        return {"spec": spec or "", "error": _error_context(error)}
    try:
        result = assemble(_preview_request(session, choice, options)).model_dump(mode="json")
    except REFUSALS as error:
        return {"spec": choice.spec, "choice": choice, "error": _error_context(error)}
    return {"spec": choice.spec, "choice": choice, "result": result}


@refusals_as_pages
@require_GET
def compare(request, pk):
    """Two strategies or revisions on one session, aligned message by message (web.md screen 4)."""
    session = session_for_read(pk)
    a_spec = request.GET.get("a") or (APPLIED if session.applied_document is not None else "")
    b_spec = request.GET.get("b") or ""
    options = PreviewOptionsForm(request.GET or None)
    context: dict[str, Any] = {"session": session, "options": choice_options(session), "a_spec": a_spec,
                               "b_spec": b_spec, "only_changes": request.GET.get("only") == "1",
                               "preview_options": options}
    status = 200
    if options.is_bound and not options.is_valid():
        status = 400  # the form shows which option is wrong; nothing is compared
    elif a_spec and b_spec:
        a, b = _side(session, a_spec, options), _side(session, b_spec, options)
        context.update(a=a, b=b)
        if "result" in a and "result" in b:
            context["alignment"] = align_messages(a["result"]["request"]["messages"],
                                                  b["result"]["request"]["messages"])
        else:
            status = (a.get("error") or b.get("error"))["status"]
    return render(request, "preview/compare.html", context, status=status)


# ---------------------------------------------------------------------------------------------- goldens


@refusals_as_pages
@require_GET
def goldens(request):
    """Every golden with matches / differs and, when it differs, what changed (web.md screen 5)."""
    rows = GoldenSnapshot.objects.select_related("session", "revision__strategy", "approved_by")
    session_filter = request.GET.get("session")
    if session_filter:
        rows = rows.filter(session=session_for_read(session_filter))
    statuses = golden_statuses(rows)
    return render(request, "preview/goldens.html", {
        "statuses": statuses, "session_filter": session_filter,
        "differing": sum(1 for s in statuses if s.status == "differs"),
        "can_pin": request.user.has_perm(APPROVE_GOLDEN),
    })


@refusals_as_pages
@require_POST
def golden_pin(request):
    """Approve the current result of a session with a revision (qa, admin); the page the form came from is `next`."""
    require(request.user, APPROVE_GOLDEN, "approve golden snapshots")
    form = PinForm(request.POST)
    if not form.is_valid():
        field = next(iter(form.errors))
        raise invalid(field, {"session": "a session id", "strategy": "a strategy id",
                              "revision": "a revision sha"}.get(field, "a value"))
    session = session_for_read(form.cleaned_data["session"])
    revision = revision_for_read(strategy_for_read(form.cleaned_data["strategy"]), form.cleaned_data["revision"])
    try:
        golden = services.golden_pin(session=session, revision=revision, user=request.user)
    except AssemblyError as error:
        raise ServiceError(error.code, _("This preview cannot be pinned: %(error)s") % {"error": error.message},
                           status=error.status) from None
    messages.success(request, _("Pinned as golden: session %(session)s with %(strategy)s @ %(revision)s.") % {
        "session": session.name, "strategy": revision.strategy.slug, "revision": revision.revision[:12]})
    return HttpResponseRedirect(reverse("preview:goldens") + f"#golden-{golden.pk}")
