"""Every write to sessions, their history and golden snapshots: keyword-only functions, one transaction each.

Refusals (`ServiceError`, the engine's `AssemblyError`) are raised before anything is written or roll the
transaction back, so a refused apply leaves the stored selection exactly as it was.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from pydantic import ValidationError

from assembly.api import require_available
from assembly.errors import AssemblyError
from assembly.reading import ImportInvalid, guarded
from assembly.request import HostSettings
from assembly.sillytavern.chat import import_chat
from assembly.sillytavern.macro_variables import parse_macro_variables
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.text_templates import read_text_templates
from assembly.sillytavern.worldinfo_timed import parse_world_state
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from preview_app.previews import (
    GENERATIONS_KEY,
    generations_so_far,
    next_message_id,
    session_request,
    strategy_document,
)
from strategies_app.access import revision_for_read
from strategies_app.models import (
    Character,
    Persona,
    Preset,
    RegexScript,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
)
from studio.engine_runs import assemble
from studio.errors import ServiceError, invalid
from studio.input_boundary import lines_refused, refuse_unsafe
from studio.limits import check_chat_lines, check_event_count

EVENT_ROLES = ("system", "user", "assistant", "tool")
UNSET: Any = object()


def host_settings(value: Any) -> dict[str, Any]:
    """Validated host settings (engine.md §1 `host`) as plain JSON; a bad field is a 400 naming it."""
    if not isinstance(value, dict):
        raise invalid("host", "an object of host settings")
    try:
        return HostSettings.model_validate(value).model_dump(mode="json")
    except ValidationError as error:
        first = error.errors()[0]
        path = ".".join(["host", *(str(part) for part in first["loc"])])
        raise ServiceError("INPUT_INVALID", f"{path}: {first['msg']}", detail={"path": path}) from None


def author_note_settings(value: Any) -> dict[str, Any] | None:
    """A validated author's note (engine.md §1 `resources.author_note`) as plain JSON; None or blank content = none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid("author_note", "an author's note object or null")
    note = _read_resource("author_note", value)
    return note.model_dump(mode="json") if note is not None and note.content.strip() else None


def extension_prompt_settings(value: Any) -> list[dict[str, Any]]:
    """Validated extension prompts (engine.md §1 `resources.extension_prompts`) as a plain JSON list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid("extension_prompts", "a list of extension prompts")
    return [prompt.model_dump(mode="json") for prompt in _read_resource("extension_prompts", value)]


def _read_resource(field: str, value: Any) -> Any:
    """One session resource read by the engine's own importer, so the session stores only what the engine accepts;
    a refusal names the field's path."""
    try:
        return getattr(normalize_resources({field: value}), field)
    except ImportInvalid as error:
        raise ServiceError("INPUT_INVALID", error.message, detail={"path": error.path or field}) from None


WORLD_INFO_ACTIVATIONS = ("book", "keywords", "all")
MAX_CHANCE_SEED = 2**53 - 1  # the engine's bound (`generation.seed`: a number JavaScript holds exactly)


def new_chance_seed(other_than: int | None = None) -> int:
    """A random seed for a chat's world-info chance (1 .. MAX_CHANCE_SEED), never `other_than`."""
    while True:
        seed = secrets.randbelow(MAX_CHANCE_SEED) + 1
        if seed != other_than:
            return seed


def _check_activation(value: Any) -> str:
    if value not in WORLD_INFO_ACTIVATIONS:
        raise invalid("world_info_activation", "one of " + ", ".join(WORLD_INFO_ACTIVATIONS))
    return value


def _check_flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(field, "true or false")
    return value


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise invalid("name", "a non-blank name of at most 200 characters")
    return name.strip()


def _check_text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise invalid(field, "a string")
    return value


MACRO_ENGINES = ("legacy", "v2")
MAX_MACRO_VARIABLES = 1000  # per scope: far beyond what a chat's macros set, and a bound on what a request carries


def _check_macro_engine(value: Any) -> str:
    if value not in MACRO_ENGINES:
        raise invalid("macro_engine", "legacy or v2 (Macros 2.0)")
    return value


def macro_variables_checked(value: Any, field: str = "macro_variables") -> dict[str, dict[str, Any]]:
    """The session's macro variables as the engine reads them (`{"local": {...}, "global": {...}}`, each an object
    of JSON values with non-empty names); a refusal names the field (`macro_variables.local.hp`)."""
    refuse_unsafe(value, field)
    try:
        checked = parse_macro_variables(value, field)
    except ValueError as error:
        path, _sep, expected = str(error).partition(": ")
        raise ServiceError("INPUT_INVALID", str(error), detail={"path": path, "expected": expected}) from None
    for scope, values in checked.items():
        if len(values) > MAX_MACRO_VARIABLES:
            raise invalid(f"{field}.{scope}", f"at most {MAX_MACRO_VARIABLES} variables")
    return checked


def _with_chat_variables(chat_file: Any, variables: dict[str, Any]) -> dict[str, Any]:
    """`chat_file` with the chat's variables in its metadata, where SillyTavern keeps them (`chat_metadata.
    variables`); no variables and none there before leaves the metadata as it was (an export stays as imported).
    A variable the file had with an empty name (no macro can name it, so it is never shown or sent) stays."""
    kept = dict(chat_file) if isinstance(chat_file, dict) else {}
    metadata = dict(kept.get("metadata")) if isinstance(kept.get("metadata"), dict) else {}
    if not variables and "variables" not in metadata:
        return kept
    before = metadata.get("variables") if isinstance(metadata.get("variables"), dict) else {}
    kept["metadata"] = {**metadata, "variables": {**{k: v for k, v in before.items() if not k}, **variables}}
    return kept


def _set_macro_variables(session: Session, value: Any) -> None:
    checked = macro_variables_checked(value)
    session.chat_file = _with_chat_variables(session.chat_file, checked["local"])
    session.global_variables = checked["global"]


CLOCK_EXPECTED = "a date and time such as 2026-12-06T15:05 (an offset such as +08:00 may follow; none: UTC)"


def clock_checked(value: Any, field: str = "clock") -> str:
    """The moment a session's time macros read, as stored and sent (`generation.now`): ISO 8601 with its offset
    (none given: UTC); blank or None is not set (the macros stay as written)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if not isinstance(value, str) or len(value) > 40:
        raise invalid(field, CLOCK_EXPECTED)
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    except ValueError:
        raise invalid(field, CLOCK_EXPECTED) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if (moment.utcoffset() or timedelta()).total_seconds() % 60:
        raise invalid(field, CLOCK_EXPECTED)  # an offset in seconds: no request reads one
    return moment.isoformat()


# How each session field a caller gives is checked (a refusal names the field); resources are rows already read.
_FIELD_CHECKS: dict[str, Any] = {
    "name": _check_name, "host": host_settings, "current_input": lambda value: _check_text(value, "current_input"),
    "author_note": author_note_settings, "extension_prompts": extension_prompt_settings,
    "world_info_activation": _check_activation, "card_lore": lambda value: _check_flag(value, "card_lore"),
    "macro_engine": _check_macro_engine, "clock": clock_checked,
}


@transaction.atomic
def session_create(*, user, name: str, preset: Preset | None = None, character: Character | None = None,
                   persona: Persona | None = None, world_books: Iterable[WorldBook] = (),
                   host: dict[str, Any] | None = None, current_input: str = "",
                   author_note: dict[str, Any] | None = None, extension_prompts: list[dict[str, Any]] | None = None,
                   world_info_activation: str = "book", card_lore: bool = False, chat_lore: WorldBook | None = None,
                   regex_scripts: Iterable[RegexScript] = (), greeting: bool | int = False,
                   strategy: Strategy | None = None, macro_engine: str = "legacy",
                   macro_variables: dict[str, Any] | None = None, clock: str = "") -> Session:
    """`greeting`: start the history with one of the character's greetings, as SillyTavern starts a new chat (true:
    its first message; a number: that greeting, 0 the first message and n alternate greeting n). `strategy`: apply
    its latest revision (a host that cannot run it refuses with 409 and nothing is stored)."""
    if isinstance(greeting, bool):
        index = 0 if greeting else None
    elif isinstance(greeting, int):
        index = greeting
    else:
        raise invalid("greeting", "true, false or the number of one of the card's greetings")
    if index is not None:
        _check_greeting(card_greetings(character), index)
    variables = macro_variables_checked(macro_variables)
    session = Session.objects.create(
        name=_check_name(name), owner=user, preset=preset, character=character, persona=persona,
        host=host_settings(host if host is not None else {}), current_input=_check_text(current_input, "input"),
        author_note=author_note_settings(author_note), extension_prompts=extension_prompt_settings(extension_prompts),
        world_info_activation=_check_activation(world_info_activation), card_lore=_check_flag(card_lore, "card_lore"),
        chat_lore=chat_lore, chance_seed=new_chance_seed(), macro_engine=_check_macro_engine(macro_engine),
        chat_file=_with_chat_variables({}, variables["local"]), global_variables=variables["global"],
        clock=clock_checked(clock))
    session.world_books.set(list(world_books))
    session.regex_scripts.set(list(regex_scripts))
    if index is not None:
        _greeting_event(session, character, index)
    if strategy is not None:
        session = strategy_apply(session=session, strategy=strategy)
    return session


_COPIED_FIELDS = ("preset", "character", "persona", "host", "current_input", "author_note", "extension_prompts",
                  "world_info_activation", "card_lore", "chat_lore", "applied_strategy", "applied_revision", "applied_document", "chat_file",
                  "chance_seed", "completion", "instruct_template", "context_template", "sysprompt_template",
                  "instruct_enabled", "text_settings", "macro_engine", "global_variables", "clock")


@transaction.atomic
def session_copy(*, session: Session, user) -> Session:
    """A new session of `user` with the same resources, settings, history and applied strategy, to try a variation
    without touching the original; golden snapshots stay with the original."""
    source = Session.objects.get(pk=session.pk)
    copy = Session.objects.create(name=_check_name(f"{source.name} (copy)"[:200]), owner=user,
                                  **{field: getattr(source, field) for field in _COPIED_FIELDS})
    copy.world_books.set(source.world_books.all())
    copy.regex_scripts.set(source.regex_scripts.all())
    SessionEvent.objects.bulk_create(
        SessionEvent(session=copy, seq=e.seq, message_id=e.message_id, role=e.role, content=e.content, name=e.name,
                     source=e.source, tool_calls=e.tool_calls, tool_call_id=e.tool_call_id)
        for e in source.events.order_by("seq"))
    return copy


@transaction.atomic
def session_delete(*, session: Session) -> None:
    """Delete a session and its history. One with golden snapshots is refused: the goldens are QA's record, deleted
    on purpose by an admin (`golden_delete`) or not at all."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    goldens = locked.goldens.count()
    if goldens:
        raise ServiceError("SESSION_HAS_GOLDENS", f"session {locked.pk}: it has {goldens} golden snapshot(s), QA's "
                           "record of its answers; only an admin can delete them (on the Goldens page), and then the "
                           "session", status=409, detail={"goldens": goldens})
    locked.delete()


@transaction.atomic
def golden_delete(*, golden: GoldenSnapshot) -> None:
    """Delete one golden snapshot; its session, strategy and revision stay. One deleted meanwhile is gone already."""
    GoldenSnapshot.objects.filter(pk=golden.pk).delete()


def card_greetings(character: Character | None) -> list[str]:
    """The card's greetings in SillyTavern's swipe order: its first message, then the alternate greetings."""
    if character is None:
        return []
    alternates = character.card_fields.get("alternate_greetings") or []
    return [character.first_mes, *(g for g in alternates if isinstance(g, str))]


def _check_greeting(greetings: list[str], index: Any) -> None:
    usable = [i for i, text in enumerate(greetings) if text.strip()]
    if not usable:
        raise invalid("greeting", "a session character whose card has a greeting")
    if isinstance(index, bool) or not isinstance(index, int) or index not in usable:
        raise invalid("greeting", "the number of one of the card's greetings: " + ", ".join(map(str, usable)))


def _greeting_event(session: Session, character: Character, index: int) -> SessionEvent:
    # stored as written: SillyTavern expands the macros of the chat's first message when it builds a request
    return SessionEvent.objects.create(
        session=session, seq=1, message_id=next_message_id(session, 1), role="assistant",
        content=card_greetings(character)[index], name=character.name,
        source={"kind": "greeting", "character": character.pk, "greeting": index})


@transaction.atomic
def session_greet(*, session: Session, index: Any) -> SessionEvent:
    """Start an empty history with one of the card's greetings (0: its first message; n: alternate greeting n), as
    a new SillyTavern chat starts."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    if locked.events.exists():
        raise ServiceError("SESSION_HISTORY_NOT_EMPTY", "history: a greeting starts an empty history, and this one "
                           "has messages", status=409, detail={"path": "history"})
    _check_greeting(card_greetings(locked.character), index)
    return _greeting_event(locked, locked.character, index)


@transaction.atomic
def session_update(*, session: Session, name: str = UNSET, preset: Preset | None = UNSET,
                   character: Character | None = UNSET, persona: Persona | None = UNSET,
                   world_books: Iterable[WorldBook] = UNSET, host: dict[str, Any] = UNSET,
                   current_input: str = UNSET, author_note: dict[str, Any] | None = UNSET,
                   extension_prompts: list[dict[str, Any]] | None = UNSET, world_info_activation: str = UNSET,
                   card_lore: bool = UNSET, chat_lore: WorldBook | None = UNSET,
                   regex_scripts: Iterable[RegexScript] = UNSET, macro_engine: str = UNSET,
                   macro_variables: dict[str, Any] = UNSET, clock: str | None = UNSET) -> Session:
    """Change the given fields only (UNSET leaves a field alone; None clears a resource). `macro_variables`
    (`{"local": {...}, "global": {...}}`) replaces both scopes: the chat's in its metadata, the global ones."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    given = {"name": name, "host": host, "current_input": current_input, "author_note": author_note,
             "extension_prompts": extension_prompts, "world_info_activation": world_info_activation,
             "card_lore": card_lore, "chat_lore": chat_lore, "preset": preset, "character": character,
             "persona": persona, "macro_engine": macro_engine, "clock": clock}
    for field, value in given.items():
        if value is not UNSET:
            check = _FIELD_CHECKS.get(field)
            setattr(locked, field, check(value) if check is not None else value)
    if macro_variables is not UNSET:
        _set_macro_variables(locked, macro_variables)
    locked.save()
    if world_books is not UNSET:
        locked.world_books.set(list(world_books))
    if regex_scripts is not UNSET:
        locked.regex_scripts.set(list(regex_scripts))
    return locked


def _next_seq(session: Session) -> int:
    return (session.events.aggregate(last=Max("seq"))["last"] or 0) + 1


def _event_fields(role: Any, content: Any, name: Any, tool_calls: Any, tool_call_id: Any) -> dict[str, Any]:
    if role not in EVENT_ROLES:
        raise invalid("role", "one of " + ", ".join(EVENT_ROLES))
    if tool_calls is not None and not (isinstance(tool_calls, list) and all(
            isinstance(call, dict) and isinstance(call.get("id"), str) for call in tool_calls)):
        raise invalid("tool_calls", "a list of objects with a string id")
    tool_call_id = _check_text(tool_call_id, "tool_call_id")
    if role == "tool" and not tool_call_id:  # the engine refuses a tool result that answers no call
        raise invalid("tool_call_id", "the id of the tool call this result answers (a tool message needs one)")
    return {"role": role, "content": _check_text(content, "content"), "name": _check_text(name, "name"),
            "tool_calls": tool_calls, "tool_call_id": tool_call_id}


@transaction.atomic
def event_append(*, session: Session, role: str, content: str, name: str = "", source: dict[str, Any] | None = None,
                 tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str = "") -> SessionEvent:
    """Append one message to the session's durable history (the history editor)."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    check_event_count(locked.events.count())
    refuse_unsafe({"content": content, "name": name, "source": source, "tool_calls": tool_calls}, "event")
    fields = _event_fields(role, content, name, tool_calls, tool_call_id)
    if source is not None and not isinstance(source, dict):
        raise invalid("source", "an object")
    seq = _next_seq(locked)
    return SessionEvent.objects.create(session=locked, seq=seq, message_id=next_message_id(locked, seq),
                                       source=source or {"kind": role}, **fields)


@transaction.atomic
def chat_import(*, session: Session, data: bytes | str, take_author_note: bool = False) -> tuple[list[SessionEvent], int]:
    """Append a SillyTavern chat file's messages to the history (hidden messages left out, as SillyTavern leaves them
    out of prompts) and, when asked, take its author's note; a session without chat lore binds the chat's world book
    when the studio has one of that name. Returns the new events and the number left out; a file the importer
    refuses stores nothing."""
    check_chat_lines(data)
    lines_refused(data, "file")  # every line through the input boundary, its header's metadata included
    log = import_chat(data)
    refuse_unsafe([[message.content, message.name, message.other_fields] for message in log.messages], "file")
    refuse_unsafe([log.header_fields, [line for _, line in log.hidden_lines]], "file")
    if isinstance(log.metadata_fields.get("timedWorldInfo"), dict):  # carried into this session's requests
        guarded(lambda: parse_world_state(log.metadata_fields["timedWorldInfo"],
                                          "line 1.chat_metadata.timedWorldInfo"))
    if log.metadata_fields.get("variables") is not None:  # the chat's macro variables, read by its requests
        _chat_file_variables(log.metadata_fields["variables"])
    check_event_count(session.events.count(), len(log.messages))
    if not log.messages:
        raise invalid("file", "a chat with at least one message a prompt can see")
    locked = Session.objects.select_for_update().get(pk=session.pk)
    first = _next_seq(locked)
    created = SessionEvent.objects.bulk_create(
        SessionEvent(session=locked, seq=seq, message_id=next_message_id(locked, seq), role=message.role,
                     content=message.content, name=message.name,
                     source={"kind": message.role, "imported": "sillytavern-chat", "line": message.other_fields})
        for seq, message in enumerate(log.messages, start=first))
    if take_author_note and log.author_note is not None:
        locked.author_note = log.author_note.model_dump(mode="json")
    if log.world_info and locked.chat_lore is None:
        locked.chat_lore = WorldBook.objects.filter(name=log.world_info).order_by("pk").first()
    # a hidden line goes back before the imported message it preceded (or at the end)
    hidden = [[created[i].message_id if i < len(created) else None, line] for i, line in log.hidden_lines]
    kept = locked.chat_file if isinstance(locked.chat_file, dict) else {}
    locked.chat_file = {"header": log.header_fields, "metadata": log.metadata_fields, "crlf": log.crlf,
                        "hidden": [*kept.get("hidden", []), *hidden],
                        **({GENERATIONS_KEY: kept[GENERATIONS_KEY]} if GENERATIONS_KEY in kept else {})}
    if locked.chance_seed is None:  # an imported chat rolls from a seed of its own from now on
        locked.chance_seed = new_chance_seed()
    locked.save(update_fields=["author_note", "chat_lore", "chat_file", "chance_seed", "updated_at"])
    return created, log.hidden


def _chat_file_variables(value: Any) -> None:
    """A chat file's `chat_metadata.variables`: an object of variable values (SillyTavern reads them by name), else
    the file is refused naming the field (nothing stored). A variable with an empty name is kept in the file but
    never sent (no macro can name it)."""
    if not isinstance(value, dict):
        raise ImportInvalid("line 1.chat_metadata.variables", "an object of variable values")
    if sum(1 for name in value if name) > MAX_MACRO_VARIABLES:
        raise ImportInvalid("line 1.chat_metadata.variables", f"at most {MAX_MACRO_VARIABLES} variables")


@transaction.atomic
def event_update(*, event: SessionEvent, role: str, content: str, name: str = "",
                 tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str = "") -> SessionEvent:
    fields = _event_fields(role, content, name, tool_calls, tool_call_id)
    SessionEvent.objects.filter(pk=event.pk).update(**fields)
    return SessionEvent.objects.get(pk=event.pk)


@transaction.atomic
def event_delete(*, event: SessionEvent) -> None:
    SessionEvent.objects.filter(pk=event.pk).delete()


@transaction.atomic
def strategy_apply(*, session: Session, strategy: Strategy | None, revision: str | None = None) -> Session:
    """Apply a revision (the latest when `revision` is None) by copying its document into the session; None turns
    assembly off. A strategy the session's host cannot run is a 409 (REQUEST_ASSEMBLY_CORE_REQUIRED or
    ASSEMBLY_NATIVE_UNSUPPORTED) and the stored selection stays as it was."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    if strategy is None:
        locked.applied_strategy, locked.applied_revision, locked.applied_document = None, None, None
    else:
        chosen = revision_for_read(strategy, revision)
        require_available(chosen.document, HostSettings.model_validate(locked.host))
        locked.applied_strategy, locked.applied_revision = strategy, chosen
        locked.applied_document = chosen.document
    locked.save(update_fields=["applied_strategy", "applied_revision", "applied_document", "updated_at"])
    return locked


# Committing a turn and approving a golden run the engine. The run happens before any transaction (on SQLite a write
# transaction holds the database's one write lock for all workers); the write after it is short and checks that the
# session still makes the request the engine saw, else it is a 409 and nothing is written.


def _session_moved(session: Session) -> ServiceError:
    return ServiceError("SESSION_CHANGED", f"session {session.pk} changed while its request was being assembled; "
                        "reload it and try again", status=409, detail={"id": str(session.pk)})


@dataclass(frozen=True)
class TurnPlan:
    """What sending a session's current request appends, computed before any write: the durable events, the engine
    request they came from (None with assembly off), and the timed world-info state after it (None without)."""

    events: list[dict[str, Any]]
    request: dict[str, Any] | None
    timed_world_info: dict[str, Any] | None = None
    macro_variables: dict[str, dict[str, Any]] | None = None  # the variables as the generation's macros left them


def _turn_plan(session: Session) -> TurnPlan:
    if session.applied_document is None:
        events = ([{"role": "user", "content": session.current_input, "source": {"kind": "user"}}]
                  if session.current_input else [])
        return TurnPlan(events, None)
    request = session_request(session, strategy_document(session.applied_strategy, session.applied_document))
    result = assemble(request)
    state = result.world_info.world_state if result.world_info is not None else None
    variables = result.macro_variables.after if result.macro_variables is not None else None
    return TurnPlan([e.model_dump() for e in result.durable_events], request,
                    state.model_dump(mode="json") if state is not None else None, variables)


def _plan_still_holds(locked: Session, seen: Session, request: dict[str, Any] | None) -> bool:
    if locked.applied_document != seen.applied_document or locked.current_input != seen.current_input:
        return False
    if request is None:
        return True
    return session_request(locked, strategy_document(locked.applied_strategy, locked.applied_document)) == request


def turn_commit(*, session: Session, reply: str, expected_seq: int | None = None) -> list[SessionEvent]:
    """Step the session forward: append what sending the current request records (its durable events; with
    assembly off, the input as a user message) and then the typed assistant reply, and clear the input.
    `expected_seq` (the last event the caller saw) turns a concurrent commit into a 409 instead of a double turn;
    a session changed while the engine ran is a 409 too."""
    reply = _check_text(reply, "reply")
    seen = Session.objects.get(pk=session.pk)
    if not seen.current_input and not reply:
        raise invalid("reply", "a reply, or a session with a current input to send")
    plan = _turn_plan(seen)
    with transaction.atomic():
        return _turn_write(seen=seen, plan=plan, reply=reply, expected_seq=expected_seq)


def _turn_write(*, seen: Session, plan: TurnPlan, reply: str, expected_seq: int | None) -> list[SessionEvent]:
    locked = Session.objects.select_for_update().get(pk=seen.pk)
    check_event_count(locked.events.count(), 2)
    last_seq = _next_seq(locked) - 1
    if expected_seq is not None and expected_seq != last_seq:
        raise ServiceError("SESSION_HISTORY_CONFLICT", f"expected_seq: the history ends at {last_seq}, not "
                           f"{expected_seq}; reload the session", status=409,
                           detail={"path": "expected_seq", "seq": last_seq})
    if not _plan_still_holds(locked, seen, plan.request):
        raise _session_moved(locked)
    events = [*plan.events, *([{"role": "assistant", "content": reply, "source": {"kind": "assistant"}}]
                              if reply else [])]
    used = set(locked.events.values_list("message_id", flat=True))
    created = []
    for seq, event in enumerate(events, start=last_seq + 1):
        message_id = event.get("id") or next_message_id(locked, seq)
        if message_id in used:  # an id the history already holds (same content recorded again): keep both
            message_id = f"{message_id}~{seq}"
        used.add(message_id)
        created.append(SessionEvent.objects.create(
            session=locked, seq=seq, message_id=message_id, role=event["role"], content=event["content"],
            name=event.get("name") or "", source=event.get("source") or {"kind": event["role"]},
            tool_calls=event.get("tool_calls"), tool_call_id=event.get("tool_call_id") or ""))
    locked.current_input = ""
    kept = locked.chat_file if isinstance(locked.chat_file, dict) else {}
    if plan.request is not None:  # one more generation: the next request's `generation.turn`
        kept = {**kept, GENERATIONS_KEY: generations_so_far(locked) + 1}
    if plan.timed_world_info is not None:  # kept as SillyTavern keeps it, in the chat's metadata
        metadata = kept.get("metadata") if isinstance(kept.get("metadata"), dict) else {}
        kept = {**kept, "metadata": {**metadata, "timedWorldInfo": plan.timed_world_info}}
    if plan.macro_variables is not None:  # kept as SillyTavern saves them: the chat's in its metadata
        kept = _with_chat_variables(kept, plan.macro_variables.get("local") or {})
        locked.global_variables = plan.macro_variables.get("global") or {}
    locked.chat_file = kept
    locked.save(update_fields=["current_input", "chat_file", "global_variables", "updated_at"])
    return created


def turn_send(*, session: Session, content: str, reply: str, expected_seq: int | None = None) -> list[SessionEvent]:
    """The session page's composer: `content` becomes the current input and the turn is committed with the typed
    `reply` (empty: only what sending the request records, the user message included), in one transaction (after
    the engine ran on the session with that input)."""
    seen = Session.objects.get(pk=session.pk)
    seen.current_input = _check_text(content, "input")
    if not seen.current_input and not reply:
        raise invalid("reply", "a reply, or a session with a current input to send")
    plan = _turn_plan(seen)
    with transaction.atomic():
        session_update(session=seen, current_input=seen.current_input)
        return _turn_write(seen=seen, plan=plan, reply=_check_text(reply, "reply"), expected_seq=expected_seq)


def _golden_run(session: Session, revision: StrategyRevision) -> tuple[Session, dict[str, Any], dict[str, Any]]:
    """(the session as read, its engine request with `revision`, the result JSON): the run, outside any transaction.
    A run the engine refuses cannot be approved: its error is raised."""
    seen = Session.objects.get(pk=session.pk)
    request = session_request(seen, strategy_document(revision.strategy, revision.document))
    return seen, request, assemble(request).model_dump(mode="json")


def _golden_write(*, seen: Session, request: dict[str, Any], result: dict[str, Any], revision: StrategyRevision,
                  user) -> GoldenSnapshot:
    locked = Session.objects.select_for_update().get(pk=seen.pk)
    if session_request(locked, request["strategy"]) != request:
        raise _session_moved(locked)
    golden, _ = GoldenSnapshot.objects.update_or_create(
        session=locked, revision=revision,
        defaults={"result": result, "approved_by": user, "approved_at": timezone.now()})
    return golden


def golden_approve(*, session: Session, revision: StrategyRevision, user) -> GoldenSnapshot:
    """Record the current result of `session` with `revision` as the golden one (replacing an earlier approval of
    the same pair). A run the engine refuses cannot be approved: its error is raised; a session changed while the
    engine ran is a 409."""
    seen, request, result = _golden_run(session, revision)
    with transaction.atomic():
        return _golden_write(seen=seen, request=request, result=result, revision=revision, user=user)


@transaction.atomic
def session_reroll(*, session: Session) -> Session:
    """Roll the chat's chance again: a new seed (never the one it had), so the world-info probability rolls and
    inclusion-group picks of this and later generations come out anew. No engine run here: what changed is read
    by the caller from a run before and one after."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    locked.chance_seed = new_chance_seed(other_than=locked.chance_seed)
    locked.save(update_fields=["chance_seed", "updated_at"])
    return locked


@transaction.atomic
def event_move(*, event: SessionEvent, offset: int) -> SessionEvent:
    """Move one history message `offset` places (-1: one up, +1: one down) by renumbering the session's events;
    a move past either end stops at it. Ids stay with their messages, so references (tool_call_id) keep working."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise invalid("offset", "an integer number of places (-1 up, +1 down)")
    Session.objects.select_for_update().get(pk=event.session_id)
    events = list(SessionEvent.objects.filter(session_id=event.session_id).order_by("seq"))
    index = next((i for i, e in enumerate(events) if e.pk == event.pk), None)
    if index is None:
        raise ServiceError("NOT_FOUND", f"event {event.seq} of session {event.session_id} does not exist",
                           status=404, detail={"id": str(event.seq)})
    target = min(max(index + offset, 0), len(events) - 1)
    if target == index:
        return events[index]
    moved = events.pop(index)
    events.insert(target, moved)
    seqs = sorted(e.seq for e in events)
    changed = [(e, seq) for e, seq in zip(events, seqs, strict=True) if e.seq != seq]
    # Two passes: park the changed rows above every used seq first, so the unique (session, seq) never clashes.
    parking = seqs[-1] + 1
    for number, (row, _) in enumerate(changed):
        SessionEvent.objects.filter(pk=row.pk).update(seq=parking + number)
    for row, seq in changed:
        SessionEvent.objects.filter(pk=row.pk).update(seq=seq)
    return SessionEvent.objects.get(pk=moved.pk)


def golden_pin(*, session: Session, revision: StrategyRevision, user) -> GoldenSnapshot:
    """Approve the current result of `session` with `revision` and drop the session's older goldens of the same
    strategy: a golden stands for "what this session sends with this strategy", so one per pair is kept."""
    seen, request, result = _golden_run(session, revision)
    with transaction.atomic():
        golden = _golden_write(seen=seen, request=request, result=result, revision=revision, user=user)
        GoldenSnapshot.objects.filter(session=session, revision__strategy_id=revision.strategy_id).exclude(
            pk=golden.pk).delete()
    return golden


# ---------------------------------------------------------------------------------------------- text completion

COMPLETIONS = ("chat", "text")
# the text settings a session keeps (text-completion.md resources.text_settings); instruct and the system prompt
# are switched by the session's own columns
TEXT_SETTING_KEYS = ("max_context", "amount_gen", "token_padding", "pin_examples", "strip_examples",
                     "collapse_newlines", "user_prompt_bias", "custom_stopping_strings", "prefer_character_prompt",
                     "prefer_character_jailbreak")


def _check_template(value: Any, kind: str, field: str) -> TextTemplate | None:
    if value is not None and (not isinstance(value, TextTemplate) or value.kind != kind):
        raise invalid(field, f"a {kind} template or none")
    return value


def text_settings_checked(value: Any) -> dict[str, Any]:
    """The session's text settings: only the known keys, each of SillyTavern's type (a refusal names it)."""
    if not isinstance(value, dict):
        raise invalid("text_settings", "an object")
    unknown = sorted(set(value) - set(TEXT_SETTING_KEYS))
    if unknown:
        raise invalid(f"text_settings.{unknown[0]}", "one of " + ", ".join(TEXT_SETTING_KEYS))
    try:
        read = read_text_templates({"text_settings": value}).settings
    except AssemblyError as error:
        raise ServiceError("INPUT_INVALID", error.message, detail=error.detail) from None
    if read["max_context"] <= read["amount_gen"] or read["amount_gen"] < 0:
        raise invalid("text_settings.max_context", "a context larger than the response length")
    return {key: read[key] for key in value}


@transaction.atomic
def session_text_update(*, session: Session, completion: str = UNSET, instruct_template: TextTemplate | None = UNSET,
                        context_template: TextTemplate | None = UNSET,
                        sysprompt_template: TextTemplate | None = UNSET, instruct_enabled: bool = UNSET,
                        text_settings: dict[str, Any] = UNSET) -> Session:
    """Switch a session between chat and text completion and choose its text templates and settings (UNSET leaves a
    field alone; None clears a template)."""
    locked = Session.objects.select_for_update().get(pk=session.pk)
    if completion is not UNSET:
        if completion not in COMPLETIONS:
            raise invalid("completion", "chat or text")
        locked.completion = completion
    for field, kind, value in (("instruct_template", "instruct", instruct_template),
                               ("context_template", "context", context_template),
                               ("sysprompt_template", "sysprompt", sysprompt_template)):
        if value is not UNSET:
            setattr(locked, field, _check_template(value, kind, field))
    if instruct_enabled is not UNSET:
        locked.instruct_enabled = _check_flag(instruct_enabled, "instruct_enabled")
    if text_settings is not UNSET:
        locked.text_settings = text_settings_checked(text_settings)
    locked.save()
    return locked
