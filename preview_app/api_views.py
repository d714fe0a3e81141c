"""JSON API for assembly, sessions and golden snapshots (web.md "HTTP API"): thin views over access checks,
the preview reads and the services."""

from __future__ import annotations

from django.db import transaction

from preview_app import services
from preview_app.access import (
    APPROVE_GOLDEN,
    DELETE_GOLDEN,
    EDIT_SESSION,
    event_for_read,
    golden_for_read,
    session_for_edit,
    session_for_read,
)
from preview_app.forms import PreviewOptionsForm
from preview_app.goldens import golden_status
from preview_app.models import GoldenSnapshot, Session
from preview_app.previews import generations_so_far, session_preview, session_variables
from preview_app.selectors import listed_goldens, sessions_with_applied
from strategies_app.access import require, resource_for_read, revision_for_read, strategy_for_read
from strategies_app.presenters import named
from studio.engine_runs import assemble
from studio.errors import ServiceError, invalid
from studio.http import api_route, json_body, json_object, ok
from studio.input_boundary import whole_number


@api_route("POST")
def assemble_request(request):
    """A stateless AssemblyRequest -> AssemblyResult (every logged-in role: it stores nothing)."""
    body = assemble(json_body(request)).model_dump(mode="json")
    return ok({**body, "strategy": named(body["strategy"])})


def _applied(session: Session) -> dict | None:
    if session.applied_document is None:
        return None
    return {"strategy": session.applied_strategy.slug, "revision": session.applied_revision.revision}


def _chance(session: Session) -> dict:
    """The session's world-info chance: the seed its rolls are drawn from (null: the preview's fixed rolls) and the
    turn of its next generation (the generations committed so far), the `generation.seed` and `generation.turn`
    its requests carry."""
    return {"seed": session.chance_seed, "turn": generations_so_far(session)}


def _resource_id(value):
    return None if value is None else value.pk


def _session_json(session: Session) -> dict:
    return {
        "id": session.pk, "name": session.name, "owner": session.owner.get_username() if session.owner else None,
        "preset": _resource_id(session.preset), "character": _resource_id(session.character),
        "persona": _resource_id(session.persona), "world_books": [b.pk for b in session.world_books.all()],
        "host": session.host, "current_input": session.current_input,
        "author_note": session.author_note, "extension_prompts": session.extension_prompts,
        "world_info_activation": session.world_info_activation, "card_lore": session.card_lore,
        "chat_lore": _resource_id(session.chat_lore),
        "regex_scripts": [r.pk for r in session.regex_scripts.all()],
        "applied": _applied(session), "chance": _chance(session),
        # SillyTavern's macros: the engine, and the variables before the next generation (the chat's and global)
        "macro_engine": session.macro_engine, "macro_variables": session_variables(session),
        "clock": session.clock or None,  # the moment the time macros read (generation.now); null: not set
        "completion": session.completion, "instruct_template": session.instruct_template_id,
        "context_template": session.context_template_id, "sysprompt_template": session.sysprompt_template_id,
        "instruct_enabled": session.instruct_enabled, "text_settings": session.text_settings,
        "history": [{"seq": e.seq, "id": e.message_id, "role": e.role, "content": e.content, "name": e.name,
                     "source": e.source, "tool_calls": e.tool_calls, "tool_call_id": e.tool_call_id}
                    for e in session.events.all()],
    }


def _resources_from(body: dict) -> dict:
    """The resource fields a session body names, as rows (a missing id is a 404 naming it)."""
    found: dict = {}
    for field in ("preset", "character", "persona"):
        if field in body:
            value = body[field]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise invalid(field, "a resource id (integer) or null")
            found[field] = None if value is None else resource_for_read(field, value)
    if "chat_lore" in body:
        value = body["chat_lore"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise invalid("chat_lore", "a world book id (integer) or null")
        found["chat_lore"] = None if value is None else resource_for_read("worldbook", value)
    if "world_books" in body:
        books = body["world_books"]
        if not isinstance(books, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in books):
            raise invalid("world_books", "a list of world book ids")
        found["world_books"] = [resource_for_read("worldbook", pk) for pk in books]
    if "regex_scripts" in body:
        scripts = body["regex_scripts"]
        if not isinstance(scripts, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in scripts):
            raise invalid("regex_scripts", "a list of regex script ids")
        found["regex_scripts"] = [resource_for_read("regex", pk) for pk in scripts]
    return found


TEXT_FIELDS = ("completion", "instruct_template", "context_template", "sysprompt_template", "instruct_enabled",
               "text_settings")


def _text_fields(body: dict) -> dict:
    """The text-completion fields a session body gives, templates read as rows (a missing id is a 404)."""
    found = {k: body[k] for k in ("completion", "instruct_enabled", "text_settings") if k in body}
    for field in ("instruct_template", "context_template", "sysprompt_template"):
        if field in body:
            value = body[field]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise invalid(field, "a template id (integer) or null")
            found[field] = None if value is None else resource_for_read("template", value)
    return found


@api_route("GET", "POST")
def sessions(request):
    if request.method == "POST":
        require(request.user, EDIT_SESSION, "create sessions")
        body = json_object(request)
        text = _text_fields(body)
        with transaction.atomic():  # a session created with its text-completion choice, or not at all
            session = services.session_create(user=request.user, name=body.get("name"), host=body.get("host"),
                                              current_input=body.get("current_input", ""),
                                              author_note=body.get("author_note"),
                                              extension_prompts=body.get("extension_prompts"),
                                              world_info_activation=body.get("world_info_activation", "book"),
                                              card_lore=body.get("card_lore", False),
                                              greeting=body.get("greeting", False),
                                              macro_engine=body.get("macro_engine", "legacy"),
                                              macro_variables=body.get("macro_variables"),
                                              clock=body.get("clock"),
                                              **_resources_from(body))
            if text:
                session = services.session_text_update(session=session, **text)
        return ok({"ok": True, "id": session.pk}, status=201)
    return ok([{"id": s.pk, "name": s.name, "applied": _applied(s), "chance": _chance(s)}
               for s in sessions_with_applied()])


@api_route("GET", "PATCH")
def session_detail(request, pk):
    if request.method == "PATCH":
        session = session_for_edit(request.user, pk)
        body = json_object(request)
        writable = ("name", "host", "current_input", "author_note", "extension_prompts", "world_info_activation",
                    "card_lore", "chat_lore", "preset", "character", "persona", "world_books", "regex_scripts",
                    "macro_engine", "macro_variables", "clock", *TEXT_FIELDS)
        unknown = set(body) - set(writable)
        if unknown:
            raise invalid(sorted(unknown)[0], "one of " + ", ".join(writable))
        fields = {k: body[k] for k in ("name", "host", "current_input", "author_note", "extension_prompts",
                                       "world_info_activation", "card_lore", "macro_engine", "macro_variables",
                                       "clock")
                  if k in body}
        text = _text_fields(body)
        with transaction.atomic():  # the text settings and the rest are one change: both or neither
            if text:
                services.session_text_update(session=session, **text)
            services.session_update(session=session, **fields, **_resources_from(body))
    return ok(_session_json(session_for_read(pk)))


@api_route("POST")
def session_events(request, pk):
    session = session_for_edit(request.user, pk)
    body = json_object(request)
    event = services.event_append(session=session, role=body.get("role"), content=body.get("content", ""),
                                  name=body.get("name", ""), source=body.get("source"),
                                  tool_calls=body.get("tool_calls"), tool_call_id=body.get("tool_call_id", ""))
    return ok({"ok": True, "seq": event.seq, "id": event.message_id}, status=201)


@api_route("PUT", "DELETE")
def session_event(request, pk, seq):
    session = session_for_edit(request.user, pk)
    event = event_for_read(session, seq, noun="event")
    if request.method == "DELETE":
        services.event_delete(event=event)
        return ok({"ok": True})
    body = json_object(request)
    event = services.event_update(event=event, role=body.get("role", event.role),
                                  content=body.get("content", event.content), name=body.get("name", event.name),
                                  tool_calls=body.get("tool_calls", event.tool_calls),
                                  tool_call_id=body.get("tool_call_id", event.tool_call_id))
    return ok({"ok": True, "seq": event.seq, "id": event.message_id})


def _with_texts(request) -> bool:
    raw = request.GET.get("texts", "1")
    if raw not in ("0", "1"):
        raise invalid("texts", "0 (leave the message texts out) or 1 (the default: keep them)")
    return raw == "1"


@api_route("GET")
def session_preview_api(request, pk):
    """The session's request with `?strategy=<id>&revision=<sha>` (no revision: the draft), else the applied one;
    `generation`, `quiet_prompt`, `start_reply_with`, `tokenizer`, `context_window`, `reserve_output` and
    `apply_budget` as on the preview page.

    `?texts=0` leaves the texts out of a long answer (quality.md, Performance): the whole AssemblyResult, same keys, but each
    `request.messages[].content` and each `nodes[].text` is null (roles, tokens, parts and every count stay).
    Any other value than 0 or 1 is a 400 naming `texts`."""
    session = session_for_read(pk)
    with_texts = _with_texts(request)
    options = PreviewOptionsForm(request.GET)
    if not options.is_valid():
        raise invalid(*options.first_error())
    result = session_preview(session, strategy=request.GET.get("strategy"), revision=request.GET.get("revision"),
                             options=options.request_fields())
    body = result.model_dump(mode="json")
    body["strategy"] = named(body["strategy"])
    if not with_texts:
        for message in body["request"]["messages"]:
            message["content"] = None
        for node in body["nodes"]:
            node["text"] = None
    return ok(body)


@api_route("PUT")
def session_selection(request, pk):
    """{"strategy": "<id>", "revision": "<sha or null for the latest>"} applies; {"strategy": null} turns off."""
    session = session_for_edit(request.user, pk)
    body = json_object(request)
    if "strategy" not in body:
        raise invalid("strategy", "a strategy id, or null to turn assembly off")
    slug, revision = body["strategy"], body.get("revision")
    if slug is not None and not isinstance(slug, str):
        raise invalid("strategy", "a strategy id (string) or null")
    if revision is not None and not isinstance(revision, str):
        raise invalid("revision", "a revision sha (string) or null for the latest")
    strategy = strategy_for_read(slug) if slug is not None else None
    session = services.strategy_apply(session=session, strategy=strategy, revision=revision)
    return ok({"ok": True, "applied": _applied(session)})


@api_route("POST")
def session_turns(request, pk):
    """{"reply": "<the assistant's reply>", "expected_seq": <last seq seen, optional>} -> the appended events."""
    session = session_for_edit(request.user, pk)
    body = json_object(request)
    expected = body.get("expected_seq")
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int)):
        raise invalid("expected_seq", "the integer seq of the last event seen, or null")
    created = services.turn_commit(session=session, reply=body.get("reply", ""), expected_seq=expected)
    return ok({"ok": True, "events": [{"seq": e.seq, "id": e.message_id, "role": e.role} for e in created]},
              status=201)


@api_route("POST")
def session_reroll(request, pk):
    """Roll the chat's chance again (the preview's "Roll again"): a new seed, never the one it had, for this and the
    later generations' world-info rolls. No body; answers the session's chance and the seed it replaced."""
    session = session_for_edit(request.user, pk)
    before = session.chance_seed
    session = services.session_reroll(session=session)
    return ok({"ok": True, "chance": _chance(session), "previous_seed": before})


# ---------------------------------------------------------------------------------------------- goldens


def _golden_json(golden: GoldenSnapshot, *, with_status: bool) -> dict:
    row = {"id": golden.pk, "session": golden.session_id, "strategy": golden.revision.strategy.slug,
           "revision": golden.revision.revision, "approved_at": golden.approved_at.isoformat(),
           "approved_by": golden.approved_by.get_username() if golden.approved_by else None}
    if with_status:
        status = golden_status(golden)  # the goldens page's check: the approved revision; a newer one apart
        row.update({"status": status.status, "diff": status.diff,
                    "checked_revision": status.checked_revision.revision,
                    "latest_revision": status.newer.revision if status.newer else None,
                    "latest_changes": status.latest_changes, "error": status.error})
    return row


@api_route("GET", "POST")
def goldens(request):
    """GET: every golden (`?session=<id>`: that session's) with its status (matches / differs) and diff; each is an
    engine run of its session. POST {"session", "strategy"?, "revision"?}: approve the session's current result with
    that revision (default: the applied one)."""
    if request.method == "GET":
        rows = listed_goldens()
        if request.GET.get("session") is not None:
            rows = rows.filter(session=session_for_read(whole_number(request.GET["session"], "session", low=1)))
        return ok([_golden_json(golden, with_status=True) for golden in rows])
    require(request.user, APPROVE_GOLDEN, "approve golden snapshots")
    body = json_object(request)
    session = session_for_read(whole_number(body.get("session"), "session", low=1))
    if body.get("strategy") is not None:
        revision = revision_for_read(strategy_for_read(body["strategy"]), body.get("revision"))
    elif session.applied_revision is not None:
        revision = session.applied_revision
    else:
        raise ServiceError("SESSION_ASSEMBLY_OFF", f"session {session.pk}: no strategy is applied; give strategy",
                           status=409, detail={"path": "strategy"})
    golden = services.golden_approve(session=session, revision=revision, user=request.user)
    return ok({"ok": True, **_golden_json(golden, with_status=False)}, status=201)


@api_route("GET", "DELETE")
def golden_detail(request, pk):
    """GET: one golden with its status and its approved result. DELETE (admin): delete it."""
    if request.method == "DELETE":
        require(request.user, DELETE_GOLDEN, "delete golden snapshots")
        services.golden_delete(golden=golden_for_read(pk))
        return ok({"ok": True})
    golden = golden_for_read(pk)
    return ok({**_golden_json(golden, with_status=True), "result": golden.result})
