"""SillyTavern 1.18 chat-completion parity: the steps of its prompt pipeline as pure functions over frozen models.

A designer who picks `builtin-st` expects the exact message list SillyTavern would send (engine.md §5 "SillyTavern
parity"; sillytavern.md §1-§8). The ordinary engine places blocks by strategy rules; SillyTavern instead runs a fixed
pipeline with its own quirks: in-chat prompts bucketed by depth, order and role, example dialogues cut into
"[Example Chat]" blocks (`examples`), a token budget that trims history newest-first and then examples (`budget`),
name handling, squashing. Each step is one function, over the models of `messages`, so `request.st_request` can run
them in SillyTavern's order and explain every message it emits. Nothing here does I/O or mutates its inputs; macros
are expanded by the caller beforehand (SillyTavern expands card fields and prompt texts before these steps run),
except `{{lastChatMessage}}` in the continue nudge, which only this step knows.

Pipeline: the order in which `st_request` calls these (sillytavern.md §1, §4.2, §4.3); prompt triggers are
`sources.ordered_prompts`, swipe is `api._swipe`.
 1. `apply_names_behavior(chat, preset.names_behavior, user_name=..., char_name=...)`.
 2. Extension prompts: `persona_placement`, `author_note_placement` (takes the persona and the world info AN
    entries), `extension_prompt_placement`; the character's note and world info at depth are injections too.
 3. Main attachments go to `attach_to_in_chat_main` when main is in-chat, else to `main_slot_messages`.
 4. Continue with continue_prefill: `take_continue_prefill(chat)` BEFORE injection.
 5. `inject_in_chat(chat, prompt injections + extension injections)`.
 6. Continue without prefill: `take_continue_nudge(history, ...)` AFTER injection.
 7. `parse_dialogue_examples` (only when the preset carries SillyTavern's utility prompts) and `new_chat_message`.
 8. `control_prompts`, `bias_message`, then `budget.st_budget` with the mandatory groups in processing order.
 9. `squash_system_messages` when the preset asks for it; empty messages are never sent.

Approximations and what is left out
-----------------------------------
- Completion names are sanitized to OpenAI's name charset (letters, digits, "_", "-"; at most 64 characters).
- When a world book is loaded but gives the note no ANTop/ANBottom entries, SillyTavern still strips one leading and
  one trailing newline of the note text; we wrap (and strip) only when there are such entries.
- The persona-around-note separator is "\\n".
- {{lastChatMessage}} in the continue nudge is the continued message as sent (with a "Name: " prefix under the
  content names behaviour); SillyTavern fills in the raw chat text.
- The chat given is the chat SillyTavern counts: hidden messages are left out by the caller.
- Not covered: group chats (group nudge, DEFAULT names in groups, new_group_chat_prompt), tool calls and tool schema
  budget, images, `continue_postfix`, Claude's `assistant_impersonation`, `wrap_in_quotes`, server-side prompt
  post-processing, the deprecated persona position after_char, the character-specific author's note.
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Literal

from assembly.reading import js_trim, utf16_key
from assembly.sillytavern.messages import (
    EXTENSION_ORDER,
    MainAttachment,
    StInjection,
    StMessage,
    _Frozen,
    _with,
    chat_messages,
    checked_injections,
    step_invalid,
    trusted_message,
    unique_ids,
)
from assembly.sillytavern.models import AuthorNote, ExtensionPrompt, Persona
from assembly.sillytavern.vocabulary import GENERATION_TYPES

MAX_INJECTION_DEPTH = 10000  # SillyTavern's MAX_INJECTION_DEPTH: depths 0..10000 are injected
ROLES_TOP_TO_BOTTOM: tuple[str, ...] = ("assistant", "user", "system")  # within one depth and order (§4.5, §11.1)

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
_CONTENT_NAMES, _COMPLETION_NAMES = NAMES_BEHAVIOR["content"], NAMES_BEHAVIOR["completion"]
_SQUASH_EXCLUDED_KINDS = {"new_chat", "example_header"}  # SillyTavern's newMainChat / newChat identifiers

_NAME_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_NAME_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LAST_CHAT_MESSAGE = re.compile(r"\{\{lastChatMessage\}\}", re.IGNORECASE)
_NOTE_EDGE_NEWLINES = re.compile(r"\A\n|\n\Z")


# ---------------------------------------------------------------------------------------------------------- results


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


# ---------------------------------------------------------------------------------------------------------- in-chat


def _placeable(injection: StInjection) -> bool:
    depth = injection.depth
    return bool(injection.content) and depth is not None and 0 <= depth <= MAX_INJECTION_DEPTH


def _depth_block(depth: int, items: list[StInjection]) -> list[StMessage]:
    """The merged messages of one depth, top to bottom: ascending order, then assistant, user, system."""
    if len(items) == 1:  # the usual case: one bucket, one text (trimmed once, as the merge below trims it)
        item = items[0]
        content = js_trim(item.content)
        if not content:
            return []
        order = item.order if item.key is None else EXTENSION_ORDER
        return [_depth_message(depth, order, item.role, content, item.sources)]
    buckets: dict[tuple[int, str], list[StInjection]] = {}  # Prompt Manager prompts by (order, role), in list order
    keyed: dict[str, list[StInjection]] = {}  # extension prompts by role
    for item in items:
        if item.key is None:
            buckets.setdefault((item.order, item.role), []).append(item)
        else:
            keyed.setdefault(item.role, []).append(item)
    block = []
    for order in sorted({order for order, _ in buckets} | {EXTENSION_ORDER}):
        for role in ROLES_TOP_TO_BOTTOM:
            prompts = buckets.get((order, role), [])
            extensions = []
            if order == EXTENSION_ORDER and role in keyed:
                extensions = sorted(keyed[role], key=lambda i: utf16_key(i.key or ""))
            if not prompts and not extensions:
                continue
            # Prompt Manager texts are joined as written; extension texts are trimmed one by one; then each side
            # is trimmed once more and the two sides joined (SillyTavern's exact treatment of whitespace).
            sides = ["\n".join(p.content for p in prompts), "\n".join(js_trim(e.content) for e in extensions)]
            content = "\n".join(js_trim(side) for side in sides if side)
            if content:
                sources = tuple(s for i in (*prompts, *extensions) for s in i.sources)
                block.append(_depth_message(depth, order, role, content, sources))
    return block


def _depth_message(depth: int, order: int, role: str, content: str, sources: tuple[str, ...]) -> StMessage:
    """One merged in-chat message: its id names its depth, order and role (one bucket of the depth)."""
    return trusted_message(f"injection@{depth}/{order}/{role}", role, content, "injection", sources, None, depth, order)


def _depth_blocks(injections: Sequence[StInjection]) -> tuple[tuple[int, tuple[StMessage, ...]], ...]:
    """The in-chat injections checked and merged into one block per depth, deepest first (empty depths left out)."""
    by_depth: dict[int, list[StInjection]] = {}
    for item in checked_injections(tuple(injections), "injections"):
        if _placeable(item):
            by_depth.setdefault(item.depth, []).append(item)  # type: ignore[arg-type]
    return tuple((depth, tuple(block)) for depth in sorted(by_depth, reverse=True)
                 if (block := _depth_block(depth, by_depth[depth])))


def inject_in_chat(chat: Sequence[StMessage], injections: Sequence[StInjection], *,
                   chat_checked: bool = False) -> list[StMessage]:
    """The chat history with in-chat prompts placed at their depth (sillytavern.md §4.5).

    `chat` is chronological (current input last); `injections` are the collection's in-chat prompts in collection
    order and the extension prompts in any order. Depth d goes where d original chat messages follow (injected
    messages never count); depths at or beyond the chat length stack at the top, deepest first. One depth holds one
    message per (order, role) bucket. Returns the chronological history; injected messages have kind "injection".
    `chat_checked`: the caller built the chat list itself, chat messages only, each with its sources, under ids
    already known to be used once (`st_request`'s conversation is checked as the request is read), so the chat's
    own checks are not run again; the history's ids still are.
    """
    messages = chat if chat_checked else chat_messages(chat, "chat")
    blocks = _depth_blocks(injections)
    count = len(messages)
    out: list[StMessage] = []
    start = 0
    last: tuple[StMessage, ...] = ()
    # deepest first: the depths at or beyond the chat stack at the top, then each splices in before its message
    for depth, block in blocks:
        if depth >= count:
            out.extend(block)
        elif depth > 0:
            at = count - depth  # `depth` messages follow the block: it goes before message `at`
            out.extend(messages[start:at])
            out.extend(block)
            start = at
        else:
            last = block  # depth 0, after the newest message
    out.extend(messages[start:])
    out.extend(last)
    # The chat's ids are used once (checked above or by the caller) and so are the blocks' (one per depth, order
    # and role): only a chat id that is also a block's can be used twice, so the chat is read against the few.
    if blocks and not {m.id for _, block in blocks for m in block}.isdisjoint(map(_ID, messages)):
        unique_ids(out, "history")  # names the first one used twice and raises
    return out


_ID = attrgetter("id")


def extension_prompt_placement(ext: ExtensionPrompt, *, source_id: str | None = None,
                               ) -> StInjection | MainAttachment | None:
    """Another extension's prompt: in-chat -> an injection; before/after Main -> an attachment; position none (e.g.
    world info outlets) or empty text -> None (SillyTavern never inserts those by itself)."""
    source = source_id or ext.key
    if not ext.content or ext.position == "none":
        return None
    if ext.position == "in_chat":
        return StInjection(sources=(source,), content=ext.content, role=ext.role, depth=ext.depth, key=ext.key)
    return MainAttachment(sources=(source,), key=ext.key, content=ext.content, role=ext.role,
                          position="start" if ext.position == "before_main" else "end")


# ---------------------------------------------------------------------------------------------------------- main


def _attachment_processing_order(attachments: Sequence[MainAttachment]) -> list[MainAttachment]:
    items = list(attachments)
    keys = [a.key for a in items]
    if len(set(keys)) != len(keys):
        raise step_invalid("attachments", "each extension key once", keys, code="ST_DUPLICATE_KEY")
    known = sorted((a for a in items if a.key in MAIN_ATTACHMENT_IDENTIFIERS),
                   key=lambda a: list(MAIN_ATTACHMENT_IDENTIFIERS).index(a.key))
    # Known keys first in SillyTavern's fixed order; the others in the order given (object insertion order there).
    return known + [a for a in items if a.key not in MAIN_ATTACHMENT_IDENTIFIERS]


def _attachment_message(a: MainAttachment) -> StMessage:
    identifier = MAIN_ATTACHMENT_IDENTIFIERS.get(a.key) or re.sub(r"\W", "_", a.key, flags=re.ASCII)
    role = "system" if a.key in _ALWAYS_SYSTEM_KEYS else a.role
    return StMessage(id=identifier, role=role, content=a.content, kind="prompt", sources=a.sources)


def main_slot_messages(main: StMessage | None, attachments: Sequence[MainAttachment]) -> list[StMessage]:
    """Main's slot when Main is relative (§4.4): each start attachment is put at the start of the slot and each end
    attachment at its end, in processing order, so several start attachments come out in reverse. A disabled Main
    is an empty message that still anchors its attachments (§11.8)."""
    ordered = _attachment_processing_order(attachments)
    slot: list[StMessage] = [] if main is None else [main]
    for a in ordered:
        message = _attachment_message(a)
        if a.position == "start":
            slot.insert(0, message)
        else:
            slot.append(message)
    return slot


def attach_to_in_chat_main(injections: Sequence[StInjection], attachments: Sequence[MainAttachment], *,
                           main_source_id: str = "main") -> list[StInjection]:
    """Main is in-chat: each attachment becomes a Prompt Manager injection with Main's depth, role and order, put
    right before (start) or right after (end) Main in the list, so it merges into Main's message (§4.4)."""
    items = list(injections)
    index = next((i for i, item in enumerate(items) if main_source_id in item.sources), None)
    if index is None:
        raise step_invalid("injections", f"Main (source {main_source_id!r}) among the in-chat prompts", has_value=False,
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
    if interval == 1:
        user_messages = 1
    if user_messages <= 0 or interval <= 0:
        return False
    waiting = user_messages % interval if user_messages >= interval else interval - user_messages
    return waiting == 0


def persona_placement(p: Persona | None, *, source_id: str = "persona") -> PersonaPlacement:
    if p is None:
        return PersonaPlacement(where="none", reason="no persona")
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


def author_note_placement(n: AuthorNote, *, chat: Sequence[StMessage],
                          world_info_top: Sequence[tuple[str, str]] = (),
                          world_info_bottom: Sequence[tuple[str, str]] = (), persona: Persona | None = None,
                          source_id: str = "author_note", persona_source_id: str = "persona") -> AuthorNotePlacement:
    """This turn's Author's Note (§8.1).

    `chat` counts the user messages (current input included). `world_info_top` / `world_info_bottom` are the world
    info entries at ANTop / ANBottom as (source_id, content) pairs in SillyTavern's order (ascending `order`, §7.5).
    `persona` is used only when its position is top_an / bottom_an.
    """
    messages = chat_messages(chat, "chat")
    top, bottom = list(world_info_top), list(world_info_bottom)
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


# ---------------------------------------------------------------------------------------------------------- names


def completion_name(name: str) -> str:
    """A speaker name as the `name` field allows it: kept when valid, else other characters become "_"."""
    return name if _NAME_VALID.fullmatch(name) else _NAME_INVALID.sub("_", name)[:64]


def apply_names_behavior(messages: Sequence[StMessage], behavior: int, *, user_name: str, char_name: str,
                         ) -> list[StMessage]:
    """Chat messages as SillyTavern prepares them for chat completion (§3).

    none / default: content unchanged, no name (default prefixes names only in group chats); content: every
    non-system chat message becomes "Speaker: content"; completion: the sanitized speaker goes in `name`. The speaker
    is the message's own, else the user name for user messages and the character name for assistant ones. Carriage
    returns are removed, as in the same SillyTavern step. Messages of other kinds pass through unchanged.
    """
    out = []
    speakers = {"user": user_name, "assistant": char_name}
    for m in messages:
        if m.kind != "chat":
            out.append(m)
            continue
        speaker = m.speaker or speakers.get(m.role)
        content, name = named_content(m.content, m.role, speaker, behavior)
        if content == m.content and name == m.name and speaker == m.speaker:
            out.append(m)  # frozen: the message itself serves (the usual case once the speaker is known)
        else:
            out.append(_with(m, content=content, name=name, speaker=speaker))
    return out


def named_content(content: str, role: str, speaker: str | None, behavior: int) -> tuple[str, str | None]:
    """One chat message's content and `name` under a names behaviour (see `apply_names_behavior`), for callers that
    build the message once with them."""
    name = None
    if behavior == _CONTENT_NAMES and role != "system":
        content = f"{speaker}: {content}"
    elif behavior == _COMPLETION_NAMES and speaker:
        name = completion_name(speaker)
    return (content.replace("\r", "") if "\r" in content else content), name


# ---------------------------------------------------------------------------------------------------------- squash


def squash_system_messages(messages: Sequence[StMessage]) -> list[StMessage]:
    """SillyTavern's "Squash system messages" (§4.8): empty system messages go; each run of unnamed system messages
    becomes one, texts joined with a newline. Named messages (examples, completion names), the new-chat separator
    and the example headers are never merged and break runs; so does any non-system message, even an empty one."""
    out: list[StMessage] = []
    for m in messages:
        if m.role == "system" and not m.content:
            continue
        if _squashable(m) and out and _squashable(out[-1]):
            head = out[-1]
            out[-1] = head._replace(
                content=head.content + "\n" + m.content, sources=(*head.sources, *m.sources),
                depth=head.depth if head.depth == m.depth else None,
                order=head.order if head.order == m.order else None,
            )
        else:
            out.append(m)
    return out


def _squashable(m: StMessage) -> bool:
    return m.role == "system" and not m.name and m.kind not in _SQUASH_EXCLUDED_KINDS


# ---------------------------------------------------------------------------------------------------------- generation


def normalize_generation_type(generation_type: str | None) -> str:
    kind = (generation_type or "normal")
    if not isinstance(kind, str):
        raise step_invalid("generation_type", "a string", kind)
    kind = kind.strip().lower() or "normal"
    if kind not in GENERATION_TYPES:
        raise step_invalid("generation_type", "one of " + ", ".join(GENERATION_TYPES), generation_type)
    return kind


def bias_message(text: str | None, generation_type: str | None) -> StMessage | None:
    """"Start Reply With": an assistant message after every ordered prompt; none for continue and impersonate, and
    none when the text is blank (§3, §11.16)."""
    text = text or ""
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
                             content=impersonation_prompt))
    quiet = quiet_prompt
    if quiet:
        out.append(StMessage(id="quietPrompt", role="system", content=quiet, kind="control",
                             sources=("quiet_prompt",)))
    return out


def take_continue_prefill(chat: Sequence[StMessage], *, assistant_prefill: str = "",
                          ) -> tuple[list[StMessage], StMessage | None]:
    """Continue with continue_prefill on (§4.2 step 9): the newest chat message leaves the chat BEFORE injection
    (so depth 0 lands after the message before it) and comes back as the last message. `assistant_prefill` is
    Claude's prefill (pass it only for Claude): put before an assistant message with a blank line. Budget the
    message as a reserved group "continuePrefill" at the end of the mandatory list."""
    messages = chat_messages(chat, "chat")
    if not messages:
        return messages, None
    last = messages[-1]
    prefill = assistant_prefill if last.role == "assistant" else ""
    content = "\n\n".join(part for part in (prefill, last.content) if part)
    message = StMessage(id="continuePrefill", role=last.role, content=content, name=last.name, speaker=last.speaker,
                        kind="continue_prefill", sources=last.sources)
    return messages[:-1], message


def take_continue_nudge(history: Sequence[StMessage], *, continue_nudge_prompt: str,
                        ) -> tuple[list[StMessage], list[StMessage]]:
    """Continue without prefill (§4.6): AFTER injection, the newest chat message (injections skipped) leaves the
    history and is sent after everything else, followed by the nudge with {{lastChatMessage}} filled in. Nothing
    happens when there is no chat message or it is empty."""
    items = list(history)
    index = next((i for i in range(len(items) - 1, -1, -1) if items[i].kind == "chat"), None)
    if index is None or not items[index].content:
        return items, []
    continued = items[index]
    nudge_text = _LAST_CHAT_MESSAGE.sub(lambda _: js_trim(continued.content),
                                        continue_nudge_prompt)
    collection = [
        continued._replace(kind="continue_message", name=None),
        StMessage(id="continueNudge", role="system", content=nudge_text, kind="continue_nudge",
                  sources=("continue_nudge_prompt",)),
    ]
    return items[:index] + items[index + 1:], collection
