"""Pages of sessions (web.md screen 7): the list, a session with its settings and history and their writes, its
chat file in and out, the strategy applied to it, and the "apply to sessions" panel of the strategy pages. They
follow the page rules written in `preview_app.views` (no JavaScript needed, refusals inline with their status,
permissions through `access` before a service runs)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assembly.errors import CodedError
from assembly.reading import MAX_IMPORT_BYTES
from assembly.sillytavern.chat import export_chat
from assembly.sillytavern.detect import detect_upload
from preview_app import presenters, services
from preview_app.access import (
    EDIT_SESSION,
    can_create_sessions,
    can_edit_session,
    editable_sessions,
    event_for_read,
    session_for_edit,
    session_for_read,
)
from preview_app.composer import commit_notice, composer_preview
from preview_app.forms import (
    ApplyForm,
    CommitForm,
    ComposerForm,
    EventForm,
    MoveForm,
    SessionCreateForm,
    SessionForm,
    StrategyApplyForm,
)
from preview_app.macro_variables import macro_engine_word
from preview_app.models import Session
from preview_app.previews import session_chat_log, session_variables
from preview_app.selectors import HISTORY_WINDOW, history_window, listed_sessions
from preview_app.strategy_sessions import apply_panel
from preview_app.views import refusals_as_pages
from strategies_app.access import require, strategy_for_read
from strategies_app.selectors import (
    strategy_names_by_slug,
    strategy_or_404,
    visible_revisions_by_strategy,
    visible_strategies,
)
from studio.errors import FormInvalid, ServiceError, invalid
from studio.http import too_large, valid_form
from studio.input_boundary import is_row_id, whole_number
from studio.limits import MAX_GREETINGS
from studio.paging import list_page, search_text
from studio.user_choices import LAST_SESSION, NEW_SESSION, user_choice, user_choice_remember
from studio.wording import known_meaning


def _safe_next(request, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return fallback


# ---------------------------------------------------------------------------------------------- sessions


@require_GET
def sessions(request):
    search = search_text(request.GET)
    return render(request, "preview/sessions.html", {"page": list_page(request, listed_sessions(search)),
                                                     "search": search, "can_create": can_create_sessions(request.user)})


@refusals_as_pages
@require_http_methods(["GET", "POST"])
def session_create(request):
    require(request.user, EDIT_SESSION, "create sessions")
    # a new session scans world books as SillyTavern does, on a host with the advanced backend for builtin-st;
    # the API keeps each book's own setting unless told
    form = SessionCreateForm(request.POST or None, initial={
        "native_available": True, "core_available": True, "system_prompt_update": "head",
        "world_info_activation": "keywords"}, remembered=user_choice(request.user, NEW_SESSION))
    if request.method == "POST" and form.is_valid():
        slug = form.strategy_slug
        try:
            session = services.session_create(user=request.user, **form.service_fields(),
                                              strategy=strategy_for_read(slug) if slug else None)
        except CodedError as error:  # the host cannot run the chosen strategy: nothing was stored
            form.add_error("strategy", error.message)
        else:
            user_choice_remember(user=request.user, values={NEW_SESSION: form.remembered_choice,
                                                            LAST_SESSION: session.pk})
            messages.success(request, _("Session created."))
            return redirect("preview:session", pk=session.pk)
    status = 400 if request.method == "POST" else 200
    # SillyTavern's words for SillyTavern work: with builtin-st (or a copy) chosen, dsh's host settings fold away
    return render(request, "preview/session_create.html", {"form": form, "sillytavern_work": form.starts_sillytavern},
                  status=status)


def _window_before(request, editing: str, edit_errors) -> int | None:
    """Which window of the history the page shows: `?before=<seq>` (the "show older" link), else the one holding the
    message being edited, else the newest."""
    raw = request.GET.get("before", "")
    if is_row_id(raw):
        return int(raw)
    target = next(iter(edit_errors), None) or (int(editing) if is_row_id(editing) else None)
    return target + HISTORY_WINDOW // 2 if target else None


def _session_page(request, session: Session, *, status: int = 200, edit_errors=None, **overrides):
    """The session page. It shows a window of the history (the newest messages; older ones one "show older" click
    away), never the whole of it, and only the message being edited (`?edit=<seq>`, or the one whose edit was
    refused) carries its form, so a long history stays a light page."""
    editable = can_edit_session(request.user, session)
    edit_errors = edit_errors or {}
    editing = request.GET.get("edit", "")
    window = history_window(session, before=_window_before(request, editing, edit_errors))
    sillytavern = (session.applied_document or {}).get("placement") == "st"
    logged = presenters.logged_strategy_slugs(window.events)
    rows = presenters.event_rows(session, window.events, editable, editing, edit_errors,
                                 first_seq=window.first_seq, last_seq=window.last_seq, sillytavern=sillytavern,
                                 strategy_names=strategy_names_by_slug(logged))
    if request.htmx and request.GET.get("before") and request.method == "GET":
        return render(request, "preview/session.html#history-rows", {
            "session": session, "window": window, "event_rows": rows, "editable": editable})
    context = {
        "session": session, "window": window, "editable": editable, "event_rows": rows,
        # why the page is read-only: the role, or another user's session (the role may edit its own)
        "read_only_reason": "" if editable else ("owner" if request.user.has_perm(EDIT_SESSION) else "role"),
        "owner_name": "" if editable or not session.owner_id else session.owner.get_username(),
        "world_books": list(session.world_books.all()),
        "regex_scripts": list(session.regex_scripts.all()),
        "last_seq": window.last_seq,
        "golden_count": session.goldens.count(),
        "settings_form": SessionForm(initial=SessionForm.initial_for(session)) if editable else None,
        "event_form": EventForm(prefix="new", initial={"role": "user"}) if editable else None,
        "apply_options": (presenters.apply_options(visible_strategies().only("id", "slug", "name"),
                                                   visible_revisions_by_strategy()) if editable else []),
        "applied_value": (session.applied_strategy.slug + "@" + session.applied_revision.revision
                          if session.applied_revision else "off"),
        "commit_form": CommitForm() if editable else None,
        "composer_form": ComposerForm(initial={"content": session.current_input}) if editable else None,
        "composer_preview": composer_preview(session) if request.GET.get("preview") else None,
        "host_json": json.dumps(session.host, indent=2, ensure_ascii=False),
        "macro_variables": session_variables(session),
        "clock_words": presenters.clock_words(session.clock),
        "macro_engine_word": macro_engine_word(session.macro_engine),
        # a SillyTavern strategy reads none of dsh's host settings: they fold away under their own name
        "sillytavern_work": sillytavern,
        # text completion: the templates build the prompt, no strategy does (the strategy card gives way)
        "text_templates": [(_("Instruct template"), session.instruct_template),
                           (_("Context template"), session.context_template),
                           (_("System prompt"), session.sysprompt_template)] if session.completion == "text" else [],
        "greetings": (presenters.greeting_choices(services.card_greetings(session.character))
                      if editable and not window.total else []),
    }
    context.update(overrides)
    return render(request, "preview/session.html", context, status=status)


@refusals_as_pages
@require_GET
def session_detail(request, pk):
    return _session_page(request, session_for_read(pk))


@refusals_as_pages
@require_http_methods(["GET", "POST"])
def session_edit(request, pk):
    """POST saves the settings; GET (a followed or bookmarked link) is the session page with its settings open."""
    if request.method == "GET":
        return _session_page(request, session_for_read(pk), open_settings=True)
    session = session_for_edit(request.user, pk)
    form = SessionForm(request.POST)
    if not form.is_valid():
        return _session_page(request, session, status=400, settings_form=form, open_settings=True)
    services.session_update(session=session, **form.service_fields())
    messages.success(request, _("Session settings saved."))
    return redirect("preview:session", pk=session.pk)


@refusals_as_pages
@require_POST
def session_say(request, pk):
    """The composer: `action=preview` (Enter) keeps the typed message as the current input and shows its request in
    place; `action=commit` commits the turn with the typed reply. With htmx the page swaps only the chat."""
    session = session_for_edit(request.user, pk)
    form = ComposerForm(request.POST)
    anchor = reverse("preview:session", args=[session.pk])
    try:
        if not form.is_valid():
            raise invalid("expected_seq", "the number of the last message you saw")
        data = form.cleaned_data
        if data["action"] == "commit":
            created = services.turn_send(session=session, content=data["content"], reply=data["reply"],
                                         expected_seq=data["expected_seq"])
            # tagged for the composer, which shows it inside the chat htmx swaps (the page's flash is outside it)
            messages.success(request, commit_notice(created, replied=bool(data["reply"])), extra_tags="composer")
            return HttpResponseRedirect(anchor + "#composer")
        services.session_update(session=session, current_input=data["content"])
    except CodedError as error:  # shown in the composer; nothing was stored
        return _session_page(request, session, status=error.status, composer_form=form,
                             composer_error=presenters.error_context(error))
    return HttpResponseRedirect(anchor + "?preview=1#composer")


@refusals_as_pages
@require_POST
def session_greet(request, pk):
    """Start an empty history with the greeting chosen from the card's first message and alternate greetings."""
    session = session_for_edit(request.user, pk)
    try:
        index = whole_number(request.POST.get("greeting", ""), "greeting", high=MAX_GREETINGS)
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


# in the engine's refusal shape, so that a page in another language says it in its words (studio.refusal_lines)
ANOTHER_KIND = ("a SillyTavern chat file (.jsonl); this is another kind of SillyTavern file, which an admin imports "
                "on the Import page")


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
        raw = upload.read()
        if detect_upload(raw) not in (None, "chat"):  # a card, preset, book ...: not "line 1" of a chat
            raise invalid("file", ANOTHER_KIND)
        created, hidden = services.chat_import(session=session, data=raw,
                                               take_author_note=request.POST.get("author_note") == "1")
    except CodedError as error:
        return _session_page(request, session, status=error.status, import_error=error.to_json())
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
    event = event_for_read(session, seq)
    form = EventForm(request.POST, prefix=f"e{event.seq}")
    if not form.is_valid():
        return _session_page(request, session, status=400, edit_errors={event.seq: form})
    services.event_update(event=event, **form.service_fields())
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + f"#event-{event.seq}")


@refusals_as_pages
@require_POST
def event_delete(request, pk, seq):
    session = session_for_edit(request.user, pk)
    services.event_delete(event=event_for_read(session, seq))
    messages.success(request, _("Message %(seq)s deleted.") % {"seq": seq})
    return HttpResponseRedirect(reverse("preview:session", args=[session.pk]) + "#history")


@refusals_as_pages
@require_POST
def event_move(request, pk, seq):
    session = session_for_edit(request.user, pk)
    form = MoveForm(request.POST)
    if not form.is_valid():
        raise invalid("direction", "up or down")
    moved = services.event_move(event=event_for_read(session, seq), offset=form.offset)
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
    except CodedError as error:  # shown next to the picker; the stored selection is unchanged
        return _session_page(request, session, status=error.status, apply_error=presenters.error_context(error),
                             applied_value=request.POST.get("choice", ""))
    messages.success(request, _("Strategy applied.") if choice != "off" else _("Assembly turned off."))
    return redirect(_safe_next(request, reverse("preview:session", args=[session.pk])))


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
    except CodedError as error:  # shown next to the reply; nothing was appended
        return _session_page(request, session, status=error.status, commit_error=presenters.error_context(error),
                             commit_form=form)
    messages.success(request, _("Turn committed: %(count)s message(s) appended to the history.")
                     % {"count": len(created)})
    return redirect(_safe_next(request, reverse("preview:session", args=[session.pk]) + "#history"))


# ---------------------------------------------------------------------------------------------- apply to sessions


@require_http_methods(["GET", "POST"])
def apply_to_sessions(request, slug):
    """The strategy pages' apply panel (`strategies:apply`). GET: the panel with the sessions whose name holds `q`.
    POST: apply a revision (default: the latest) to the chosen sessions, each in its own transaction; a session that
    cannot run it (409) keeps its selection and the refusal is shown beside it."""
    strategy = strategy_or_404(slug)
    search = search_text(request.GET if request.method == "GET" else request.POST)
    if request.method == "GET":
        context = apply_panel(request.user, strategy, search=search)
        if request.htmx:
            return render(request, "strategies/apply.html#apply", context)
        return render(request, "strategies/apply.html", {**context, "page": True})
    sessions = editable_sessions(request.user).only("pk", "name")  # the form's choices
    results: list[dict[str, Any]] = []
    status = 200
    try:
        require(request.user, EDIT_SESSION, "apply strategies to sessions")
        form = valid_form(StrategyApplyForm, request, sessions=sessions)
        revision = form.cleaned_data["revision"] or None
        for pk in form.cleaned_data["sessions"]:
            target = session_for_edit(request.user, pk)
            try:
                applied = services.strategy_apply(session=target, strategy=strategy, revision=revision)
                results.append({"session": target, "ok": True, "revision": applied.applied_revision.revision})
            except CodedError as error:
                status = 409 if error.status == 409 else max(status, error.status)
                results.append({"session": target, "ok": False, "error": error.to_json(),
                                "meaning": known_meaning(error.code)})
    except FormInvalid as error:
        status = 400
        results.append({"session": None, "ok": False, "error": error.to_json()})
    except CodedError as error:
        if error.status == 403:
            return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=403)
        status = error.status
        results.append({"session": None, "ok": False, "error": error.to_json()})
    context = apply_panel(request.user, strategy, results, search)
    if request.htmx:
        return render(request, "strategies/apply.html#apply", context, status=status)
    return render(request, "strategies/apply.html", {**context, "page": True}, status=status)
