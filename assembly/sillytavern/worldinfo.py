"""World info activation: which world book entries SillyTavern would put into this prompt, why, and where.

A world book is a list of lore entries. With activation `"all"` the host already chose them, so every enabled entry
is active. With `"keywords"` we run SillyTavern 1.18's scan (sillytavern.md §7.2–§7.4; engine.md §5):

* Candidates are the entries sorted by `order`, highest first. Ties keep the order in which SillyTavern reads the
  book: its `entries` object, whose integer keys JavaScript lists in ascending order before the other keys.
* The scan buffer of an entry is the newest `scan_depth` chat messages (the entry's override, else the book's),
  newest first, each trimmed, prefixed with "\\x01" and joined with "\\n\\x01"; a message reads "Name: text" when the
  book includes names (the message's `name`, else the user's name for `user` and the character's for `assistant`;
  other roles get no prefix). Then the global scan data the entry opts into (persona description, character
  description, personality, depth prompt, scenario, creator notes), the injected extension prompts that allow
  scanning, and the recursion buffer. A scan depth of 0 gives an empty buffer: nothing but constants activates.
* Keys: `/pattern/flags` is a regular expression run on the raw buffer; any other key is a substring, lower-cased
  unless case-sensitive, and with whole words a single-word key must sit between non-word characters. Word
  characters are JavaScript's ASCII `\\w`, so a CJK or accented neighbour counts as a boundary (sillytavern.md §7.3).
  Keys are macro-expanded and trimmed; secondary keys follow `selective_logic`.
* Passes, inclusion groups, the probability roll and the budget: `worldinfo_scan`.

Sticky and cooldown are modelled from the state the request carries (`worldinfo_timed`). Not modelled: character / tag
filters, vector activation, external activation and the WORLD_INFO regex scripts. Entries that use them are named in
`notes`. `delay` is modelled: an entry waits until the scanned chat has that many messages.

The concepts live beside this entry point: `worldinfo_models` (the result), `worldinfo_keys` (key matching; regex
keys run through `js_regex`), `worldinfo_buffer` (scan buffers), `worldinfo_scan` (the keyword scan),
`worldinfo_groups` (inclusion groups), `worldinfo_emission` (the order of `active`, and the `wi_format` wrapper).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from assembly.errors import CodedError
from assembly.macros import MacroContext, expand_text_macros
from assembly.sillytavern.models import WorldBook
from assembly.sillytavern.pattern_matcher import DEFAULT_LIMITS, PatternLimits, PatternRuns
from assembly.sillytavern.steps import author_note_due
from assembly.sillytavern.text_budget import ST_ESTIMATE
from assembly.sillytavern.vocabulary import GENERATION_TYPES
from assembly.sillytavern.worldinfo_budget import world_info_budget, world_info_tokens
from assembly.sillytavern.worldinfo_buffer import ScanBuffers
from assembly.sillytavern.worldinfo_chance import Chance
from assembly.sillytavern.worldinfo_emission import emission_order
from assembly.sillytavern.worldinfo_keys import regex_key_refusal
from assembly.sillytavern.worldinfo_models import (
    ActivationReason,
    ActiveEntry,
    MatchSource,
    SkippedEntry,
    SkipReason,
    WorldInfoActivation,
    WorldInfoBudget,
)
from assembly.sillytavern.worldinfo_scan import (
    PREVIEW_ROLL,
    Candidate,
    KeywordScan,
    Match,
    javascript_key_order,
    split_decorators,
)
from assembly.sillytavern.worldinfo_timed import DEFAULT_WORLD_NAME, TimedEffects, WorldState
from assembly.tokens import ENCODINGS

Reason = TypeVar("Reason", ActivationReason, SkipReason)

# The global scan data SillyTavern can add to the buffer, in its order, with the entry flag that opts in.
SCAN_DATA_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("persona_description", "personaDescription", "match_persona_description"),
    ("character_description", "characterDescription", "match_character_description"),
    ("character_personality", "characterPersonality", "match_character_personality"),
    ("character_depth_prompt", "characterDepthPrompt", "match_character_depth_prompt"),
    ("scenario", "scenario", "match_scenario"),
    ("creator_notes", "creatorNotes", "match_creator_notes"),
)


class WorldInfoError(CodedError, ValueError):
    """Bad input to the world info functions: `code` is stable, `detail` names the offending field."""


def _invalid(field_path: str, expected: str, got: Any) -> WorldInfoError:
    shown = repr(got)
    shown = shown[:60] + "..." if len(shown) > 60 else shown
    return WorldInfoError("WORLD_INFO_INVALID", f"{field_path}: expected {expected}, got {shown}",
                          detail={"field": field_path, "expected": expected})


def _name(names: Mapping[str, Any], key: str, default: str) -> str:
    value = names.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _invalid(f"names.{key}", "a string", value)
    return value


def _chat_texts(chat: Sequence[Mapping[str, Any]], user: str, char: str, include_names: bool,
                typed: int = 0) -> list[str]:
    """The chat as SillyTavern's scan sees it: newest first, "Name: text" when names are included, trimmed. The
    newest `typed` messages were typed now: SillyTavern stores them with their macros substituted."""
    if not isinstance(chat, Sequence) or isinstance(chat, (str, bytes)):
        raise _invalid("chat", "a list of messages", chat)
    texts = []
    for index, message in enumerate(chat):
        if not isinstance(message, Mapping):
            raise _invalid(f"chat[{index}]", "a message object with role and content", message)
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise _invalid(f"chat[{index}].content", "a string", content)
        if index >= len(chat) - typed and "{{" in content:
            content = expand_text_macros(content, MacroContext(user=user, char=char)).text
        role = message.get("role")
        if not isinstance(role, str):
            raise _invalid(f"chat[{index}].role", "a role string (user, assistant, system, tool)", role)
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise _invalid(f"chat[{index}].name", "a string", name)
        if name is None:
            name = {"user": user, "assistant": char}.get(role)
        texts.append(f"{name}: {content}" if include_names and name else content)
    return [text.strip() for text in reversed(texts)]


def card_scan_data(character: Any, persona: Any) -> dict[str, str]:
    """The card and persona fields an entry may opt to scan (its match_* flags), as `global_scan_data` takes them."""
    return {
        "persona_description": persona.description if persona else "",
        "character_description": character.description if character else "",
        "character_personality": character.personality if character else "",
        "character_depth_prompt": character.depth_prompt.prompt if character and character.depth_prompt else "",
        "scenario": character.scenario if character else "",
        "creator_notes": character.creator_notes if character else "",
    }


def scan_injections(resources: Any, *, turn: int, user_messages: int, quiet_prompt: str = "") -> list[str]:
    """The extension prompts marked for scanning that SillyTavern's scan reads beside the chat (sillytavern.md §7.3,
    §8), as `scan_injections` takes them, for chat and text completion alike: the author's note when it allows world
    info scanning and goes in this turn (its interval over `user_messages`, the chat's user messages; a note left
    out is set empty), the other extensions' prompts with `scan`, the quiet prompt, the persona at depth from a
    chat's second generation on (SillyTavern sets it after world info has scanned and keeps it, so the scan reads
    the one set before), and the character's note, which "allow WI scan" marks too (re-set each generation, so last)."""
    note, persona, card = resources.author_note, resources.persona, resources.character
    allow = note is not None and note.allow_wi_scan
    texts = [note.content] if allow and note.content and author_note_due(note.interval, user_messages) else []
    texts += [e.content for e in resources.extension_prompts if e.scan and e.content]
    texts += [quiet_prompt] if quiet_prompt else []
    if turn >= 1 and persona is not None and persona.position == "at_depth" and persona.description:
        texts.append(persona.description)
    depth_prompt = card.depth_prompt.prompt.strip() if card is not None and card.depth_prompt is not None else ""
    texts += [depth_prompt] if allow and depth_prompt else []
    return texts


def _scan_data(data: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    if data is None:
        return []
    if not isinstance(data, Mapping):
        raise _invalid("global_scan_data", "an object of texts", data)
    known = {name for name, _camel, _flag in SCAN_DATA_FIELDS} | {camel for _name, camel, _flag in SCAN_DATA_FIELDS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise _invalid(f"global_scan_data.{unknown[0]}", "one of " + ", ".join(n for n, _c, _f in SCAN_DATA_FIELDS),
                       unknown[0])
    found = []
    for name, camel, flag in SCAN_DATA_FIELDS:
        spellings = [key for key in dict.fromkeys((name, camel)) if data.get(key) is not None]
        for key in spellings:
            if not isinstance(data[key], str):
                raise _invalid(f"global_scan_data.{key}", "a string", data[key])
        if len({data[key] for key in spellings}) > 1:
            raise _invalid(f"global_scan_data.{camel}", f"the same text as global_scan_data.{name}", data[camel])
        text = data[spellings[0]] if spellings else ""
        if text:
            found.append((name, text, flag))
    return found


def _activation_reason(match: Match, scan_pass: int, roll: float | None = None) -> ActivationReason:
    entry = match.candidate.entry
    probability = entry.probability if entry.use_probability and entry.probability != 100 else None
    where = _describe_source(match.matched_in)
    messages = {
        "constant": "constant entry",
        "decorator": "the content starts with @@activate",
        "key": f"key '{match.key}' found in {where}",
        "secondary": f"key '{match.key}' found in {where}; secondary keys pass {match.logic}",
        "recursion": f"key '{match.key}' found in {where}",
        "sticky": "sticky: still active from an earlier generation",
    }
    message = messages[match.kind]
    if match.kind == "recursion" and match.logic:
        message += f"; secondary keys pass {match.logic}"
    if probability is not None and roll is not None:
        message += f"; probability {probability}% passes the roll of {roll:.2f}"
    elif probability is not None:
        message += f"; probability {probability}% passes the preview's roll of {PREVIEW_ROLL}"
    return ActivationReason(kind=match.kind, message=message, scan_pass=scan_pass, key=match.key,
                            matched_in=match.matched_in, selective_logic=match.logic,
                            secondary_keys=match.secondary_found, probability=probability, roll=roll)


def _message_ids(chat: Sequence[Mapping[str, Any]]) -> list[str | None]:
    return [message.get("id") if isinstance(message.get("id"), str) else None for message in chat]


def _with_message_id(reason: Reason, ids: list[str | None]) -> Reason:
    """The reason with the scanned message's id beside its index, when the chat message had one."""
    source = reason.matched_in
    if source is None or source.kind != "message" or source.index is None or ids[source.index] is None:
        return reason
    return reason.model_copy(update={"matched_in": source.model_copy(update={"message_id": ids[source.index]})})


def _describe_source(source: MatchSource | None) -> str:
    if source is None:
        return "the scan buffer"
    if source.kind == "message":
        return f"message {source.index}"
    if source.kind == "recursion":
        return f"the content of entry {source.uid} (recursion)"
    if source.kind == "scan_data":
        return f"the {source.field}"
    return f"injected prompt {source.index}"


def _notes(book: WorldBook) -> tuple[str, ...]:
    notes = []
    for entry in book.entries:
        if not entry.enabled:
            continue
        if entry.character_filter and (entry.character_filter.get("names") or entry.character_filter.get("tags")):
            notes.append(f"entry {entry.uid}: the character filter is not evaluated in the preview")
        for key in (*entry.keys, *entry.secondary_keys):
            refusal = regex_key_refusal(key.strip())
            if refusal is not None and refusal.kind == "unsupported":
                notes.append(f"entry {entry.uid}: key {key!r} is a JavaScript regex the preview cannot translate "
                             f"({refusal.reason}); matched as text")
            elif refusal is not None:
                notes.append(f"entry {entry.uid}: key {key!r} is not a valid JavaScript regex ({refusal.reason}); "
                             "matched as text, as SillyTavern does")
    return tuple(notes)


def activate_world_info(
    book: WorldBook,
    *,
    chat: Sequence[Mapping[str, Any]],
    names: Mapping[str, Any],
    max_context: int,
    encoding: str = "o200k_base",
    global_scan_data: Mapping[str, Any] | None = None,
    scan_injections: Sequence[str] = (),
    generation: str = "normal",
    full_chat_length: int | None = None,
    typed_messages: int = 0,
    world_state: WorldState | None = None,
    seed: int | None = None,
    turn: int = 0,
    pattern_limits: PatternLimits = DEFAULT_LIMITS,
    macros: MacroContext | None = None,
) -> WorldInfoActivation:
    """Which entries of `book` SillyTavern would activate for `chat` (oldest first, the current input last; a
    message's optional `id` comes back as `matched_in.message_id` where a key was found in it).

    `names`: {"user", "char"} for macros and name prefixes. `max_context`: the budget base (SillyTavern passes the
    preset's context minus its reply tokens). `global_scan_data`: texts entries may opt into (persona_description,
    character_description, character_personality, character_depth_prompt, scenario, creator_notes; camelCase
    accepted). `full_chat_length`: the length of SillyTavern's chat when it differs from `chat` (a swipe leaves
    its last message out of the scan, but entry delays still count it). `typed_messages`: how many of the
    newest messages the user typed now (their macros are substituted, as SillyTavern stores them; older messages
    are scanned as written). `world_state`: the timed effects carried from the chat's previous generation
    (None: none yet); the result's `world_state` is the state after this one. `seed`: draw the probability rolls and
    weighted group picks from a generator seeded by it and `turn` (None: the preview's fixed, most likely rolls). `scan_injections`: extension prompts that allow world info scanning (author's note with
    allow_wi_scan, the quiet prompt, ...), macros expanded as SillyTavern reads them, scanned by every entry. `generation`: the generation type, for entry `triggers`. `pattern_limits`: what each
    regex key may cost (`pattern_matcher`); keys over them match nothing and are listed in `pattern_limits`."""
    _check_arguments(book, names, max_context, encoding, full_chat_length, generation, scan_injections,
                     typed_messages)
    user, char = _name(names, "user", "User"), _name(names, "char", "")
    messages = _chat_texts(chat, user, char, book.include_names, typed_messages)
    scan_data = _scan_data(global_scan_data)
    last = {role: next((m.get("content") or "" for m in reversed(chat) if m.get("role") == role), "")
            for role in ("user", "assistant")}
    shared = macros

    def macros() -> MacroContext:  # noqa: F811  the generation's own macros when it gives them
        if shared is not None:
            return shared
        return MacroContext(user=user, char=char, last_user_message=last["user"],
                            last_char_message=last["assistant"])

    candidates = _candidates(book, macros)
    if book.activation == "all":
        return _all_active(book, candidates, macros())
    timed = TimedEffects(entries=list(book.entries), world=book.name or DEFAULT_WORLD_NAME, chat_length=len(chat),
                         delay_length=len(chat) if full_chat_length is None else full_chat_length,
                         carried=world_state)
    timed.check()
    scan = KeywordScan(
        book=book, candidates=candidates, budget=world_info_budget(book, max_context), encoding=encoding,
        generation=generation, chat_length=len(chat), macros=macros(),
        timed_chat_length=len(chat) if full_chat_length is None else full_chat_length,
        patterns=PatternRuns(limits=pattern_limits),
        buffers=ScanBuffers(messages=messages, chat_length=len(chat), scan_data=scan_data,
                            injections=[expand_text_macros(text, macros()).text for text in scan_injections],
                            base_depth=book.scan_depth),
        timed=timed, chance=Chance(seed=seed, turn=turn),
    )
    scan.run()
    timed.start(match.candidate.entry for match, _content, _at in scan.activated.values())
    return _scanned(book, candidates, scan, chat, max_context, encoding, seed).model_copy(
        update={"pattern_limits": tuple(scan.patterns.diagnostics()), "world_state": timed.state()})


def _check_arguments(book: Any, names: Any, max_context: Any, encoding: Any, full_chat_length: Any, generation: Any,
                     scan_injections: Any, typed_messages: Any) -> None:
    """Each argument of `activate_world_info` of the type and range it needs, or WORLD_INFO_INVALID naming it."""
    if not isinstance(book, WorldBook):
        raise _invalid("book", "a WorldBook", book)
    uids = [e.uid for e in book.entries]
    if len(set(uids)) != len(uids):
        twice = next(uid for uid in uids if uids.count(uid) > 1)
        raise _invalid("book.entries", "entries with distinct uids", f"uid {twice!r} used twice")
    if not isinstance(names, Mapping):
        raise _invalid("names", "an object with user and char", names)
    if isinstance(max_context, bool) or not isinstance(max_context, int) or max_context < 0:
        raise _invalid("max_context", "a non-negative integer", max_context)
    if encoding not in ENCODINGS and encoding != ST_ESTIMATE:
        raise _invalid("encoding", "one of " + ", ".join(ENCODINGS), encoding)
    if full_chat_length is not None and (isinstance(full_chat_length, bool) or not isinstance(full_chat_length, int)
                                         or full_chat_length < 0):
        raise _invalid("full_chat_length", "a non-negative integer", full_chat_length)
    if generation not in GENERATION_TYPES:
        raise _invalid("generation", "one of " + ", ".join(GENERATION_TYPES), generation)
    if isinstance(scan_injections, (str, bytes)) or not all(isinstance(t, str) for t in scan_injections):
        raise _invalid("scan_injections", "a list of strings", scan_injections)
    _name(names, "user", "User")  # each name a string
    _name(names, "char", "")
    if isinstance(typed_messages, bool) or not isinstance(typed_messages, int) or typed_messages < 0:
        raise _invalid("typed_messages", "a non-negative integer", typed_messages)


def _candidates(book: WorldBook, macros: Callable[[], MacroContext]) -> list[Candidate]:
    """The entries in SillyTavern's scan order, each with its decorators, its content and its keys expanded."""
    # §7.2: chat lore first, then persona lore, then character lore and selected books in the book's strategy; each
    # by order, descending; stable, so ties keep the book's key order
    lore_rank = {"chat": 0, "persona": 1, **{
        "evenly": {"character": 2, "global": 2}, "character_first": {"character": 2, "global": 3},
        "global_first": {"global": 2, "character": 3}}[book.character_strategy]}
    ordered = sorted(javascript_key_order(book.entries), key=lambda e: (lore_rank[e.lore], -e.order))

    lazy = macros().st is not None  # SillyTavern's own macros: each key through them as the scan reaches it

    def expand(keys: tuple[str, ...]) -> list[tuple[str, str]]:
        # (as written, macro-expanded and trimmed); a key that expands to "" is skipped, as in SillyTavern.
        if lazy:
            return [(key, key) for key in keys]
        expanded = [(key, expand_text_macros(key, macros()).text if "{{" in key else key) for key in keys]
        return [(key, text.strip()) for key, text in expanded if text]

    candidates = []
    for entry in ordered:
        decorators, raw = split_decorators(entry.content)
        groups = tuple(g for g in re.split(r",\s*", entry.group) if g) if entry.group else ()
        candidates.append(Candidate(entry, decorators, raw, expand(entry.keys), expand(entry.secondary_keys),
                                    groups, lazy))
    return candidates


def _all_active(book: WorldBook, candidates: list[Candidate], context: MacroContext) -> WorldInfoActivation:
    """Activation `all`: every enabled entry, the host chose them. One macro context for every entry: {{setvar}}
    in one is seen by the next, as in SillyTavern."""
    active = []
    for candidate in candidates:
        if candidate.entry.enabled:
            content = expand_text_macros(candidate.raw_content, context).text
            active.append((candidate, Match(candidate, "all"), content, 1))
    reasons = {id(m): ActivationReason(kind="all", message="enabled: chosen by the host (activation 'all')")
               for _c, m, _t, _p in active}
    skipped = {e.uid: SkipReason(kind="disabled", message="the entry is disabled")
               for e in book.entries if not e.enabled}
    return _result(book, "all", active, reasons, skipped, passes=0, budget=None)


def _scanned(book: WorldBook, candidates: list[Candidate], scan: KeywordScan, chat: Sequence[Mapping[str, Any]],
             max_context: int, encoding: str, seed: int | None) -> WorldInfoActivation:
    """The keyword scan's answer: the active entries and why, the skipped ones and why, the budget."""
    by_uid = {c.entry.uid: c for c in candidates}
    active = [(by_uid[uid], match, content, at) for uid, (match, content, at) in scan.activated.items()]
    ids = _message_ids(chat)
    rolls = scan.rolls if seed is not None else {}
    reasons = {id(m): _with_message_id(_activation_reason(m, at, rolls.get(c.entry.uid)), ids)
               for c, m, _t, at in active}
    skipped = {uid: _with_message_id(reason, ids) for uid, reason in scan.outcome.items()}
    used = world_info_tokens("".join(content + "\n" for _c, _m, content, _p in active), encoding)
    budget = WorldInfoBudget(max_context=max_context, percent=book.budget_percent, cap=book.budget_cap,
                             limit=scan.budget, used=used, overflowed=scan.overflowed)
    return _result(book, "keywords", active, reasons, skipped, passes=scan.passes, budget=budget)


def _result(book: WorldBook, mode: Literal["all", "keywords"], active: list[tuple[Candidate, Match, str, int]],
            reasons: dict[int, ActivationReason], skipped: dict[Any, SkipReason], *, passes: int,
            budget: WorldInfoBudget | None) -> WorldInfoActivation:
    entries = [
        ActiveEntry(uid=c.entry.uid, comment=c.entry.comment, position=c.entry.position, order=c.entry.order,
                    depth=c.entry.depth, role=c.entry.role, outlet_name=c.entry.outlet_name, content=content,
                    activation_index=index, reason=reasons[id(match)])
        for index, (c, match, content, _at) in enumerate(active)
    ]
    return WorldInfoActivation(
        mode=mode,
        active=tuple(emission_order(entries)),
        skipped=tuple(SkippedEntry(uid=e.uid, comment=e.comment, position=e.position, order=e.order,
                                   reason=skipped[e.uid]) for e in book.entries if e.uid in skipped),
        scan_passes=passes,
        budget=budget,
        notes=_notes(book),
    )

