"""A session as an engine request, and the reads built on it: the preview of a session with a strategy, and the
comparison of a golden snapshot with a fresh run.

The request is engine.md §1's AssemblyRequest: the session's resources as the engine's models, built from the rows
(`strategies_app.sillytavern.*_model`), its durable history, its current input as one user message, its host
settings, and a strategy document with the strategy's slug as `id`. The number of queries does not depend on the
length of the history.
"""

from __future__ import annotations

from typing import Any

from assembly import AssemblyResult
from assembly.core import SNAPSHOT_KIND
from assembly.host import CONTEXT_KIND, LOG_KIND, PRE_STEP_KIND, SYSTEM_KIND
from assembly.sillytavern.models import AuthorNote, ChatLog, ChatLogMessage, WorldBook, WorldBookEntry
from assembly.sillytavern.worldbook import import_worldbook
from preview_app.models import Session
from strategies_app import sillytavern
from strategies_app.access import revision_for_read, strategy_for_read
from strategies_app.models import Strategy
from strategies_app.text_templates import template_resource
from studio.engine_runs import assemble
from studio.errors import ServiceError

# chat_file's count of the generations committed so far (the next request's `generation.turn`): the studio's own,
# never written to an exported chat
GENERATIONS_KEY = "generations"
_EVENT_FIELDS = ("seq", "message_id", "role", "content", "name", "source", "tool_calls", "tool_call_id")


def _message(event: dict[str, Any]) -> dict[str, Any]:
    """A stored event (a `values()` row: no model instance per message, which dominated long previews) as a
    conversation message of the engine request."""
    message: dict[str, Any] = {"id": event["message_id"], "role": event["role"], "content": event["content"]}
    if event["name"]:
        message["name"] = event["name"]
    if event["source"]:
        message["source"] = event["source"]
    if event["tool_calls"] is not None:
        message["tool_calls"] = event["tool_calls"]
    if event["tool_call_id"]:
        message["tool_call_id"] = event["tool_call_id"]
    return message


def next_message_id(session: Session, seq: int) -> str:
    return f"s{session.pk}e{seq}"


def session_resources(session: Session) -> dict[str, Any]:
    """The session's resources for the engine request: the engine's models built from the rows (the engine takes a
    model as it is), the author's note and extension prompts as stored."""
    resources: dict[str, Any] = {}
    if session.preset is not None:
        resources["preset"] = sillytavern.preset_model(session.preset, session.preset.entries.all())
    if session.character is not None:
        resources["character"] = sillytavern.character_model(session.character)
    if session.persona is not None:
        resources["persona"] = sillytavern.persona_model(session.persona)
    if session.author_note:
        resources["author_note"] = session.author_note
    if session.extension_prompts:
        resources["extension_prompts"] = session.extension_prompts
    worldbook = _session_worldbook(session)
    if worldbook is not None:
        resources["worldbook"] = worldbook
        state = timed_world_info(session)
        if state is not None:  # sticky, cooldown and delay carried from the chat's earlier turns
            resources["world_state"] = state
    scripts = session.regex_scripts.all()  # in the model's order: the order SillyTavern runs its global scripts
    if scripts:
        resources["regex_scripts"] = tuple(sillytavern.regex_script_model(s) for s in scripts)
    # SillyTavern's Example Messages Behavior, which chat completion reads too (a text request sends all settings)
    examples = {key: True for key in ("pin_examples", "strip_examples") if (session.text_settings or {}).get(key)}
    if examples:
        resources["text_settings"] = examples
    return resources


def timed_world_info(session: Session) -> dict[str, Any] | None:
    """The chat's timed world-info effects as SillyTavern keeps them (`chat_metadata.timedWorldInfo`)."""
    metadata = (session.chat_file or {}).get("metadata") if isinstance(session.chat_file, dict) else None
    state = metadata.get("timedWorldInfo") if isinstance(metadata, dict) else None
    return state if isinstance(state, dict) else None


def generations_so_far(session: Session) -> int:
    """How many generations the session has committed (each turn that ran the engine, as the timed world-info
    state is stored): the 0-based index of the next one, SillyTavern's `generation.turn`."""
    kept = session.chat_file if isinstance(session.chat_file, dict) else {}
    count = kept.get(GENERATIONS_KEY)
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0


def chat_variables(session: Session) -> dict[str, Any]:
    """The chat's own macro variables as SillyTavern keeps them (`chat_metadata.variables`); one with an empty name
    (a chat file may hold one; no macro can name it) stays in the file and is left out here."""
    metadata = (session.chat_file or {}).get("metadata") if isinstance(session.chat_file, dict) else None
    variables = metadata.get("variables") if isinstance(metadata, dict) else None
    return {name: value for name, value in variables.items() if name} if isinstance(variables, dict) else {}


def session_variables(session: Session) -> dict[str, dict[str, Any]]:
    """The session's macro variables before its next generation: the chat's (local) and the global ones."""
    global_ = session.global_variables if isinstance(session.global_variables, dict) else {}
    return {"local": dict(chat_variables(session)), "global": dict(global_)}


def session_macro_fields(session: Session) -> dict[str, Any]:
    """The request's `macro_engine` and `macro_variables` the session decides, each only when it is not the
    engine's default (legacy; no variables), so a session that uses neither sends the request it always sent."""
    fields: dict[str, Any] = {}
    if session.macro_engine == "v2":
        fields["macro_engine"] = "v2"
    variables = session_variables(session)
    if variables["local"] or variables["global"]:
        fields["macro_variables"] = variables
    return fields


def session_generation(session: Session) -> dict[str, Any]:
    """The request's `generation` fields the session decides: the turn, the chat's chance seed when it has one
    (world-info probability rolls and inclusion-group picks drawn from seed and turn), and its clock when set."""
    fields: dict[str, Any] = {"turn": generations_so_far(session)}
    if session.chance_seed is not None:
        fields["seed"] = session.chance_seed
    if session.clock:  # the moment the time and date macros read; none set: they stay as written
        fields["now"] = session.clock
    return fields


def with_options(request: dict[str, Any], options: dict[str, Any] | None) -> dict[str, Any]:
    """`request` with the preview's options (generation type, tokenizer, budget, ...) set over it; the
    session's own generation fields (turn, seed) stay unless the options give them."""
    merged = {**request, **(options or {})}
    if isinstance((options or {}).get("generation"), dict) and isinstance(request.get("generation"), dict):
        merged["generation"] = {**request["generation"], **options["generation"]}
    return merged


def _card_lore(session: Session) -> tuple[WorldBook, set[str]] | None:
    """The card's embedded world book, and the names it goes by (its own, the card's linked world)."""
    if not session.card_lore or session.character is None:
        return None
    raw = session.character.card_fields.get("character_book")
    if not isinstance(raw, dict) or not raw.get("entries"):
        return None
    extensions = session.character.card_fields.get("extensions")
    world = extensions.get("world") if isinstance(extensions, dict) else None
    # a card's fields are kept as the file wrote them: a name that is not text names nothing
    return import_worldbook(raw), {name for name in (raw.get("name"), world) if isinstance(name, str) and name}


def _prefixed(book: WorldBook, prefix: str, lore: str | None) -> tuple[WorldBookEntry, ...]:
    """`book`'s entries with uids `<prefix>:<uid>` (so entries of several books never clash) and, when given, the
    lore they are (`chat`, `character`)."""
    return tuple(entry.model_copy(update={"uid": f"{prefix}:{entry.uid}", **({"lore": lore} if lore else {})})
                 for entry in book.entries)


def _session_worldbook(session: Session) -> WorldBook | None:
    """The session's chat lore, selected books and the card's lore as the one world book the engine reads. One
    selected book alone is sent as it is; otherwise uids are prefixed (`chat:`, `<book id>:`, `card:`) so entries
    never clash, the chat's entries are chat lore and the card's character lore (sillytavern.md §7.2), and the scan
    settings are the first selected book's. A book is loaded once: the chat's book is not also a selected one, and a
    card book whose name is already loaded is left out."""
    chat_book = session.chat_lore
    books = [book for book in session.world_books.prefetch_related("entries")
             if chat_book is None or book.pk != chat_book.pk]  # the chat's book is loaded once, as chat lore
    models = [(str(book.pk), sillytavern.worldbook_model(book, book.entries.all())) for book in books]
    card = _card_lore(session)
    loaded = {book.name for book in books} | ({chat_book.name} if chat_book is not None else set())
    if card is not None and loaded & card[1]:
        card = None
    if card is None and chat_book is None and len(models) == 1:
        merged = models[0][1]
    elif card is None and chat_book is None and not models:
        return None
    else:
        chat = sillytavern.worldbook_model(chat_book, chat_book.entries.all()) if chat_book is not None else None
        entries = (*(_prefixed(chat, "chat", "chat") if chat is not None else ()),
                   *(_prefixed(card[0], "card", "character") if card is not None else ()),
                   *(entry for prefix, book in models for entry in _prefixed(book, prefix, None)))
        settings = models[0][1] if models else chat if chat is not None else card[0]
        merged = settings.model_copy(update={"entries": entries})
    if session.world_info_activation != "book":
        merged = merged.model_copy(update={"activation": session.world_info_activation})
    return merged


def session_request(session: Session, strategy: str | dict[str, Any], *, chat: bool = False) -> dict[str, Any]:
    """The session's engine request with `strategy`; a text-completion session's is its text request (builtin-st
    and its templates) unless `chat` asks for its chat-completion request (what a strategy shapes)."""
    events = list(session.events.order_by("seq").values(*_EVENT_FIELDS))
    history = [_message(event) for event in events]
    next_seq = (events[-1]["seq"] if events else 0) + 1
    inputs = ([{"id": next_message_id(session, next_seq), "role": "user", "content": session.current_input}]
              if session.current_input else [])
    user_name = session.persona.name if session.persona is not None else "User"
    if session.completion == "text" and not chat:  # SillyTavern's text completion: builtin-st builds it
        return text_request(session, {"history": history, "input": inputs}, user_name)
    generation = session_generation(session)
    bias = (session.text_settings or {}).get("user_prompt_bias")
    if bias:  # SillyTavern's Start Reply With is one setting for both completions (a preview option wins)
        generation["start_reply_with"] = bias
    return {"strategy": strategy, "resources": session_resources(session),
            "conversation": {"history": history, "input": inputs}, "host": session.host,
            "names": {"user": user_name}, "generation": generation, **session_macro_fields(session)}


TEXT_STRATEGY = "builtin-st"
TEXT_TEMPLATE_FIELDS = {"instruct": "instruct_template", "context": "context_template",
                        "sysprompt": "sysprompt_template"}


def session_text_templates(session: Session, swap: dict[str, Any] | None = None) -> dict[str, Any]:
    """kind -> the session's template row of that kind (None when it has none); `swap` puts other rows (or field
    dicts, an edit not stored yet) in place of some, as a comparison of two templates does."""
    chosen = {kind: getattr(session, field) for kind, field in TEXT_TEMPLATE_FIELDS.items()}
    return {**chosen, **(swap or {})}


def text_request(session: Session, conversation: dict[str, Any], user_name: str, *,
                 swap: dict[str, Any] | None = None) -> dict[str, Any]:
    """The session as a text-completion request (text-completion.md): its card, persona, world info, author's note
    and regex scripts as for chat completion (no chat-completion preset), its instruct / context / system-prompt
    templates (`swap`: others in place of some), instruct on or off, its text settings and its macro engine and
    variables (as for chat completion)."""
    resources = {k: v for k, v in session_resources(session).items() if k != "preset"}
    templates = session_text_templates(session, swap)
    for kind, key in (("instruct", "instruct_template"), ("context", "context_template"),
                      ("sysprompt", "system_prompt")):
        chosen = templates.get(kind)
        if chosen is not None:
            fields = chosen if isinstance(chosen, dict) else chosen.fields
            resources[key] = template_resource(kind, fields)
    resources["text_settings"] = {**(session.text_settings or {}), "instruct_enabled": session.instruct_enabled,
                                  "sysprompt_enabled": templates.get("sysprompt") is not None}
    return {"api": "text", "strategy": TEXT_STRATEGY, "tokenizer": "st-estimate", "resources": resources,
            "conversation": conversation, "host": session.host, "names": {"user": user_name},
            "generation": session_generation(session), **session_macro_fields(session)}


HOST_RECORD_KINDS = frozenset({LOG_KIND, SYSTEM_KIND, CONTEXT_KIND, PRE_STEP_KIND, SNAPSHOT_KIND})


def host_records(request: dict[str, Any]) -> dict[str, str]:
    """Message id -> source kind of each host record in a request's history: the preview names them as what they
    are (a pre-step copy, a runtime-context snapshot, ...) rather than as the user's turns."""
    return {m["id"]: m["source"]["kind"] for m in request["conversation"]["history"]
            if (m.get("source") or {}).get("kind") in HOST_RECORD_KINDS}


def session_chat_log(session: Session) -> ChatLog:
    """The session as a SillyTavern chat: its user, assistant and system (narrator) messages in history order, and
    its author's note. Host records (system prompt records, runtime contexts, pre-step copies, snapshots, assembly
    logs) are the host's, not the user's, and tool messages have no place in a SillyTavern chat: both are left out,
    so that importing the file back gives the same chat."""
    events = [e for e in session.events.order_by("seq").values("message_id", "role", "content", "name", "source")
              if e["role"] in ("user", "assistant", "system")
              and (e["source"] or {}).get("kind") not in HOST_RECORD_KINDS]
    messages = [ChatLogMessage(role=e["role"], content=e["content"], name=e["name"],
                               other_fields=_written_line(e["source"])) for e in events]
    kept = session.chat_file if isinstance(session.chat_file, dict) else {}
    place = {e["message_id"]: index for index, e in enumerate(events)}
    hidden = sorted(((place.get(before, len(events)), line) for before, line in kept.get("hidden", [])),
                    key=lambda pair: pair[0])  # stable: lines before one message keep their order
    header = kept.get("header") if isinstance(kept.get("header"), dict) else {}
    return ChatLog(user_name=session.persona.name if session.persona is not None
                   else str(header.get("user_name") or "User"),
                   character_name=session.character.name if session.character is not None
                   else str(header.get("character_name") or ""),
                   messages=tuple(messages),
                   author_note=AuthorNote(**session.author_note) if session.author_note else None,
                   world_info=session.chat_lore.name if session.chat_lore is not None
                   else str((kept.get("metadata") or {}).get("world_info") or ""),
                   hidden_lines=tuple(hidden), header_fields=header,
                   metadata_fields=kept.get("metadata") or {}, crlf=bool(kept.get("crlf")))


def _written_line(source: Any) -> dict[str, Any]:
    """An imported message's line as the chat file wrote it (empty for a message typed in the studio)."""
    line = source.get("line") if isinstance(source, dict) else None
    return line if isinstance(line, dict) else {}


def strategy_document(strategy: Strategy, document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "id": strategy.slug}


def chosen_document(session: Session, strategy_slug: str | None, revision: str | None) -> dict[str, Any]:
    """The strategy a preview runs: `?strategy=&revision=` (no revision: the working draft), else the applied one."""
    if strategy_slug:
        strategy = strategy_for_read(strategy_slug)
        document = revision_for_read(strategy, revision).document if revision else strategy.draft
        return strategy_document(strategy, document)
    if revision:
        raise ServiceError("INPUT_INVALID", "revision: give strategy=<id> with it", detail={"path": "revision"})
    if session.applied_document is None:
        raise ServiceError("SESSION_ASSEMBLY_OFF", f"session {session.pk}: no strategy is applied (assembly is off); "
                           "choose one with ?strategy=<id>", status=409, detail={"path": "strategy"})
    return strategy_document(session.applied_strategy, session.applied_document)


def session_preview(session: Session, *, strategy: str | None = None, revision: str | None = None,
                    options: dict[str, Any] | None = None) -> AssemblyResult:
    """`options`: request fields beside the session's own (generation, tokenizer, budget). A text-completion
    session is built by builtin-st whatever strategy is named; of the options only the generation applies."""
    if session.completion == "text":
        chosen = {k: v for k, v in (options or {}).items() if k == "generation"}
        return assemble(with_options(session_request(session, TEXT_STRATEGY), chosen))
    return assemble(with_options(session_request(session, chosen_document(session, strategy, revision)), options))
