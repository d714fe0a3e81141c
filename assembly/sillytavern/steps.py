"""SillyTavern 1.18 chat-completion parity: the steps of its prompt pipeline as pure functions.

A designer who picks `builtin-st` expects the exact message list SillyTavern would send (engine.md §5 "SillyTavern
parity"; sillytavern.md §1-§8). The ordinary engine places blocks by strategy rules; SillyTavern instead runs a fixed
pipeline with its own quirks: in-chat prompts bucketed by depth, order and role, example dialogues cut into
"[Example Chat]" blocks, a token budget that trims history newest-first and then examples, name handling, squashing.
Each step is one function here, over plain data, so the core backend can run them in SillyTavern's order and explain
every message it emits. Nothing here does I/O or mutates its inputs; macros are expanded by the caller beforehand
(SillyTavern expands card fields and prompt texts before these steps run), except `{{lastChatMessage}}` in the continue
nudge, which only this step knows.

Shapes (pydantic models, frozen; every function also accepts plain mappings, snake_case or camelCase keys)
------------------------------------------------------------------------------------------------------------

StMessage: one message of the assembled request.
    id        unique in one assembly: a chat message keeps its own id; the others use SillyTavern's identifiers:
              "newMainChat", "newChat <block>" (example header), "dialogueExamples <block>-<n>",
              "injection@<depth>/<order>/<role>", "continueNudge", "continuePrefill", "emptyUserMessageReplacement",
              "impersonate", "quietPrompt", "bias", "summary" / "authorsNote" / ... (main attachments)
    role      "system" | "user" | "assistant"
    content   the text sent
    name      the `name` field sent (example_user / example_assistant, completion names), or None
    speaker   for chat messages: who said it (the chat log's name). A mapping's `name` is read as the speaker when
              its kind is "chat" (a chat log entry's name is its author); for every other kind it is the sent name.
    kind      "chat" | "injection" | "prompt" | "new_chat" | "example_header" | "example" | "continue_message" |
              "continue_nudge" | "continue_prefill" | "send_if_empty" | "bias" | "control"
    sources   the ids of what the message holds, in text order: a chat message its own id, an injection every
              prompt / extension prompt merged into it, an example its card field or world book entry, a utility
              message the preset option it comes from ("new_chat_prompt", ...)
    depth, order   for injections: the bucket it was placed in (None otherwise)

StInjection: one in-chat prompt before merging (sillytavern.md §4.5).
    sources   one or more source ids (a world-info-at-depth group holds several entries); mapping spellings:
              source_id / sourceId / sources
    content   text; empty content is never injected (§11.10)
    role      system | user | assistant (or 0, 1, 2)
    depth     int, counted in chat messages from the end (0 = after the last one); None, a negative depth or one
              above 10000 is never injected, as in SillyTavern (§11.6, §11.7) -- `unplaced_injections` lists them
    order     injection_order (default 100); lower is higher up. Extension prompts always have 100.
    key       None for a Prompt Manager prompt; for an extension prompt its SillyTavern key ("2_floating_prompt",
              "DEPTH_PROMPT", "PERSONA_DESCRIPTION", "customDepthWI_<depth>_<role number>", ...). Extension prompts
              join the order-100 bucket after the Prompt Manager prompts, sorted by key in UTF-16 code-unit order
              (JavaScript's default sort, §11.19). Prompt Manager prompts keep their list (collection) order.

MainAttachment: an extension prompt attached to Main (§4.4): sources, key, content, role,
    position "start" (Before Main) | "end" (After Main).

StBudgetGroup: a mandatory piece for the budget: id, messages, reserve (bool). `reserve=True` marks SillyTavern's
    control prompts (impersonate, quiet) and the continue prefill: budgeted where they stand in the processing order,
    placed at the very end.

StBudgetResult (from `st_budget`): limit, remaining, groups (the mandatory groups kept, processing order),
    group_ids (every non-reserved group given), history (the chatHistory slot: new-chat separator, the history kept,
    the send_if_empty message), examples (the dialogueExamples slot), tail (continue collection, then control
    prompts), dropped (StDropped: id, part, reason, tokens, message_ids, sources), tokens (message id -> count),
    failure (StBudgetFailure or None: code ST_MANDATORY_PROMPTS_EXCEED_CONTEXT, message "Mandatory prompts exceed the
    context size.", item, needed, available).

AuthorNotePlacement, PersonaPlacement: see the functions that return them.

Pipeline: the order in which the engine calls these to reproduce SillyTavern (sillytavern.md §1, §4.2, §4.3)
-------------------------------------------------------------------------------------------------------------
 1. chat = history + input, chronological; `chat_for_generation` (swipe drops the last message).
 2. `apply_names_behavior(chat, preset.names_behavior, user_name=..., char_name=...)`.
 3. The collection: prompt_order entries that are enabled and `prompt_triggers(prompt, type)`, plus main with empty
    content when main is disabled; card overrides of main / jailbreak (the engine).
 4. Extension prompts: `persona_placement`, `author_note_placement` (takes the persona and the world info AN entries),
    `character_note_injection`, `world_info_depth_injection`, `extension_prompt_placement`.
 5. In-chat prompts: `prompt_injection` for every collection prompt with injection_position 1 (collection order,
    main included even when empty). Main attachments go to `attach_to_in_chat_main` when main is in-chat, else to
    `main_slot_messages` (output order) / `main_attachment_messages` (budget order).
 6. Continue with continue_prefill: `take_continue_prefill(chat)` BEFORE injection.
 7. `inject_in_chat(chat, prompt injections + extension injections)`.
 8. Continue without prefill: `take_continue_nudge(history, ...)` AFTER injection.
 9. `parse_dialogue_examples` (only when the preset carries SillyTavern's utility prompts) and `new_chat_message`.
10. `st_budget(...)` with the mandatory groups in processing order: worldInfoBefore, main, worldInfoAfter,
    charDescription, charPersonality, scenario, personaDescription, [reserve: controlPrompts], nsfw, jailbreak,
    the user's relative prompts (collection order), enhanceDefinitions, bias, main attachments,
    [reserve: continuePrefill].
11. `compose_chat_completion(slot ids in collection order + "bias", budget)`.
12. `squash_system_messages` when the preset asks for it (SillyTavern squashes only real generations, §11.14), then
    `drop_empty_messages` (SillyTavern's getChat).

Approximations and what is left out
-----------------------------------
- Tokens: SillyTavern picks a tokenizer per model; we count with a tiktoken encoding the caller names
  (`o200k_base` or `cl100k_base`; SillyTavern's Default preset model gpt-4-turbo uses cl100k_base). Per message:
  tokens(role) + tokens(content) + 3, plus tokens(name) + 1 with a name (§6); 0 for an empty unnamed message.
- Completion names are sanitized to OpenAI's name charset (letters, digits, "_", "-"; at most 64 characters).
- When a world book is loaded but gives the note no ANTop/ANBottom entries, SillyTavern still strips one leading and
  one trailing newline of the note text; we wrap (and strip) only when there are such entries.
- The character-specific author's note separator and the persona-around-note separator are "\\n".
- {{lastChatMessage}} in the continue nudge is the continued message as sent (with a "Name: " prefix under the
  content names behaviour); SillyTavern fills in the raw chat text.
- The chat given is the chat SillyTavern counts: hidden messages are left out by the caller.
- Not covered: group chats (group nudge, DEFAULT names in groups, new_group_chat_prompt), tool calls and tool schema
  budget, images, `continue_postfix`, Claude's `assistant_impersonation`, `wrap_in_quotes`, server-side prompt
  post-processing, the deprecated persona position after_char.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assembly.errors import AssemblyError
from assembly.reading import ROLES, ImportInvalid, js_trim, utf16_key
from assembly.results import build_trusted
from assembly.sillytavern.models import AuthorNote, Character, DepthPrompt, ExtensionPrompt, Persona, Prompt
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.vocabulary import GENERATION_TYPES
from assembly.tokens import ENCODINGS, count_tokens

Role = Literal["system", "user", "assistant"]
MessageKind = Literal[
    "chat", "injection", "prompt", "new_chat", "example_header", "example", "continue_message", "continue_nudge",
    "continue_prefill", "send_if_empty", "bias", "control",
]
MESSAGE_KINDS: tuple[str, ...] = MessageKind.__args__  # type: ignore[attr-defined]

MAX_INJECTION_DEPTH = 10000  # SillyTavern's MAX_INJECTION_DEPTH: depths 0..10000 are injected
EXTENSION_ORDER = 100  # every extension prompt sits in the order-100 bucket
ROLES_TOP_TO_BOTTOM: tuple[str, ...] = ("assistant", "user", "system")  # within one depth and order (§4.5, §11.1)
PRIMING_TOKENS = 3  # reserved for reply priming before anything else (§4.2 step 1)
MANDATORY_OVERFLOW_CODE = "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT"
MANDATORY_OVERFLOW_MESSAGE = "Mandatory prompts exceed the context size."

AUTHOR_NOTE_KEY = "2_floating_prompt"
CHARACTER_NOTE_KEY = "DEPTH_PROMPT"
PERSONA_KEY = "PERSONA_DESCRIPTION"
# Extension prompts SillyTavern attaches to Main first, in this order, before any other (§4.2 step 7, §2.4).
MAIN_ATTACHMENT_IDENTIFIERS: dict[str, str] = {
    "1_memory": "summary", "2_floating_prompt": "authorsNote", "3_vectors": "vectorsMemory",
    "4_vectors_data_bank": "vectorsDataBank", "chromadb": "smartContext",
}
_ALWAYS_SYSTEM_KEYS = {"3_vectors", "chromadb"}  # vectorsMemory and smartContext ignore the prompt's role

NAMES_BEHAVIOR: dict[str, int] = {"none": -1, "default": 0, "completion": 1, "content": 2}
_NAMES_BY_NUMBER = {number: name for name, number in NAMES_BEHAVIOR.items()}
_SQUASH_EXCLUDED_KINDS = {"new_chat", "example_header"}  # SillyTavern's newMainChat / newChat identifiers

_NAME_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_NAME_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_START = re.compile("<START>", re.IGNORECASE)
_LAST_CHAT_MESSAGE = re.compile(r"\{\{lastChatMessage\}\}", re.IGNORECASE)
_NOTE_EDGE_NEWLINES = re.compile(r"\A\n|\n\Z")


# ---------------------------------------------------------------------------------------------------------- errors


class StParityError(AssemblyError):
    """Bad input to a parity function. `code` is stable; the message names the item and what was expected."""

    def __init__(self, code: str, message: str, *, status: int = 400, **detail: Any):
        super().__init__(code, message, status=status, detail=detail)


def _invalid(path: str, expected: str, value: Any = None, *, code: str = "ST_INPUT_INVALID", has_value: bool = True):
    got = f", got {type(value).__name__} {value!r}"[:120] if has_value else ""
    return StParityError(code, f"{path}: expected {expected}{got}", path=path, expected=expected)


# ---------------------------------------------------------------------------------------------------------- models


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StMessage(_Frozen):
    id: str
    role: Role
    content: str
    name: str | None = None
    speaker: str | None = None
    kind: MessageKind = "chat"
    sources: tuple[str, ...] = ()
    depth: int | None = None
    order: int | None = None


def _with(m: StMessage, **changes: Any) -> StMessage:
    """`m` with some fields replaced by values computed from its own valid ones: no second validation, since this
    runs once per chat message of every request."""
    return build_trusted(StMessage, **{**m.__dict__, **changes})


def chat_message(*, id: str, role: Role, content: str, sources: tuple[str, ...], speaker: str | None = None
                 ) -> StMessage:
    """A chat message built from conversation data the engine already validated (the request's own messages)."""
    return build_trusted(StMessage, id=id, role=role, content=content, name=None, speaker=speaker, kind="chat",
                         sources=sources, depth=None, order=None)


class StInjection(_Frozen):
    sources: tuple[str, ...]
    content: str
    role: Role = "system"
    depth: int | None
    order: int = EXTENSION_ORDER
    key: str | None = None


class MainAttachment(_Frozen):
    sources: tuple[str, ...]
    key: str
    content: str
    position: Literal["start", "end"]
    role: Role = "system"


class StUnplaced(_Frozen):
    """An in-chat prompt SillyTavern never injects, and why."""

    sources: tuple[str, ...]
    depth: int | None
    reason: Literal["empty_content", "no_depth", "depth_out_of_range"]


class StBudgetGroup(_Frozen):
    id: str
    messages: tuple[StMessage, ...] = ()
    reserve: bool = False


DropPart = Literal["mandatory", "reserved", "history", "new_chat", "send_if_empty", "continue", "examples"]
DropReason = Literal[
    "over_budget", "after_cut", "mandatory_overflow", "not_reached", "no_history_slot", "no_examples_slot", "empty",
]


class StDropped(_Frozen):
    """Something the budget left out.

    Reasons: over_budget (it did not fit in what was left), after_cut (an earlier history message or example block
    did not fit; SillyTavern stops at the first miss), mandatory_overflow (this mandatory piece did not fit: the
    failure), not_reached (processing stopped at a mandatory overflow before it), no_history_slot /
    no_examples_slot (the preset has no enabled chatHistory / dialogueExamples, §11.9), empty (no content: never sent).
    """

    id: str
    part: DropPart
    reason: DropReason
    tokens: int
    message_ids: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


class StBudgetFailure(_Frozen):
    code: str = MANDATORY_OVERFLOW_CODE
    message: str = MANDATORY_OVERFLOW_MESSAGE
    item: str
    needed: int
    available: int


class StBudgetResult(_Frozen):
    limit: int
    remaining: int
    groups: tuple[StBudgetGroup, ...]
    group_ids: tuple[str, ...]
    history: tuple[StMessage, ...]
    examples: tuple[StMessage, ...]
    tail: tuple[StMessage, ...]
    dropped: tuple[StDropped, ...]
    tokens: dict[str, int]
    failure: StBudgetFailure | None = None

    def raise_for_failure(self) -> None:
        """SillyTavern shows the partial prompt with a toast; a caller that wants an exception instead calls this."""
        if self.failure is not None:
            f = self.failure
            raise StParityError(f.code, f"{f.message} ({f.item} needs {f.needed} tokens, {f.available} left)",
                                item=f.item, needed=f.needed, available=f.available)


class AuthorNotePlacement(_Frozen):
    """This turn's Author's Note (sillytavern.md §8.1).

    inserted: the interval says the note goes in this turn; user_messages: the count it was decided on;
    reason: "inserted" | "interval" (not this turn) | "disabled" (interval 0, or no user message) | "empty" (due, but
    no text); text: the final note (character note, world info ANTop/ANBottom and persona applied); sources: what the
    text holds; exactly one of injection (in-chat) / attachment (before or after Main) when there is text;
    not_inserted: sources left out because the note is not inserted this turn (the note, its world info entries, the
    persona at top/bottom of the note).
    """

    inserted: bool
    user_messages: int
    reason: Literal["inserted", "interval", "disabled", "empty"]
    text: str = ""
    sources: tuple[str, ...] = ()
    injection: StInjection | None = None
    attachment: MainAttachment | None = None
    not_inserted: tuple[str, ...] = ()


class PersonaPlacement(_Frozen):
    """Where the persona description goes (sillytavern.md §8.3).

    where: "marker" (the personaDescription prompt's content), "author_note_top" / "author_note_bottom" (wrapped
    around the note when it is inserted: pass the persona to `author_note_placement`), "in_chat" (see injection),
    "none" (position none, or an empty description), "unsupported" (after_char: deprecated, not described).
    """

    where: Literal["marker", "author_note_top", "author_note_bottom", "in_chat", "none", "unsupported"]
    text: str = ""
    injection: StInjection | None = None
    reason: str = ""


# ---------------------------------------------------------------------------------------------------------- reading

_MISSING: Any = object()


def _sequence(value: Any, path: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise _invalid(path, "a list", value)
    return value


class _Fields:
    """A mapping read by aliases; keys it does not know are refused unless their value is None."""

    def __init__(self, data: Mapping[str, Any], path: str):
        self.data, self.path, self.used = data, path, set()

    def get(self, *names: str) -> Any:
        for name in names:
            if name in self.data:
                self.used.add(name)
                return self.data[name]
        return _MISSING

    def finish(self) -> None:
        for key, value in self.data.items():
            if key not in self.used and value is not None:
                raise _invalid(f"{self.path}.{key}", "no such field (not supported by the SillyTavern parity steps)",
                               value)


def _text(value: Any, path: str, default: Any = _MISSING) -> str:
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise _invalid(path, "a string (required)", has_value=False)
        return default
    if not isinstance(value, str):
        raise _invalid(path, "a string", value)
    return value


def _int(value: Any, path: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    if value is _MISSING or (value is None and not nullable):
        if default is _MISSING:
            raise _invalid(path, "an integer (required)", has_value=False)
        return default
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, "an integer" + (" or null" if nullable else ""), value)
    return value


def _role(value: Any, path: str, default: str = "system") -> str:
    if value is _MISSING or value is None:
        return default
    if isinstance(value, str) and value in ROLES:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(ROLES):
        return ROLES[value]
    raise _invalid(path, "a role: system, user or assistant (or 0, 1, 2)", value)


def _sources(data: _Fields, path: str) -> tuple[str, ...]:
    many = data.get("sources", "source_ids", "sourceIds")
    one = data.get("source_id", "sourceId", "source")
    if many is not _MISSING and one is not _MISSING:
        raise _invalid(path, "either sources or source_id, not both", has_value=False)
    if one is not _MISSING:
        return (_text(one, f"{path}.source_id"),)
    if many is _MISSING:
        return ()
    items = _sequence(many, f"{path}.sources")
    return tuple(_text(item, f"{path}.sources[{i}]") for i, item in enumerate(items))


def _message(value: Any, path: str, default_kind: str) -> StMessage:
    if isinstance(value, StMessage):
        return value
    if not isinstance(value, Mapping):
        raise _invalid(path, "a message object {id, role, content, ...}", value)
    f = _Fields(value, path)
    kind = _text(f.get("kind"), f"{path}.kind", default_kind)
    if kind not in MESSAGE_KINDS:
        raise _invalid(f"{path}.kind", "one of " + ", ".join(MESSAGE_KINDS), kind)
    identifier = _text(f.get("id"), f"{path}.id")
    if not identifier:
        raise _invalid(f"{path}.id", "a non-empty id", identifier)
    role = f.get("role")
    if role == "tool":
        raise _invalid(f"{path}.role", "system, user or assistant (tool messages are not supported)", role)
    name = f.get("name")
    speaker = f.get("speaker")
    if kind == "chat" and speaker is _MISSING:
        name, speaker = _MISSING, name  # a chat log's name is who said it; the sent name comes from names behaviour
    sources = _sources(f, path) or ((identifier,) if kind == "chat" else ())
    message = StMessage(
        id=identifier, role=_role(role, f"{path}.role"), content=_text(f.get("content"), f"{path}.content", ""),
        name=_text(name, f"{path}.name", None), speaker=_text(speaker, f"{path}.speaker", None), kind=kind,
        sources=sources, depth=_int(f.get("depth"), f"{path}.depth", None, nullable=True),
        order=_int(f.get("order"), f"{path}.order", None, nullable=True),
    )
    f.finish()
    return message


def _messages(value: Any, path: str, default_kind: str) -> list[StMessage]:
    return [_message(item, f"{path}[{i}]", default_kind) for i, item in enumerate(_sequence(value, path))]


def _chat(value: Any, path: str) -> list[StMessage]:
    chat = _messages(value, path, "chat")
    for i, message in enumerate(chat):
        if message.kind != "chat":
            raise _invalid(f"{path}[{i}].kind", "chat (the chat before injection holds chat messages only)",
                           message.kind)
    _unique_ids(chat, path)
    # A chat message holds itself: the explanation of the request names it by its id.
    return [m if m.sources else m.model_copy(update={"sources": (m.id,)}) for m in chat]


def _alias(aliases: Mapping[Any, str], value: Any) -> Any:
    """`value` in its canonical spelling; unhashable values come back as they are (and are refused by the caller)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return aliases.get(value, value)
    return value


def _unique_ids(messages: Sequence[StMessage], path: str) -> None:
    seen: set[str] = set()
    for i, message in enumerate(messages):
        if message.id in seen:
            raise _invalid(f"{path}[{i}].id", "an id used once", message.id, code="ST_DUPLICATE_ID")
        seen.add(message.id)


def _injection(value: Any, path: str) -> StInjection:
    if isinstance(value, StInjection):
        return value
    if not isinstance(value, Mapping):
        raise _invalid(path, "an injection object {source_id, content, role, depth, order, key}", value)
    f = _Fields(value, path)
    sources = _sources(f, path)
    if not sources:
        raise _invalid(f"{path}.source_id", "a source id (required)", has_value=False)
    depth = f.get("depth", "injection_depth", "injectionDepth")
    if depth is _MISSING:
        raise _invalid(f"{path}.depth", "an integer or null (required)", has_value=False)
    key = _text(f.get("key", "extension_key", "extensionKey"), f"{path}.key", None)
    order = _int(f.get("order", "injection_order", "injectionOrder"), f"{path}.order", EXTENSION_ORDER)
    if key is not None and order != EXTENSION_ORDER:
        raise _invalid(f"{path}.order", f"{EXTENSION_ORDER} for an extension prompt (SillyTavern puts every "
                       "extension prompt in the order-100 bucket)", order, code="ST_EXTENSION_ORDER")
    injection = StInjection(
        sources=sources, content=_text(f.get("content"), f"{path}.content", ""), role=_role(f.get("role"),
        f"{path}.role"), depth=_int(depth, f"{path}.depth", nullable=True), order=order, key=key,
    )
    f.finish()
    return injection


def _injections(value: Any, path: str) -> list[StInjection]:
    items = [_injection(item, f"{path}[{i}]") for i, item in enumerate(_sequence(value, path))]
    seen_sources: set[str] = set()
    seen_keys: set[str] = set()
    for i, item in enumerate(items):
        if item.key is not None and item.order != EXTENSION_ORDER:  # an StInjection built directly
            raise _invalid(f"{path}[{i}].order", f"{EXTENSION_ORDER} for an extension prompt", item.order,
                           code="ST_EXTENSION_ORDER")
        if item.key is not None:
            if item.key in seen_keys:
                raise _invalid(f"{path}[{i}].key", "an extension key used once", item.key, code="ST_DUPLICATE_KEY")
            seen_keys.add(item.key)
        for source in item.sources:
            if source in seen_sources:
                raise _invalid(f"{path}[{i}].sources", "source ids used once across all injections", source,
                               code="ST_DUPLICATE_SOURCE")
            seen_sources.add(source)
    return items


def _attachment(value: Any, path: str) -> MainAttachment:
    if isinstance(value, MainAttachment):
        return value
    if not isinstance(value, Mapping):
        raise _invalid(path, "a main attachment {source_id, key, content, position, role}", value)
    f = _Fields(value, path)
    sources = _sources(f, path)
    if not sources:
        raise _invalid(f"{path}.source_id", "a source id (required)", has_value=False)
    position = f.get("position")
    position = _alias({"before_main": "start", "after_main": "end", 2: "start", 0: "end"}, position)
    if position not in ("start", "end"):
        raise _invalid(f"{path}.position", "start (before Main) or end (after Main)", position)
    attachment = MainAttachment(sources=sources, key=_text(f.get("key"), f"{path}.key"),
                                content=_text(f.get("content"), f"{path}.content", ""), position=position,
                                role=_role(f.get("role"), f"{path}.role"))
    f.finish()
    return attachment


def _encoding(encoding: Any) -> str:
    if encoding not in ENCODINGS:
        raise _invalid("encoding", "one of " + ", ".join(ENCODINGS), encoding)
    return encoding


def _resource(value: Any, field: str, model: type, path: str) -> Any:
    """A resource model, or a mapping in any spelling the resource importers accept."""
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise _invalid(path, f"a {model.__name__} or its JSON object", value)
    try:
        return getattr(normalize_resources({field: dict(value)}), field)
    except ImportInvalid as error:
        raise StParityError("ST_INPUT_INVALID", f"{path}: {error.message}", path=path) from error


# ---------------------------------------------------------------------------------------------------------- tokens


def st_message_tokens(message: StMessage | Mapping[str, Any], encoding: str = "o200k_base") -> int:
    """Tokens SillyTavern charges one message (§6): role + content + 3, plus name + 1 when named; 0 when empty."""
    m = _message(message, "message", "prompt")
    encoding = _encoding(encoding)
    if not m.content and not m.name:
        return 0
    total = count_tokens(m.role, encoding) + count_tokens(m.content, encoding) + 3
    if m.name:
        total += count_tokens(m.name, encoding) + 1
    return total


# ---------------------------------------------------------------------------------------------------------- in-chat


def _placeable(injection: StInjection) -> bool:
    depth = injection.depth
    return bool(injection.content) and depth is not None and 0 <= depth <= MAX_INJECTION_DEPTH


def unplaced_injections(injections: Sequence[StInjection | Mapping[str, Any]]) -> list[StUnplaced]:
    """The in-chat prompts SillyTavern skips without a word (empty text, no depth, depth outside 0..10000), so the
    engine can report them."""
    out = []
    for item in _injections(injections, "injections"):
        if not item.content:
            reason = "empty_content"
        elif item.depth is None:
            reason = "no_depth"
        elif not 0 <= item.depth <= MAX_INJECTION_DEPTH:
            reason = "depth_out_of_range"
        else:
            continue
        out.append(StUnplaced(sources=item.sources, depth=item.depth, reason=reason))
    return out


def _depth_block(depth: int, items: list[StInjection]) -> list[StMessage]:
    """The merged messages of one depth, top to bottom: ascending order, then assistant, user, system."""
    orders = sorted({i.order for i in items if i.key is None} | {EXTENSION_ORDER})
    block = []
    for order in orders:
        for role in ROLES_TOP_TO_BOTTOM:
            prompts = [i for i in items if i.key is None and i.order == order and i.role == role]
            extensions = []
            if order == EXTENSION_ORDER:
                extensions = sorted((i for i in items if i.key is not None and i.role == role),
                                    key=lambda i: utf16_key(i.key or ""))
            # Prompt Manager texts are joined as written; extension texts are trimmed one by one; then each side
            # is trimmed once more and the two sides joined (SillyTavern's exact treatment of whitespace).
            sides = ["\n".join(p.content for p in prompts), "\n".join(js_trim(e.content) for e in extensions)]
            content = "\n".join(js_trim(side) for side in sides if side)
            if content:
                sources = tuple(s for i in (*prompts, *extensions) for s in i.sources)
                block.append(StMessage(id=f"injection@{depth}/{order}/{role}", role=role, content=content,
                                       kind="injection", sources=sources, depth=depth, order=order))
    return block


def inject_in_chat(chat: Sequence[StMessage | Mapping[str, Any]],
                   injections: Sequence[StInjection | Mapping[str, Any]]) -> list[StMessage]:
    """The chat history with in-chat prompts placed at their depth (sillytavern.md §4.5).

    `chat` is chronological (current input last); `injections` are the collection's in-chat prompts in collection
    order and the extension prompts in any order. Depth d goes where d original chat messages follow (injected
    messages never count); depths at or beyond the chat length stack at the top, deepest first. One depth holds one
    message per (order, role) bucket. Returns the chronological history; injected messages have kind "injection".
    """
    messages = _chat(chat, "chat")
    items = _injections(injections, "injections")
    by_depth: dict[int, list[StInjection]] = {}
    for item in items:
        if _placeable(item):
            by_depth.setdefault(item.depth, []).append(item)  # type: ignore[arg-type]
    blocks = {depth: block for depth, group in by_depth.items() if (block := _depth_block(depth, group))}

    count = len(messages)
    out: list[StMessage] = []
    for depth in sorted((d for d in blocks if d >= count), reverse=True):
        out.extend(blocks[depth])
    for index, message in enumerate(messages):
        following = count - index  # messages from here to the end: an injection of this depth goes right here
        if following < count and following in blocks:
            out.extend(blocks[following])
        out.append(message)
    if count and 0 in blocks:
        out.extend(blocks[0])
    _unique_ids(out, "history")
    return out


def prompt_injection(prompt: Prompt | Mapping[str, Any], *, content: str | None = None) -> StInjection:
    """A Prompt Manager prompt with injection_position 1 as an injection; `content` is its macro-expanded text."""
    p = prompt if isinstance(prompt, Prompt) else _prompt_model(prompt)
    if p.injection_position != 1:
        raise _invalid(f"prompt {p.identifier!r}.injection_position", "1 (in-chat)", p.injection_position)
    text = p.content if content is None else _text(content, f"prompt {p.identifier!r} content")
    return StInjection(sources=(p.identifier,), content=text, role=p.role, depth=p.injection_depth,
                       order=p.injection_order)


def _prompt_model(value: Any) -> Prompt:
    if not isinstance(value, Mapping):
        raise _invalid("prompt", "a Prompt or a preset prompt object", value)
    try:
        preset = normalize_resources({"preset": {"prompts": [dict(value)]}}).preset
    except ImportInvalid as error:
        raise StParityError("ST_INPUT_INVALID", f"prompt: {error.message}", path="prompt") from error
    assert preset is not None
    return preset.prompts[0]


def character_note_injection(note: DepthPrompt | Character | Mapping[str, Any] | None, *,
                             source_id: str = "character_note") -> StInjection | None:
    """The card's Character's Note (depth_prompt) as the DEPTH_PROMPT extension prompt (§8.2); None when empty."""
    if note is None:
        return None
    if isinstance(note, Character):
        note = note.depth_prompt
        if note is None:
            return None
    if isinstance(note, Mapping):
        f = _Fields(note, "depth_prompt")
        note = DepthPrompt(prompt=_text(f.get("prompt", "content"), "depth_prompt.prompt", ""),
                           depth=_int(f.get("depth"), "depth_prompt.depth", 4),
                           role=_role(f.get("role"), "depth_prompt.role"))
        f.finish()
    if not isinstance(note, DepthPrompt):
        raise _invalid("depth_prompt", "a DepthPrompt, a Character or {prompt, depth, role}", note)
    if not note.prompt:
        return None
    return StInjection(sources=(source_id,), content=note.prompt, role=note.role, depth=note.depth,
                       key=CHARACTER_NOTE_KEY)


def world_info_depth_injection(depth: int | None, role: str | int,
                               entries: Sequence[tuple[str, str] | Mapping[str, Any]]) -> StInjection:
    """One world-info-at-depth group (§7.5): the entries of one (depth, role), already in SillyTavern's order
    (ascending `order`), joined with newlines under the key customDepthWI_<depth>_<role number>. An entry without a
    depth makes a group with depth None, which SillyTavern never injects (§11.7)."""
    role_name = _role(role, "role")
    depth = _int(depth, "depth", nullable=True)
    pairs = _source_texts(entries, "entries")
    if not pairs:
        raise _invalid("entries", "at least one world info entry", entries)
    key = f"customDepthWI_{'undefined' if depth is None else depth}_{ROLES.index(role_name)}"
    return StInjection(sources=tuple(s for s, _ in pairs), content="\n".join(t for _, t in pairs), role=role_name,
                       depth=depth, key=key)


def _source_texts(entries: Any, path: str) -> list[tuple[str, str]]:
    pairs = []
    for i, entry in enumerate(_sequence(entries, path)):
        where = f"{path}[{i}]"
        if isinstance(entry, Mapping):
            f = _Fields(entry, where)
            sources = _sources(f, where)
            if len(sources) != 1:
                raise _invalid(f"{where}.source_id", "one source id", has_value=False)
            pairs.append((sources[0], _text(f.get("content"), f"{where}.content")))
            f.finish()
        elif isinstance(entry, (tuple, list)) and len(entry) == 2:
            pairs.append((_text(entry[0], f"{where}[0]"), _text(entry[1], f"{where}[1]")))
        else:
            raise _invalid(where, "{source_id, content} or a (source_id, content) pair", entry)
    return pairs


def extension_prompt_placement(prompt: ExtensionPrompt | Mapping[str, Any], *, source_id: str | None = None,
                               ) -> StInjection | MainAttachment | None:
    """Another extension's prompt: in-chat -> an injection; before/after Main -> an attachment; position none (e.g.
    world info outlets) or empty text -> None (SillyTavern never inserts those by itself)."""
    ext = _resource_list_item(prompt)
    source = source_id or ext.key
    if not ext.content or ext.position == "none":
        return None
    if ext.position == "in_chat":
        return StInjection(sources=(source,), content=ext.content, role=ext.role, depth=ext.depth, key=ext.key)
    return MainAttachment(sources=(source,), key=ext.key, content=ext.content, role=ext.role,
                          position="start" if ext.position == "before_main" else "end")


def _resource_list_item(prompt: Any) -> ExtensionPrompt:
    if isinstance(prompt, ExtensionPrompt):
        return prompt
    if not isinstance(prompt, Mapping):
        raise _invalid("extension_prompt", "an ExtensionPrompt or its JSON object", prompt)
    try:
        return normalize_resources({"extension_prompts": [dict(prompt)]}).extension_prompts[0]
    except ImportInvalid as error:
        raise StParityError("ST_INPUT_INVALID", f"extension_prompt: {error.message}", path="extension_prompt") \
            from error


# ---------------------------------------------------------------------------------------------------------- main


def _attachment_processing_order(attachments: Sequence[Any]) -> list[MainAttachment]:
    items = [_attachment(a, f"attachments[{i}]") for i, a in enumerate(_sequence(attachments, "attachments"))]
    keys = [a.key for a in items]
    if len(set(keys)) != len(keys):
        raise _invalid("attachments", "each extension key once", keys, code="ST_DUPLICATE_KEY")
    known = sorted((a for a in items if a.key in MAIN_ATTACHMENT_IDENTIFIERS),
                   key=lambda a: list(MAIN_ATTACHMENT_IDENTIFIERS).index(a.key))
    # Known keys first in SillyTavern's fixed order; the others in the order given (object insertion order there).
    return known + [a for a in items if a.key not in MAIN_ATTACHMENT_IDENTIFIERS]


def _attachment_message(a: MainAttachment) -> StMessage:
    identifier = MAIN_ATTACHMENT_IDENTIFIERS.get(a.key) or re.sub(r"\W", "_", a.key, flags=re.ASCII)
    role = "system" if a.key in _ALWAYS_SYSTEM_KEYS else a.role
    return StMessage(id=identifier, role=role, content=a.content, kind="prompt", sources=a.sources)


def main_attachment_messages(attachments: Sequence[MainAttachment | Mapping[str, Any]]) -> list[StMessage]:
    """The attachments as messages in SillyTavern's processing order (their budget order, after bias)."""
    return [_attachment_message(a) for a in _attachment_processing_order(attachments)]


def main_slot_messages(main: StMessage | Mapping[str, Any] | None,
                       attachments: Sequence[MainAttachment | Mapping[str, Any]]) -> list[StMessage]:
    """Main's slot when Main is relative (§4.4): each start attachment is put at the start of the slot and each end
    attachment at its end, in processing order, so several start attachments come out in reverse. A disabled Main
    is an empty message that still anchors its attachments (§11.8)."""
    ordered = _attachment_processing_order(attachments)
    slot: list[StMessage] = [] if main is None else [_message(main, "main", "prompt")]
    for a in ordered:
        message = _attachment_message(a)
        if a.position == "start":
            slot.insert(0, message)
        else:
            slot.append(message)
    return slot


def attach_to_in_chat_main(injections: Sequence[StInjection | Mapping[str, Any]],
                           attachments: Sequence[MainAttachment | Mapping[str, Any]], *,
                           main_source_id: str = "main") -> list[StInjection]:
    """Main is in-chat: each attachment becomes a Prompt Manager injection with Main's depth, role and order, put
    right before (start) or right after (end) Main in the list, so it merges into Main's message (§4.4)."""
    items = [_injection(v, f"injections[{i}]") for i, v in enumerate(_sequence(injections, "injections"))]
    index = next((i for i, item in enumerate(items) if main_source_id in item.sources), None)
    if index is None:
        raise _invalid("injections", f"Main (source {main_source_id!r}) among the in-chat prompts", has_value=False,
                       code="ST_MAIN_NOT_IN_CHAT")
    main = items[index]
    for a in _attachment_processing_order(attachments):
        copy = StInjection(sources=a.sources, content=a.content, role=main.role, depth=main.depth, order=main.order)
        main_at = next(i for i, item in enumerate(items) if item is main)
        items.insert(main_at if a.position == "start" else main_at + 1, copy)
    return items


# ---------------------------------------------------------------------------------------------------------- notes


def author_note_due(interval: int, user_messages: int) -> bool:
    """Whether the note goes in this turn (§8.1): interval 1 always; interval 0 (or no user message) never; else
    every `interval`-th user message."""
    interval = _int(interval, "interval")
    user_messages = _int(user_messages, "user_messages")
    if interval == 1:
        user_messages = 1
    if user_messages <= 0 or interval <= 0:
        return False
    waiting = user_messages % interval if user_messages >= interval else interval - user_messages
    return waiting == 0


def persona_placement(persona: Persona | Mapping[str, Any] | None, *, source_id: str = "persona") -> PersonaPlacement:
    if persona is None:
        return PersonaPlacement(where="none", reason="no persona")
    p = _resource(persona, "persona", Persona, "persona")
    if not p.description:
        return PersonaPlacement(where="none", reason="empty description")
    if p.position == "in_prompt":
        return PersonaPlacement(where="marker", text=p.description, reason="personaDescription prompt")
    if p.position == "at_depth":
        injection = StInjection(sources=(source_id,), content=p.description, role=p.role, depth=p.depth,
                                key=PERSONA_KEY)
        return PersonaPlacement(where="in_chat", text=p.description, injection=injection, reason="in-chat at depth")
    if p.position in ("top_an", "bottom_an"):
        where = "author_note_top" if p.position == "top_an" else "author_note_bottom"
        return PersonaPlacement(where=where, text=p.description, reason="wrapped around the Author's Note")
    if p.position == "none":
        return PersonaPlacement(where="none", reason="position none")
    return PersonaPlacement(where="unsupported", text=p.description,
                            reason="after_char is deprecated; its chat-completion placement is not described")


def author_note_placement(note: AuthorNote | Mapping[str, Any], *, chat: Sequence[StMessage | Mapping[str, Any]],
                          world_info_top: Sequence[Any] = (), world_info_bottom: Sequence[Any] = (),
                          persona: Persona | Mapping[str, Any] | None = None,
                          character_author_note: Mapping[str, Any] | None = None,
                          source_id: str = "author_note", persona_source_id: str = "persona") -> AuthorNotePlacement:
    """This turn's Author's Note (§8.1).

    `chat` counts the user messages (current input included). `world_info_top` / `world_info_bottom` are the world
    info entries at ANTop / ANBottom as (source_id, content) pairs in SillyTavern's order (ascending `order`, §7.5).
    `persona` is used only when its position is top_an / bottom_an. `character_author_note` is the character-specific
    note {prompt, position: replace|before|after (or 0, 1, 2), use_chara, source_id?}, applied when use_chara is on.
    """
    n = _resource(note, "author_note", AuthorNote, "author_note")
    messages = _chat(chat, "chat")
    top = _source_texts(world_info_top, "world_info_top")
    bottom = _source_texts(world_info_bottom, "world_info_bottom")
    persona_at = persona_placement(persona, source_id=persona_source_id) if persona is not None else None
    wraps_persona = persona_at is not None and persona_at.where in ("author_note_top", "author_note_bottom")
    user_messages = sum(1 for m in messages if m.role == "user")
    if not author_note_due(n.interval, user_messages):
        disabled = n.interval <= 0 or (n.interval != 1 and user_messages <= 0)
        left_out = (source_id, *(s for s, _ in top), *(s for s, _ in bottom),
                    *((persona_source_id,) if wraps_persona else ()))
        return AuthorNotePlacement(inserted=False, user_messages=user_messages,
                                   reason="disabled" if disabled else "interval", not_inserted=left_out)

    text, sources = n.content, [source_id]
    if character_author_note is not None:
        text, sources = _apply_character_author_note(text, source_id, character_author_note)
    if top or bottom:
        joined = "\n".join(t for _, t in top) + "\n" + text + "\n" + "\n".join(t for _, t in bottom)
        text = _NOTE_EDGE_NEWLINES.sub("", joined)
        sources = [*(s for s, t in top if t), *sources, *(s for s, t in bottom if t)]
    if wraps_persona:
        assert persona_at is not None
        if persona_at.where == "author_note_top":
            text, sources = f"{persona_at.text}\n{text}", [persona_source_id, *sources]
        else:
            text, sources = f"{text}\n{persona_at.text}", [*sources, persona_source_id]
    if not text:
        return AuthorNotePlacement(inserted=True, user_messages=user_messages, reason="empty", sources=tuple(sources))
    placed = dict(inserted=True, user_messages=user_messages, reason="inserted", text=text, sources=tuple(sources))
    if n.position == "in_chat":
        injection = StInjection(sources=tuple(sources), content=text, role=n.role, depth=n.depth, key=AUTHOR_NOTE_KEY)
        return AuthorNotePlacement(**placed, injection=injection)
    attachment = MainAttachment(sources=tuple(sources), key=AUTHOR_NOTE_KEY, content=text, role=n.role,
                                position="start" if n.position == "before_main" else "end")
    return AuthorNotePlacement(**placed, attachment=attachment)


def _apply_character_author_note(text: str, source_id: str, value: Mapping[str, Any]) -> tuple[str, list[str]]:
    f = _Fields(value, "character_author_note")
    prompt = _text(f.get("prompt", "content"), "character_author_note.prompt", "")
    position = f.get("position")
    position = "replace" if position is _MISSING or position is None else position
    position = _alias({0: "replace", 1: "before", 2: "after"}, position)
    if position not in ("replace", "before", "after"):
        raise _invalid("character_author_note.position", "replace, before or after (or 0, 1, 2)", position)
    use = f.get("use_chara", "useChara")
    use = False if use is _MISSING or use is None else use
    if not isinstance(use, bool):
        raise _invalid("character_author_note.use_chara", "true or false", use)
    chara = _text(f.get("source_id", "sourceId"), "character_author_note.source_id", "character_author_note")
    f.finish()
    if not use:
        return text, [source_id]
    if position == "before":
        return f"{prompt}\n{text}", [chara, source_id]
    if position == "after":
        return f"{text}\n{prompt}", [source_id, chara]
    return prompt, [chara]


# ---------------------------------------------------------------------------------------------------------- examples


def split_example_blocks(mes_example: str) -> list[str]:
    """The card's example text cut into blocks at each <START> (case-insensitive), each block "<START>\\n" + its
    trimmed text + "\\n" (§3). A text of nothing but <START> markers and whitespace has no blocks."""
    text = _text(mes_example, "mes_example")
    if not js_trim(_START.sub("", text)):
        return []
    if not text.startswith("<START>"):  # only the upper-case marker counts here, as in SillyTavern
        text = "<START>\n" + js_trim(text)
    return ["<START>\n" + js_trim(part) + "\n" for part in _START.split(text)[1:]]


def _example_turns(block: str, user_name: str, char_name: str) -> list[tuple[str, str]]:
    """A block's turns as (example_user | example_assistant, text).

    The first line (the block's <START>) is skipped. A line beginning with "<user name>:" starts a user turn, one with
    "<character name>:" a character turn; other lines continue the current turn, and lines before the first speaker
    belong to the first turn. A turn stays open while the same speaker goes on, so two "User:" lines in a row make one
    message. The speaker prefix is removed once, wherever it first occurs, and the text trimmed.
    """
    lines = block.replace("\r", "").split("\n")[1:]
    turns: list[tuple[str, list[str]]] = []
    speaker: str | None = None
    pending: list[str] = []
    for line in lines:
        starts = "user" if line.startswith(user_name + ":") else "char" if line.startswith(char_name + ":") else None
        if starts and speaker and starts != speaker:
            turns.append((speaker, pending))
            pending = []
        if starts:
            speaker = starts
        pending.append(line)
    if speaker:
        turns.append((speaker, pending))
    out = []
    for who, turn_lines in turns:
        prefix = (user_name if who == "user" else char_name) + ":"
        out.append(("example_user" if who == "user" else "example_assistant",
                    js_trim("\n".join(turn_lines).replace(prefix, "", 1))))
    return out


def parse_dialogue_examples(mes_example: str, *, user_name: str, char_name: str, new_example_chat_prompt: str,
                            world_info: Sequence[Mapping[str, Any]] = (),
                            source_id: str = "mes_example") -> list[list[StMessage]]:
    """Example dialogues as SillyTavern sends them (§3, §4.7): a list of blocks, each the "[Example Chat]" header
    (new_example_chat_prompt; left out when that is empty) and then one system message per turn named example_user
    or example_assistant.

    `mes_example` is the card text with macros expanded. `world_info` are the entries at EMTop / EMBottom as
    {source_id, content, position: "before" | "after"} in SillyTavern's EM list order (ascending `order`, §7.5):
    each entry's blocks are put in front of all blocks ("before") or after them ("after"), one entry at a time, so the
    "before" entries end up in descending order (§11.3). A block with no speaker line is a header alone.
    """
    user_name = _text(user_name, "user_name")
    char_name = _text(char_name, "char_name")
    header_text = _text(new_example_chat_prompt, "new_example_chat_prompt")
    blocks: list[tuple[str, str]] = [(b, source_id) for b in split_example_blocks(mes_example)]
    for i, entry in enumerate(_sequence(world_info, "world_info")):
        where = f"world_info[{i}]"
        if not isinstance(entry, Mapping):
            raise _invalid(where, "{source_id, content, position}", entry)
        f = _Fields(entry, where)
        sources = _sources(f, where)
        if len(sources) != 1:
            raise _invalid(f"{where}.source_id", "one source id", has_value=False)
        content = _text(f.get("content"), f"{where}.content")
        position = f.get("position")
        position = _alias({"before_example_messages": "before", "after_example_messages": "after",
                           "EMTop": "before", "EMBottom": "after", 5: "before", 6: "after"}, position)
        if position not in ("before", "after"):
            raise _invalid(f"{where}.position", "before or after (EMTop / EMBottom)", position)
        f.finish()
        if not content:
            continue
        parsed = [(b, sources[0]) for b in split_example_blocks(content)]
        blocks = parsed + blocks if position == "before" else blocks + parsed
    out = []
    for b, (block, source) in enumerate(blocks):
        messages = []
        if header_text:
            messages.append(StMessage(id=f"newChat {b}", role="system", content=header_text, kind="example_header",
                                      sources=("new_example_chat_prompt",)))
        for j, (name, text) in enumerate(_example_turns(block, user_name, char_name)):
            messages.append(StMessage(id=f"dialogueExamples {b}-{j}", role="system", content=text, name=name,
                                      kind="example", sources=(source,)))
        out.append(messages)
    return out


def new_chat_message(new_chat_prompt: str) -> StMessage:
    """The separator above the chat history (§4.3 rule 4); an empty prompt gives an empty message, never sent."""
    return StMessage(id="newMainChat", role="system", content=_text(new_chat_prompt, "new_chat_prompt"),
                     kind="new_chat", sources=("new_chat_prompt",))


# ---------------------------------------------------------------------------------------------------------- names


def _names_mode(mode: Any) -> int:
    if isinstance(mode, str) and mode.lower() in NAMES_BEHAVIOR:
        return NAMES_BEHAVIOR[mode.lower()]
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in _NAMES_BY_NUMBER:
        return mode
    raise _invalid("names_behavior", "none, default, completion, content (or -1, 0, 1, 2)", mode)


def completion_name(name: str) -> str:
    """A speaker name as the `name` field allows it: kept when valid, else other characters become "_"."""
    return name if _NAME_VALID.fullmatch(name) else _NAME_INVALID.sub("_", name)[:64]


def apply_names_behavior(messages: Sequence[StMessage | Mapping[str, Any]], mode: int | str, *, user_name: str,
                         char_name: str) -> list[StMessage]:
    """Chat messages as SillyTavern prepares them for chat completion (§3).

    none / default: content unchanged, no name (default prefixes names only in group chats); content: every
    non-system chat message becomes "Speaker: content"; completion: the sanitized speaker goes in `name`. The speaker
    is the message's own, else the user name for user messages and the character name for assistant ones. Carriage
    returns are removed, as in the same SillyTavern step. Messages of other kinds pass through unchanged.
    """
    behavior = _names_mode(mode)
    user_name = _text(user_name, "user_name")
    char_name = _text(char_name, "char_name")
    out = []
    for m in _messages(messages, "messages", "chat"):
        if m.kind != "chat":
            out.append(m)
            continue
        speaker = m.speaker or {"user": user_name, "assistant": char_name}.get(m.role)
        content, name = m.content, None
        if behavior == NAMES_BEHAVIOR["content"] and m.role != "system":
            content = f"{speaker}: {content}"
        elif behavior == NAMES_BEHAVIOR["completion"] and speaker:
            name = completion_name(speaker)
        out.append(_with(m, content=content.replace("\r", ""), name=name, speaker=speaker))
    return out


# ---------------------------------------------------------------------------------------------------------- squash


def squash_system_messages(messages: Sequence[StMessage | Mapping[str, Any]]) -> list[StMessage]:
    """SillyTavern's "Squash system messages" (§4.8): empty system messages go; each run of unnamed system messages
    becomes one, texts joined with a newline. Named messages (examples, completion names), the new-chat separator
    and the example headers are never merged and break runs; so does any non-system message, even an empty one."""
    out: list[StMessage] = []
    for m in _messages(messages, "messages", "prompt"):
        if m.role == "system" and not m.content:
            continue
        if _squashable(m) and out and _squashable(out[-1]):
            head = out[-1]
            out[-1] = head.model_copy(update={
                "content": head.content + "\n" + m.content, "sources": (*head.sources, *m.sources),
                "depth": head.depth if head.depth == m.depth else None,
                "order": head.order if head.order == m.order else None,
            })
        else:
            out.append(m)
    return out


def _squashable(m: StMessage) -> bool:
    return m.role == "system" and not m.name and m.kind not in _SQUASH_EXCLUDED_KINDS


def drop_empty_messages(messages: Sequence[StMessage | Mapping[str, Any]]) -> tuple[list[StMessage], list[StMessage]]:
    """(sent, dropped): SillyTavern never sends a message without content (§4.3 rule 6)."""
    items = _messages(messages, "messages", "prompt")
    return [m for m in items if m.content], [m for m in items if not m.content]


# ---------------------------------------------------------------------------------------------------------- generation


def normalize_generation_type(generation_type: str | None) -> str:
    kind = (generation_type or "normal")
    if not isinstance(kind, str):
        raise _invalid("generation_type", "a string", kind)
    kind = kind.strip().lower() or "normal"
    if kind not in GENERATION_TYPES:
        raise _invalid("generation_type", "one of " + ", ".join(GENERATION_TYPES), generation_type)
    return kind


def prompt_triggers(prompt: Prompt | Mapping[str, Any], generation_type: str | None) -> bool:
    """A prompt takes part when it names no generation types or names this one (§2.6)."""
    p = prompt if isinstance(prompt, Prompt) else _prompt_model(prompt)
    return not p.injection_trigger or normalize_generation_type(generation_type) in p.injection_trigger


def chat_for_generation(chat: Sequence[StMessage | Mapping[str, Any]], generation_type: str | None,
                        ) -> tuple[list[StMessage], StMessage | None]:
    """(chat, removed): a swipe regenerates the last message, so SillyTavern leaves it out (§3)."""
    messages = _chat(chat, "chat")
    if normalize_generation_type(generation_type) == "swipe" and messages:
        return messages[:-1], messages[-1]
    return messages, None


def bias_message(text: str | None, generation_type: str | None) -> StMessage | None:
    """"Start Reply With": an assistant message after every ordered prompt; none for continue and impersonate, and
    none when the text is blank (§3, §11.16)."""
    text = _text(text, "bias", "")
    if normalize_generation_type(generation_type) in ("continue", "impersonate") or not js_trim(text):
        return None
    return StMessage(id="bias", role="assistant", content=text, kind="bias", sources=("start_reply_with",))


def control_prompts(generation_type: str | None, *, impersonation_prompt: str, quiet_prompt: str = "",
                    ) -> list[StMessage]:
    """The control prompts, sent last (§4.2 step 3, §11.16): the impersonation prompt for impersonate, then the
    quiet prompt when there is one. Budget them as one reserved group "controlPrompts" right after personaDescription.
    """
    kind = normalize_generation_type(generation_type)
    out = []
    if kind == "impersonate":
        out.append(StMessage(id="impersonate", role="system", kind="control", sources=("impersonation_prompt",),
                             content=_text(impersonation_prompt, "impersonation_prompt")))
    quiet = _text(quiet_prompt, "quiet_prompt", "")
    if quiet:
        out.append(StMessage(id="quietPrompt", role="system", content=quiet, kind="control",
                             sources=("quiet_prompt",)))
    return out


def take_continue_prefill(chat: Sequence[StMessage | Mapping[str, Any]], *, assistant_prefill: str = "",
                          ) -> tuple[list[StMessage], StMessage | None]:
    """Continue with continue_prefill on (§4.2 step 9): the newest chat message leaves the chat BEFORE injection
    (so depth 0 lands after the message before it) and comes back as the last message. `assistant_prefill` is
    Claude's prefill (pass it only for Claude): put before an assistant message with a blank line. Budget the
    message as a reserved group "continuePrefill" at the end of the mandatory list."""
    messages = _chat(chat, "chat")
    if not messages:
        return messages, None
    last = messages[-1]
    prefill = _text(assistant_prefill, "assistant_prefill", "") if last.role == "assistant" else ""
    content = "\n\n".join(part for part in (prefill, last.content) if part)
    message = StMessage(id="continuePrefill", role=last.role, content=content, name=last.name, speaker=last.speaker,
                        kind="continue_prefill", sources=last.sources)
    return messages[:-1], message


def take_continue_nudge(history: Sequence[StMessage | Mapping[str, Any]], *, continue_nudge_prompt: str,
                        ) -> tuple[list[StMessage], list[StMessage]]:
    """Continue without prefill (§4.6): AFTER injection, the newest chat message (injections skipped) leaves the
    history and is sent after everything else, followed by the nudge with {{lastChatMessage}} filled in. Nothing
    happens when there is no chat message or it is empty."""
    items = _messages(history, "history", "chat")
    index = next((i for i in range(len(items) - 1, -1, -1) if items[i].kind == "chat"), None)
    if index is None or not items[index].content:
        return items, []
    continued = items[index]
    nudge_text = _LAST_CHAT_MESSAGE.sub(lambda _: js_trim(continued.content),
                                        _text(continue_nudge_prompt, "continue_nudge_prompt"))
    collection = [
        continued.model_copy(update={"kind": "continue_message", "name": None}),
        StMessage(id="continueNudge", role="system", content=nudge_text, kind="continue_nudge",
                  sources=("continue_nudge_prompt",)),
    ]
    return items[:index] + items[index + 1:], collection


# ---------------------------------------------------------------------------------------------------------- budget


class _Ledger:
    def __init__(self, available: int, encoding: str):
        self.remaining = available
        self.encoding = encoding
        self.tokens: dict[str, int] = {}
        self.dropped: list[StDropped] = []

    def cost(self, messages: Sequence[StMessage]) -> int:
        total = 0
        for m in messages:
            n = self.tokens.get(m.id)
            if n is None:
                n = self.tokens[m.id] = st_message_tokens(m, self.encoding)
            total += n
        return total

    def fits(self, cost: int) -> bool:
        return self.remaining - cost >= 0

    def drop(self, identifier: str, part: str, reason: str, messages: Sequence[StMessage]) -> None:
        self.dropped.append(StDropped(id=identifier, part=part, reason=reason, tokens=self.cost(messages),
                                      message_ids=tuple(m.id for m in messages),
                                      sources=tuple(s for m in messages for s in m.sources)))


def _budget_group(value: Any, path: str) -> StBudgetGroup:
    if isinstance(value, StBudgetGroup):
        return value
    if not isinstance(value, Mapping):
        raise _invalid(path, "a budget group {id, messages, reserve}", value)
    f = _Fields(value, path)
    reserve = f.get("reserve")
    if reserve is not _MISSING and reserve is not None and not isinstance(reserve, bool):
        raise _invalid(f"{path}.reserve", "true or false", reserve)
    messages = f.get("messages")
    messages = [] if messages is _MISSING or messages is None else messages
    group = StBudgetGroup(id=_text(f.get("id"), f"{path}.id"),
                          messages=tuple(_messages(messages, f"{path}.messages", "prompt")), reserve=reserve is True)
    f.finish()
    return group


def st_budget(*, max_context: int, max_tokens: int, mandatory: Sequence[StBudgetGroup | Mapping[str, Any]] = (),
              history: Sequence[StMessage | Mapping[str, Any]] = (),
              new_chat: StMessage | Mapping[str, Any] | None = None,
              continue_messages: Sequence[StMessage | Mapping[str, Any]] = (), send_if_empty: str = "",
              examples: Sequence[Sequence[StMessage | Mapping[str, Any]]] = (), pin_examples: bool = False,
              has_history_slot: bool = True, has_examples_slot: bool = True,
              encoding: str = "o200k_base") -> StBudgetResult:
    """SillyTavern's token budget (§6): what fits in max_context - max_tokens, in its processing order.

    3 tokens are reserved for priming. `mandatory` groups are taken in the order given (SillyTavern's processing
    order, see the module docstring); a group that does not fit is the failure "Mandatory prompts exceed the context
    size." and everything after it is not reached -- the result then holds the partial prompt, as SillyTavern sends
    it (§11.12). Reserved groups are budgeted where they stand and placed last. Then the chat history (chronological,
    injections included, as `inject_in_chat` returns it) is filled newest first with the new-chat separator and the
    continue collection reserved; the first message that does not fit ends it. The send_if_empty user message comes
    after the history when the newest message is the assistant's and it fits. Then the example blocks (each header
    and turns, as `parse_dialogue_examples` returns them) in order until the first that does not fit. With
    `pin_examples` the examples are filled before the history (§11.13).
    """
    limit = _int(max_context, "max_context") - _int(max_tokens, "max_tokens")
    encoding = _encoding(encoding)
    for flag, name in ((pin_examples, "pin_examples"), (has_history_slot, "has_history_slot"),
                       (has_examples_slot, "has_examples_slot")):
        if not isinstance(flag, bool):
            raise _invalid(name, "true or false", flag)
    groups = [_budget_group(g, f"mandatory[{i}]") for i, g in enumerate(_sequence(mandatory, "mandatory"))]
    chat = _messages(history, "history", "chat")
    separator = None if new_chat is None else _message(new_chat, "new_chat", "new_chat")
    continued = _messages(continue_messages, "continue_messages", "continue_message")
    blocks = [_messages(b, f"examples[{i}]", "example") for i, b in enumerate(_sequence(examples, "examples"))]
    filler = _text(send_if_empty, "send_if_empty", "")
    group_ids = [g.id for g in groups]
    if len(set(group_ids)) != len(group_ids):
        raise _invalid("mandatory", "group ids used once", group_ids, code="ST_DUPLICATE_ID")
    every = [m for g in groups for m in g.messages] + chat + continued + [m for b in blocks for m in b]
    _unique_ids(every + ([separator] if separator else []), "messages")

    ledger = _Ledger(limit - PRIMING_TOKENS, encoding)
    kept: list[StBudgetGroup] = []
    reserved: list[StBudgetGroup] = []
    failure: StBudgetFailure | None = None
    history_out: list[StMessage] = []
    examples_out: list[StMessage] = []
    tail: list[StMessage] = []

    def fail(item: str, cost: int) -> StBudgetFailure:
        return StBudgetFailure(item=item, needed=cost, available=ledger.remaining)

    for index, group in enumerate(groups):
        cost = ledger.cost(group.messages)
        if group.reserve:
            ledger.remaining -= cost
            reserved.append(group)
            continue
        if not ledger.fits(cost):
            failure = fail(group.id, cost)
            ledger.drop(group.id, "mandatory", "mandatory_overflow", group.messages)
            for later in groups[index + 1:]:
                ledger.drop(later.id, "reserved" if later.reserve else "mandatory", "not_reached", later.messages)
            break
        ledger.remaining -= cost
        kept.append(group)

    def fill_history() -> StBudgetFailure | None:
        if not has_history_slot:
            for m in chat:
                ledger.drop(m.id, "history", "no_history_slot", [m])
            if separator is not None:
                ledger.drop(separator.id, "new_chat", "no_history_slot", [separator])
            if continued:
                ledger.drop("continueNudge", "continue", "no_history_slot", continued)
            return None
        separator_cost = ledger.cost([separator]) if separator is not None else 0
        continue_cost = ledger.cost(continued)
        ledger.remaining -= separator_cost + continue_cost
        ending: list[StMessage] = []
        if filler and chat and chat[-1].role == "assistant":
            message = StMessage(id="emptyUserMessageReplacement", role="user", content=filler, kind="send_if_empty",
                                sources=("send_if_empty",))
            cost = ledger.cost([message])
            if ledger.fits(cost):
                ledger.remaining -= cost
                ending.append(message)
            else:
                ledger.drop(message.id, "send_if_empty", "over_budget", [message])
        taken: list[StMessage] = []
        cut = False
        for m in reversed(chat):
            cost = ledger.cost([m])
            if cut:
                ledger.drop(m.id, "history", "after_cut", [m])
            elif not ledger.fits(cost):
                cut = True
                ledger.drop(m.id, "history", "over_budget", [m])
            elif not m.content:
                ledger.drop(m.id, "history", "empty", [m])
            else:
                ledger.remaining -= cost
                taken.append(m)
        history_out.extend(reversed(taken))
        history_out.extend(ending)
        if separator is not None:
            ledger.remaining += separator_cost
            if not ledger.fits(separator_cost):
                ledger.drop(separator.id, "new_chat", "mandatory_overflow", [separator])
                if continued:
                    ledger.drop("continueNudge", "continue", "not_reached", continued)
                return fail(separator.id, separator_cost)
            ledger.remaining -= separator_cost
            if separator.content:
                history_out.insert(0, separator)
            else:
                ledger.drop(separator.id, "new_chat", "empty", [separator])
        if continued:
            ledger.remaining += continue_cost
            if not ledger.fits(continue_cost):
                ledger.drop("continueNudge", "continue", "mandatory_overflow", continued)
                return fail("continueNudge", continue_cost)
            ledger.remaining -= continue_cost
            tail.extend(continued)
        return None

    def fill_examples() -> None:
        cut = False
        for b, block in enumerate(blocks):
            identifier = f"example block {b}"
            cost = ledger.cost(block)
            if not has_examples_slot:
                ledger.drop(identifier, "examples", "no_examples_slot", block)
            elif cut:
                ledger.drop(identifier, "examples", "after_cut", block)
            elif not ledger.fits(cost):
                cut = True
                ledger.drop(identifier, "examples", "over_budget", block)
            else:
                ledger.remaining -= cost
                examples_out.extend(m for m in block if m.content)
                for m in block:
                    if not m.content:
                        ledger.drop(m.id, "examples", "empty", [m])

    def not_reached_history() -> None:
        for m in chat:
            ledger.drop(m.id, "history", "not_reached", [m])
        if separator is not None:
            ledger.drop(separator.id, "new_chat", "not_reached", [separator])
        if continued:
            ledger.drop("continueNudge", "continue", "not_reached", continued)

    def not_reached_examples() -> None:
        for b, block in enumerate(blocks):
            ledger.drop(f"example block {b}", "examples", "not_reached", block)

    if failure is not None:
        not_reached_history()
        not_reached_examples()
    else:
        if pin_examples:
            fill_examples()
            failure = fill_history()
        else:
            failure = fill_history()
            if failure is not None:
                not_reached_examples()
            else:
                fill_examples()

    if reserved:
        control = [m for g in reserved for m in g.messages]
        if failure is not None:
            for g in reserved:
                ledger.drop(g.id, "reserved", "not_reached", g.messages)
        elif not ledger.fits(0):  # freed and added back: fails only when the reservation overdrew the budget
            failure = fail("controlPrompts", ledger.cost(control))
            for g in reserved:
                ledger.drop(g.id, "reserved", "mandatory_overflow", g.messages)
        else:
            tail.extend(control)

    return StBudgetResult(
        limit=limit, remaining=ledger.remaining, groups=tuple(kept), group_ids=tuple(g.id for g in groups
                                                                                     if not g.reserve),
        history=tuple(history_out), examples=tuple(examples_out), tail=tuple(tail), dropped=tuple(ledger.dropped),
        tokens=dict(ledger.tokens), failure=failure,
    )


HISTORY_SLOT = "chatHistory"
EXAMPLES_SLOT = "dialogueExamples"


def compose_chat_completion(slot_order: Sequence[str], budget: StBudgetResult) -> list[StMessage]:
    """The request in output order (§4.3): the slots in collection order ("chatHistory" and "dialogueExamples" take
    the budget's history and examples, every other id a mandatory group), then the tail (continue collection and
    control prompts). Put "bias" after the last ordered slot and Main's attachments around "main" (the ids from
    `main_slot_messages`). A group the budget dropped is skipped; a kept group missing from the order is an error,
    so nothing disappears unnoticed."""
    if not isinstance(budget, StBudgetResult):
        raise _invalid("budget", "the StBudgetResult of st_budget", budget)
    order = [_text(s, f"slot_order[{i}]") for i, s in enumerate(_sequence(slot_order, "slot_order"))]
    if len(set(order)) != len(order):
        raise _invalid("slot_order", "each slot id once", order, code="ST_DUPLICATE_ID")
    kept = {g.id: g for g in budget.groups}
    known = set(budget.group_ids)
    out: list[StMessage] = []
    for i, slot in enumerate(order):
        if slot == HISTORY_SLOT:
            out.extend(budget.history)
        elif slot == EXAMPLES_SLOT:
            out.extend(budget.examples)
        elif slot in kept:
            out.extend(kept[slot].messages)
        elif slot not in known:
            raise _invalid(f"slot_order[{i}]", "chatHistory, dialogueExamples or the id of a mandatory group "
                           "given to st_budget", slot, code="ST_COMPOSE_UNKNOWN_SLOT")
    missing = [g for g in kept if g not in order]
    if missing:
        raise _invalid("slot_order", "every kept mandatory group placed; missing " + ", ".join(missing), order,
                       code="ST_COMPOSE_GROUP_UNPLACED")
    out.extend(budget.tail)
    return out
