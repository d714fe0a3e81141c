"""The data of SillyTavern's prompt pipeline: immutable values the steps take and return, and their checks.

StMessage: one message of the assembled request (a typed tuple: a long chat makes one per message).
    id        unique in one assembly: a chat message keeps its own id; the others use SillyTavern's identifiers:
              "newMainChat", "newChat <block>" (example header), "dialogueExamples <block>-<n>",
              "injection@<depth>/<order>/<role>", "continueNudge", "continuePrefill", "emptyUserMessageReplacement",
              "impersonate", "quietPrompt", "bias", "summary" / "authorsNote" / ... (main attachments)
    role      "system" | "user" | "assistant"
    content   the text sent
    name      the `name` field sent (example_user / example_assistant, completion names), or None
    speaker   for chat messages: who said it (the chat log's name)
    kind      "chat" | "injection" | "prompt" | "new_chat" | "example_header" | "example" | "continue_message" |
              "continue_nudge" | "continue_prefill" | "send_if_empty" | "bias" | "control"
    sources   the ids of what the message holds, in text order: a chat message its own id, an injection every
              prompt / extension prompt merged into it, an example its card field or world book entry, a utility
              message the preset option it comes from ("new_chat_prompt", ...)
    depth, order   for injections: the bucket it was placed in (None otherwise)

StInjection: one in-chat prompt before merging (sillytavern.md §4.5).
    sources   one or more source ids (a world-info-at-depth group holds several entries)
    content   text; empty content is never injected (§11.10)
    depth     int, counted in chat messages from the end (0 = after the last one); None, a negative depth or one
              above 10000 is never injected, as in SillyTavern (§11.6, §11.7)
    order     injection_order (default 100); lower is higher up. Extension prompts always have 100.
    key       None for a Prompt Manager prompt; for an extension prompt its SillyTavern key ("2_floating_prompt",
              "DEPTH_PROMPT", "PERSONA_DESCRIPTION", "customDepthWI_<depth>_<role number>", ...). Extension prompts
              join the order-100 bucket after the Prompt Manager prompts, sorted by key in UTF-16 code-unit order
              (JavaScript's default sort, §11.19). Prompt Manager prompts keep their list (collection) order.

MainAttachment: an extension prompt attached to Main (§4.4): sources, key, content, role,
    position "start" (Before Main) | "end" (After Main).
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from collections.abc import Sequence
from operator import attrgetter
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from assembly.errors import AssemblyError
from assembly.reading import Role
from assembly.tokens import ENCODINGS

MessageKind = Literal[
    "chat", "injection", "prompt", "new_chat", "example_header", "example", "continue_message", "continue_nudge",
    "continue_prefill", "send_if_empty", "bias", "control",
]
MESSAGE_KINDS: tuple[str, ...] = MessageKind.__args__  # type: ignore[attr-defined]

EXTENSION_ORDER = 100  # every extension prompt sits in the order-100 bucket


# ---------------------------------------------------------------------------------------------------------- errors


class StParityError(AssemblyError):
    """Bad input to a parity function. `code` is stable; the message names the item and what was expected."""

    def __init__(self, code: str, message: str, *, status: int = 400, **detail: Any):
        super().__init__(code, message, status=status, detail=detail)


def step_invalid(path: str, expected: str, value: Any = None, *, code: str = "ST_INPUT_INVALID", has_value: bool = True):
    got = f", got {type(value).__name__} {value!r}"[:120] if has_value else ""
    return StParityError(code, f"{path}: expected {expected}{got}", path=path, expected=expected)


# ---------------------------------------------------------------------------------------------------------- models


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StMessage(NamedTuple):
    """One message of the request SillyTavern's steps build: a typed tuple (the steps make one per chat message and
    change none: `_replace` makes another)."""

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
    """`m` with some fields replaced."""
    return m._replace(**changes)


def chat_message(*, id: str, role: Role, content: str, sources: tuple[str, ...], speaker: str | None = None,
                 name: str | None = None) -> StMessage:
    """A chat message built from conversation data the engine already validated (the request's own messages)."""
    return StMessage(id, role, content, name, speaker, "chat", sources)


def trusted_message(id: str, role: Role, content: str, kind: MessageKind, sources: tuple[str, ...],
                    name: str | None = None, depth: int | None = None, order: int | None = None) -> StMessage:
    """A message of a prompt or an in-chat bucket, its arguments given by position."""
    return StMessage(id, role, content, name, None, kind, sources, depth, order)  # by position: twice as fast


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


# ---------------------------------------------------------------------------------------------------------- checks


def chat_messages(chat: Sequence[StMessage], path: str) -> list[StMessage]:
    # The checks read each field with map/attrgetter (no Python-level step per message: a chat can be long);
    # only a failing check walks the messages to name the first wrong one.
    if not set(map(_KIND, chat)) <= _CHAT_KIND:
        for i, message in enumerate(chat):
            if message.kind != "chat":
                raise step_invalid(f"{path}[{i}].kind", "chat (the chat before injection holds chat messages only)",
                                   message.kind)
    unique_ids(chat, path)
    if all(map(_SOURCES, chat)):
        return list(chat)
    # A chat message holds itself: the explanation of the request names it by its id.
    return [m if m.sources else m._replace(sources=(m.id,)) for m in chat]


_KIND, _SOURCES, _ID = attrgetter("kind"), attrgetter("sources"), attrgetter("id")
_CHAT_KIND = {"chat"}


def unique_ids(messages: Sequence[StMessage], path: str) -> None:
    ids = list(map(_ID, messages))
    if len(set(ids)) == len(ids):  # the usual case
        return
    seen: set[str] = set()
    for i, message in enumerate(messages):
        if message.id in seen:
            raise step_invalid(f"{path}[{i}].id", "an id used once", message.id, code="ST_DUPLICATE_ID")
        seen.add(message.id)


def checked_injections(injections: Sequence[StInjection], path: str) -> list[StInjection]:
    items = list(injections)
    seen_sources: set[str] = set()
    seen_keys: set[str] = set()
    for i, item in enumerate(items):
        if item.key is not None and item.order != EXTENSION_ORDER:
            raise step_invalid(f"{path}[{i}].order", f"{EXTENSION_ORDER} for an extension prompt", item.order,
                           code="ST_EXTENSION_ORDER")
        if item.key is not None:
            if item.key in seen_keys:
                raise step_invalid(f"{path}[{i}].key", "an extension key used once", item.key, code="ST_DUPLICATE_KEY")
            seen_keys.add(item.key)
        for source in item.sources:
            if source in seen_sources:
                raise step_invalid(f"{path}[{i}].sources", "source ids used once across all injections", source,
                               code="ST_DUPLICATE_SOURCE")
            seen_sources.add(source)
    return items


def checked_encoding(encoding: Any) -> str:
    if encoding not in ENCODINGS:
        raise step_invalid("encoding", "one of " + ", ".join(ENCODINGS), encoding)
    return encoding
