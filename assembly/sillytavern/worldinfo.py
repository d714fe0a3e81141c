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
* Passes: the first scan, then recursion passes over the contents of newly active entries (unless
  `prevent_recursion`), `delay_until_recursion` levels, and `min_activations` passes that widen the scan depth by one
  message, up to `max_recursion_steps` passes when that is > 0.
* Each pass: the new matches (candidate order) go through inclusion groups, the probability roll and the token
  budget (`round(max_context * budget_percent / 100) or 1`, capped by `budget_cap` when > 0). An entry that would
  reach the budget is skipped, and so is every later entry that does not `ignore_budget`; recursion stops.

Rolls are deterministic in the preview and show the more likely outcome: the probability roll is taken at its middle
(50, like the preview's `random = 0.5`), so an entry with `use_probability` and `probability` >= 50 passes and one
below 50 fails; an inclusion group is won by its most likely member: the highest `order` among `group_override`
entries, else the highest `group_weight`, ties going to the earlier candidate.

Not modelled (the preview has no chat metadata or character files): sticky and cooldown timers, character / tag
filters, vector activation, external activation and the WORLD_INFO regex scripts. Entries that use them are named in
`notes`. `delay` is modelled: an entry waits until the chat has that many messages.

`world_info_outputs` turns an activation into SillyTavern's world-info-before / after strings, author's note top /
bottom lists, example lists, depth groups and outlets with §7.5's order directions.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assembly.errors import CodedError
from assembly.macros import MacroContext, expand_text_macros
from assembly.reading import Role
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.vocabulary import GENERATION_TYPES, WORLD_POSITION_BY_NUMBER, SelectiveLogic, WorldPosition
from assembly.sillytavern.worldbook import import_worldbook
from assembly.tokens import ENCODINGS, count_tokens

DEFAULT_DEPTH = 4  # SillyTavern's DEFAULT_DEPTH: an @D entry without depth joins depth-4 groups (§7.5)
MAX_SCAN_DEPTH = 1000
PREVIEW_ROLL = 50  # the probability roll at its middle (random() = 0.5 in the preview)

# The global scan data SillyTavern can add to the buffer, in its order, with the entry flag that opts in.
SCAN_DATA_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("persona_description", "personaDescription", "match_persona_description"),
    ("character_description", "characterDescription", "match_character_description"),
    ("character_personality", "characterPersonality", "match_character_personality"),
    ("character_depth_prompt", "characterDepthPrompt", "match_character_depth_prompt"),
    ("scenario", "scenario", "match_scenario"),
    ("creator_notes", "creatorNotes", "match_creator_notes"),
)
_MATCHER = "\x01"
_JOINER = "\n" + _MATCHER


class WorldInfoError(CodedError, ValueError):
    """Bad input to the world info functions: `code` is stable, `detail` names the offending field."""


def _invalid(field_path: str, expected: str, got: Any) -> WorldInfoError:
    shown = repr(got)
    shown = shown[:60] + "..." if len(shown) > 60 else shown
    return WorldInfoError("WORLD_INFO_INVALID", f"{field_path}: expected {expected}, got {shown}",
                          detail={"field": field_path, "expected": expected})


# -------------------------------------------------------------------------------------------------- result models


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MatchSource(_Model):
    """Where a key was found in the scan buffer (the newest occurrence when several)."""

    kind: Literal["message", "recursion", "scan_data", "injection"]
    index: int | None = None  # message: index in `chat` (oldest = 0); injection: index in `scan_injections`
    uid: int | str | None = None  # recursion: the active entry whose content holds the key
    field: str | None = None  # scan_data: persona_description, character_description, ...


class ActivationReason(_Model):
    kind: Literal["all", "constant", "decorator", "key", "secondary", "recursion"]
    message: str
    scan_pass: int = 1  # 1 = the first scan; later passes are recursion, delay levels or min-activation passes
    key: str | None = None  # the primary key that matched, as written in the entry
    matched_in: MatchSource | None = None
    selective_logic: SelectiveLogic | None = None  # set when secondary keys took part
    secondary_keys: tuple[str, ...] = ()  # the secondary keys found in the buffer
    probability: int | None = None  # the entry's chance when a roll was due (the preview passed it)


SkipKind = Literal[
    "disabled", "trigger", "delayed", "delayed_until_recursion", "recursion_excluded", "decorator", "no_keys",
    "no_match", "secondary_failed", "group_lost", "probability", "over_budget",
]


class SkipReason(_Model):
    kind: SkipKind
    message: str
    scan_pass: int = 1  # the pass that decided it
    key: str | None = None  # the primary key that matched (secondary_failed, group_lost, probability, over_budget)
    matched_in: MatchSource | None = None
    group: str | None = None  # group_lost: the inclusion group
    winner: int | str | None = None  # group_lost: the entry that won it (None: it was won in an earlier pass)
    probability: int | None = None  # probability: the entry's chance; the preview rolls PREVIEW_ROLL
    budget: int | None = None  # over_budget: the budget and the tokens the entry would have brought it to
    tokens: int | None = None


class ActiveEntry(_Model):
    uid: int | str
    comment: str
    position: WorldPosition
    order: int
    depth: int | None
    role: Role
    outlet_name: str
    content: str  # macros expanded, decorator lines removed: the text SillyTavern places
    activation_index: int  # 0 = activated first; equal orders are emitted later-activated first (§11.4)
    reason: ActivationReason


class SkippedEntry(_Model):
    uid: int | str
    comment: str
    position: WorldPosition
    order: int
    reason: SkipReason


class WorldInfoBudget(_Model):
    max_context: int
    percent: int
    cap: int
    limit: int  # round(max_context * percent / 100) or 1, then min(limit, cap) when cap > 0
    used: int  # tokens of the active contents, each followed by "\n" (as the budget check counts them)
    overflowed: bool


class WorldInfoActivation(_Model):
    """Every entry of the book exactly once: in `active` (emission order, per position in SillyTavern's numeric
    position order 0..7) or in `skipped` (book order)."""

    mode: Literal["all", "keywords"]
    active: tuple[ActiveEntry, ...]
    skipped: tuple[SkippedEntry, ...]
    scan_passes: int
    budget: WorldInfoBudget | None  # None for activation "all"
    notes: tuple[str, ...] = ()  # features present in the book that the preview does not evaluate


class PlacedText(_Model):
    uid: int | str
    content: str


class DepthGroup(_Model):
    """World info at depth for one (depth, role): SillyTavern's `customDepthWI_<depth>_<role>` extension prompt."""

    depth: int | None  # None: the group's first entry had no depth; SillyTavern never injects it (§11.7)
    role: Role
    content: str  # the entries joined with "\n"
    entries: tuple[PlacedText, ...]


class UnplacedEntry(_Model):
    uid: int | str
    reason: Literal["empty_content", "outlet_without_name"]
    message: str


class WorldInfoOutputs(_Model):
    """What the assembler places, in SillyTavern's order (sillytavern.md §7.5). Strings are not yet wrapped with the
    preset's `wi_format` (see `format_world_info`)."""

    before: str  # entries joined with "\n": lowest order first, equal orders later-activated first
    after: str
    before_entries: tuple[PlacedText, ...]
    after_entries: tuple[PlacedText, ...]
    an_top: tuple[PlacedText, ...]  # ascending, like before/after (see `author_note_with_world_info`)
    an_bottom: tuple[PlacedText, ...]
    examples_top: tuple[PlacedText, ...]  # DESCENDING order: final order above the card's examples (§11.3)
    examples_bottom: tuple[PlacedText, ...]  # ascending: final order below the card's examples
    depth: tuple[DepthGroup, ...]  # in creation order; entries ascending within a group
    outlets: dict[str, str]  # outlet name -> entries joined with "\n", HIGHEST order first (§11.2)
    outlet_entries: dict[str, tuple[PlacedText, ...]]
    unplaced: tuple[UnplacedEntry, ...]  # active entries that emit nothing


# -------------------------------------------------------------------------------------------------- key matching

_REGEX_KEY = re.compile(r"\A/([\s\S]+?)/([gimsuy]*)\Z")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_JS_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}


@dataclass(frozen=True)
class _RegexKey:
    pattern: re.Pattern[str]
    sticky: bool  # JavaScript's `y`: the match must start at the beginning of the buffer


@lru_cache(maxsize=4096)
def parse_regex_key(key: str) -> _RegexKey | None:
    """A key written `/pattern/flags` -> its compiled regex; None for a plain key. As in SillyTavern, an unescaped
    "/" inside the pattern or a pattern that does not compile makes it a plain key."""
    found = _REGEX_KEY.match(key)
    if not found:
        return None
    pattern, flags = found.groups()
    if _UNESCAPED_SLASH.search(pattern):
        return None
    # JavaScript spells named groups (?<name>...) and \k<name>; Python wants (?P<name>...) and (?P=name).
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    pattern = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", pattern)
    compiled_flags = 0
    for flag in flags:
        compiled_flags |= _JS_FLAGS.get(flag, 0)
    try:
        return _RegexKey(re.compile(pattern, compiled_flags), "y" in flags)
    except (re.error, OverflowError, RecursionError):
        return None


_JS_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _find_whole_word(haystack: str, needle: str) -> int | None:
    r"""SillyTavern's `(?:^|\W)(key)(?:$|\W)`: the first occurrence with a non-word character (or the buffer's
    edge) on both sides. JavaScript's \W (no u flag) is every character but [A-Za-z0-9_]."""
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or haystack[start - 1] not in _JS_WORD_CHARACTERS) and (
                end == len(haystack) or haystack[end] not in _JS_WORD_CHARACTERS):
            return start
        start = haystack.find(needle, start + 1)
    return None


def find_key(haystack: str, key: str, *, case_sensitive: bool, match_whole_words: bool) -> int | None:
    """Offset of the first match of `key` in `haystack`, or None. `key` is already macro-expanded and trimmed.
    Without case sensitivity the caller passes the lower-cased haystack (offsets are those of that text)."""
    regex = parse_regex_key(key)
    if regex is not None:
        found = regex.pattern.match(haystack) if regex.sticky else regex.pattern.search(haystack)
        return found.start() if found else None
    needle = key if case_sensitive else key.lower()
    # A key of several words is a plain substring even with whole words (SillyTavern splits it on whitespace).
    if match_whole_words and len(needle.split()) <= 1:
        return _find_whole_word(haystack, needle)
    offset = haystack.find(needle)
    return offset if offset >= 0 else None


# -------------------------------------------------------------------------------------------------- scan buffer


@dataclass(frozen=True)
class _Segment:
    text: str
    source: MatchSource | None  # None: the empty depth part of a chat with no messages in range
    # recursion chunks: (offset within the chunk, uid) for each entry content joined into it
    parts: tuple[tuple[int, int | str], ...] = ()


@dataclass
class _Buffer:
    """The text one entry scans, with the offsets of its segments (in the raw and in the lower-cased text)."""

    segments: list[_Segment]
    _texts: dict[bool, tuple[str, list[int], list[str]]] = field(default_factory=dict)

    def text(self, case_sensitive: bool) -> tuple[str, list[int], list[str]]:
        if case_sensitive not in self._texts:
            pieces = [s.text if case_sensitive else s.text.lower() for s in self.segments]
            starts, offset = [], 1
            for piece in pieces:
                starts.append(offset)
                offset += len(piece) + len(_JOINER)
            self._texts[case_sensitive] = (_MATCHER + _JOINER.join(pieces), starts, pieces)
        return self._texts[case_sensitive]

    def source_at(self, offset: int, case_sensitive: bool) -> MatchSource | None:
        _text, starts, pieces = self.text(case_sensitive)
        index = max(0, bisect_right(starts, offset) - 1)
        segment = self.segments[index]
        if segment.parts:
            within = offset - starts[index]
            owners = [at for at, _uid in segment.parts]
            uid = segment.parts[max(0, bisect_right(owners, within) - 1)][1]
            return MatchSource(kind="recursion", uid=uid)
        return segment.source


class _ScanState:
    INITIAL = "initial"
    RECURSION = "recursion"
    MIN_ACTIVATIONS = "min_activations"


@dataclass
class _Scanner:
    """Builds scan buffers; one buffer per distinct (depth, scan data opted into, recursion included)."""

    messages: list[str]  # newest first, trimmed, names prefixed
    chat_length: int
    scan_data: list[tuple[str, str, str]]  # (field, text, entry flag) for non-empty data, in SillyTavern's order
    injections: list[str]
    base_depth: int
    skew: int = 0
    recursion: list[_Segment] = field(default_factory=list)
    _cache: dict[tuple[Any, ...], _Buffer] = field(default_factory=dict)

    def depth(self) -> int:
        return self.base_depth + self.skew

    def buffer(self, entry: WorldBookEntry, state: str) -> _Buffer | None:
        depth = entry.scan_depth if entry.scan_depth is not None else self.depth()
        if depth <= 0:
            return None  # SillyTavern returns an empty buffer: no chat, no scan data, no recursion
        depth = min(depth, MAX_SCAN_DEPTH)
        opted = tuple(name for name, _text, flag in self.scan_data if getattr(entry, flag))
        with_recursion = state != _ScanState.MIN_ACTIVATIONS and bool(self.recursion)
        key = (depth, opted, with_recursion, len(self.recursion))
        if key not in self._cache:
            shown = self.messages[:depth]
            if shown:
                segments = [_Segment(text, MatchSource(kind="message", index=self.chat_length - 1 - i))
                            for i, text in enumerate(shown)]
            else:
                segments = [_Segment("", None)]
            segments += [_Segment(text, MatchSource(kind="scan_data", field=name))
                         for name, text, _flag in self.scan_data if name in opted]
            segments += [_Segment(text, MatchSource(kind="injection", index=i))
                         for i, text in enumerate(self.injections)]
            if with_recursion:
                segments += self.recursion
            self._cache[key] = _Buffer(segments)
        return self._cache[key]

    def add_recursion(self, contents: list[tuple[int | str, str]]) -> None:
        parts, offset = [], 0
        for uid, content in contents:
            parts.append((offset, uid))
            offset += len(content) + 1
        self.recursion.append(_Segment("\n".join(content for _uid, content in contents), None, tuple(parts)))
        self._cache.clear()


# -------------------------------------------------------------------------------------------------- inputs


def _book(book: WorldBook | Mapping[str, Any]) -> WorldBook:
    if isinstance(book, WorldBook):
        return book
    if isinstance(book, Mapping):
        return import_worldbook(dict(book))
    raise _invalid("book", "a WorldBook or a world book JSON object", book)


def _name(names: Mapping[str, Any], key: str, default: str) -> str:
    value = names.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _invalid(f"names.{key}", "a string", value)
    return value


def _chat_texts(chat: Sequence[Mapping[str, Any]], user: str, char: str, include_names: bool) -> list[str]:
    """The chat as SillyTavern's scan sees it: newest first, "Name: text" when names are included, trimmed."""
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


def _js_key_order(entries: Sequence[WorldBookEntry]) -> list[WorldBookEntry]:
    """The book's entries as JavaScript's Object.keys lists them: integer keys ascending, then the rest as given."""

    def index(uid: int | str) -> int | None:
        text = str(uid)
        if text.isascii() and text.isdecimal() and (text == "0" or not text.startswith("0")):
            number = int(text)
            return number if number < 2**32 - 1 else None
        return None

    numbered = sorted((e for e in entries if index(e.uid) is not None), key=lambda e: index(e.uid))
    return numbered + [e for e in entries if index(e.uid) is None]


def _decorators(content: str) -> tuple[tuple[str, ...], str]:
    """SillyTavern's leading `@@activate` / `@@dont_activate` lines -> (decorators, content without them)."""
    known = ("@@activate", "@@dont_activate")
    if not content.startswith("@@"):
        return (), content
    lines = content.split("\n")
    found: list[str] = []
    fallback = False  # "@@@x" is only read when the decorator before it was not understood
    for i, line in enumerate(lines):
        if not line.startswith("@@"):
            return tuple(found), "\n".join(lines[i:])
        if line.startswith("@@@") and not fallback:
            continue
        candidate = line[1:] if line.startswith("@@@") else line
        if candidate.startswith(known):
            found.append(candidate)
            fallback = False
        else:
            fallback = True
    return tuple(found), content  # nothing but decorator lines: SillyTavern keeps the content as it was


def _delay_level(entry: WorldBookEntry) -> int:
    value = entry.delay_until_recursion
    if value is True:
        return 1
    return int(value) if value else 0


def _round_half_up(value: float) -> int:
    # JavaScript's Math.round (halves go up), unlike Python's round (halves go to even).
    return math.floor(value + 0.5)


def world_info_budget(book: WorldBook, max_context: int) -> int:
    """SillyTavern's budget: round(max_context * budget_percent / 100) or 1, capped by budget_cap when > 0."""
    limit = _round_half_up(book.budget_percent * max_context / 100) or 1
    if book.budget_cap > 0 and limit > book.budget_cap:
        limit = book.budget_cap
    return limit


# -------------------------------------------------------------------------------------------------- activation


@dataclass
class _Candidate:
    entry: WorldBookEntry
    decorators: tuple[str, ...]
    raw_content: str  # decorator lines removed, macros not yet expanded
    keys: list[tuple[str, str]]  # (as written, expanded and trimmed); empty expansions dropped
    secondary: list[tuple[str, str]]
    groups: tuple[str, ...]


@dataclass
class _Match:
    candidate: _Candidate
    kind: str  # constant | decorator | key | secondary | recursion
    key: str | None = None
    matched_in: MatchSource | None = None
    logic: str | None = None
    secondary_found: tuple[str, ...] = ()


_DECISIVE = {"group_lost", "probability", "over_budget"}  # decided after a match; a later non-match does not undo it


@dataclass
class _KeywordScan:
    book: WorldBook
    candidates: list[_Candidate]
    scanner: _Scanner
    budget: int
    encoding: str
    generation: str
    chat_length: int
    macros: MacroContext
    activated: dict[Any, tuple[_Match, str, int]] = field(default_factory=dict)  # uid -> (match, content, pass)
    outcome: dict[Any, SkipReason] = field(default_factory=dict)
    failed_probability: set[Any] = field(default_factory=set)
    overflowed: bool = False
    passes: int = 0

    def skip(self, uid: Any, reason: SkipReason) -> None:
        # Keep the first decisive reason (it names the winner or the token count): a later pass only repeats it.
        previous = self.outcome.get(uid)
        if previous is not None and previous.kind in _DECISIVE and (
                reason.kind not in _DECISIVE or reason.kind == previous.kind):
            return
        self.outcome[uid] = reason

    def run(self) -> None:
        book = self.book
        levels = sorted({_delay_level(c.entry) for c in self.candidates if _delay_level(c.entry)})
        current_level = levels.pop(0) if levels else 0
        state = _ScanState.INITIAL
        all_activated_text = ""
        while state:
            if book.max_recursion_steps and book.max_recursion_steps <= self.passes:
                break
            self.passes += 1
            matches = self.scan(state, current_level)
            matches = self.inclusion_groups(matches, state)
            text_tokens = count_tokens(all_activated_text, self.encoding)
            new_content = ""
            passed: list[tuple[_Match, str]] = []
            for match in matches:
                entry = match.candidate.entry
                if entry.use_probability and entry.probability != 100 and entry.probability < PREVIEW_ROLL:
                    self.failed_probability.add(entry.uid)
                    self.skip(entry.uid, self.matched_skip(
                        match, "probability", probability=entry.probability,
                        message=f"probability {entry.probability}%: the preview rolls {PREVIEW_ROLL} (the more "
                                f"likely outcome) and the entry does not activate"))
                    continue
                content = expand_text_macros(match.candidate.raw_content, self.macros).text
                passed.append((match, content))
                new_content += content + "\n"
                if entry.ignore_budget:
                    self.activate(match, content)
                    continue
                if self.overflowed:
                    self.skip(entry.uid, self.matched_skip(
                        match, "over_budget", budget=self.budget,
                        message=f"the world info budget ({self.budget} tokens) was already reached"))
                    continue
                tokens = text_tokens + count_tokens(new_content, self.encoding)
                if tokens >= self.budget:
                    self.overflowed = True
                    self.skip(entry.uid, self.matched_skip(
                        match, "over_budget", budget=self.budget, tokens=tokens,
                        message=f"over the world info budget: {tokens} tokens >= {self.budget}"))
                    continue
                self.activate(match, content)
            # As in SillyTavern, an entry that passed its roll feeds recursion even when the budget refused it (only
            # a later delay-level or min-activation pass can read it: overflow stops normal recursion).
            for_recursion = [(m.candidate.entry.uid, content) for m, content in passed
                             if not m.candidate.entry.prevent_recursion]

            following = None
            if book.recursive and not self.overflowed and for_recursion:
                following = _ScanState.RECURSION
            if (book.recursive and not self.overflowed and state == _ScanState.MIN_ACTIVATIONS
                    and self.scanner.recursion):
                following = _ScanState.RECURSION
            if following is None and book.min_activations > 0 and len(self.activated) < book.min_activations:
                depth = self.scanner.depth()
                beyond = (book.min_activations_depth_max > 0 and depth > book.min_activations_depth_max) or (
                    depth > self.chat_length)
                if not beyond:
                    following = _ScanState.MIN_ACTIVATIONS
                    self.scanner.skew += 1
            if following is None and levels:
                following = _ScanState.RECURSION
                current_level = levels.pop(0)
            state = following
            if state:
                self.scanner.add_recursion(for_recursion)
                all_activated_text = "\n".join(c for _uid, c in for_recursion) + "\n" + all_activated_text

    def skipper(self, uid: Any) -> Any:
        def skip(kind: SkipKind, message: str, **fields: Any) -> None:
            self.skip(uid, SkipReason(kind=kind, message=message, scan_pass=self.passes, **fields))

        return skip

    def activate(self, match: _Match, content: str) -> None:
        self.activated[match.candidate.entry.uid] = (match, content, self.passes)
        self.outcome.pop(match.candidate.entry.uid, None)

    def matched_skip(self, match: _Match, kind: SkipKind, **fields: Any) -> SkipReason:
        return SkipReason(kind=kind, scan_pass=self.passes, key=match.key, matched_in=match.matched_in, **fields)

    def scan(self, state: str, current_level: int) -> list[_Match]:
        matches = []
        for candidate in self.candidates:
            entry = candidate.entry
            uid = entry.uid
            if uid in self.failed_probability or uid in self.activated:
                continue
            skip = self.skipper(uid)
            if not entry.enabled:
                skip("disabled", "the entry is disabled")
                continue
            if entry.triggers and self.generation not in entry.triggers:
                skip("trigger", f"only for generation types {', '.join(entry.triggers)}; this is "
                                f"'{self.generation}'")
                continue
            if entry.delay and self.chat_length < entry.delay:
                skip("delayed", f"delayed until the chat has {entry.delay} messages (it has {self.chat_length})")
                continue
            level = _delay_level(entry)
            if state != _ScanState.RECURSION and level:
                skip("delayed_until_recursion", f"waits for recursion level {level}; no recursion pass reached it")
                continue
            if state == _ScanState.RECURSION and level > current_level:
                skip("delayed_until_recursion", f"waits for recursion level {level}; the scan stopped at level "
                                                f"{current_level}")
                continue
            if state == _ScanState.RECURSION and self.book.recursive and entry.exclude_recursion:
                found = self.primary(candidate, state)
                if found is not None and found[1] is not None and found[1].kind == "recursion":
                    skip("recursion_excluded", f"key '{found[0]}' is in the recursion buffer, which this entry "
                                               f"does not scan", key=found[0], matched_in=found[1])
                continue
            if "@@activate" in candidate.decorators:
                matches.append(_Match(candidate, "decorator"))
                continue
            if "@@dont_activate" in candidate.decorators:
                skip("decorator", "the content starts with @@dont_activate")
                continue
            if entry.constant:
                matches.append(_Match(candidate, "constant"))
                continue
            if not entry.keys:
                skip("no_keys", "the entry has no keys and is not constant")
                continue
            found = self.primary(candidate, state)
            if found is None:
                depth = entry.scan_depth if entry.scan_depth is not None else self.scanner.depth()
                where = "the scan depth is 0" if depth <= 0 else f"the last {depth} message(s)"
                skip("no_match", f"no primary key found ({where})")
                continue
            key, source = found
            kind = "recursion" if source is not None and source.kind == "recursion" else "key"
            if not (entry.selective and entry.secondary_keys):  # a key that expands to "" still counts, unfound
                matches.append(_Match(candidate, kind, key, source))
                continue
            logic = entry.selective_logic
            buffer = self.scanner.buffer(entry, state)
            case = self.case_sensitive(entry)
            text = buffer.text(case)[0] if buffer else ""
            found_secondary = tuple(written for written, needle in candidate.secondary
                                    if find_key(text, needle, case_sensitive=case,
                                                match_whole_words=self.whole_words(entry)) is not None)
            every = len(found_secondary) == len(entry.secondary_keys)
            passed = {"and_any": bool(found_secondary), "not_all": not every, "not_any": not found_secondary,
                      "and_all": every}[logic]
            if not passed:
                shown = ", ".join(repr(k) for k in found_secondary) or "none"
                skip("secondary_failed", f"primary key '{key}' matched but the secondary keys fail {logic} "
                                         f"(found: {shown})", key=key, matched_in=source)
                continue
            matches.append(_Match(candidate, "recursion" if kind == "recursion" else "secondary", key, source,
                                  logic, found_secondary))
        return matches

    def case_sensitive(self, entry: WorldBookEntry) -> bool:
        return entry.case_sensitive if entry.case_sensitive is not None else self.book.case_sensitive

    def whole_words(self, entry: WorldBookEntry) -> bool:
        return entry.match_whole_words if entry.match_whole_words is not None else self.book.match_whole_words

    def primary(self, candidate: _Candidate, state: str) -> tuple[str, MatchSource | None] | None:
        """The first primary key (in the entry's order) found in its buffer, and where it was found."""
        buffer = self.scanner.buffer(candidate.entry, state)
        if buffer is None:
            return None
        case = self.case_sensitive(candidate.entry)
        whole = self.whole_words(candidate.entry)
        for written, needle in candidate.keys:
            regex = parse_regex_key(needle) is not None
            text = buffer.text(True if regex else case)[0]
            offset = find_key(text, needle, case_sensitive=case, match_whole_words=whole)
            if offset is not None:
                return written, buffer.source_at(offset, True if regex else case)
        return None

    def score(self, candidate: _Candidate, state: str) -> int:
        """SillyTavern's group score: primary keys found, plus secondary keys found under and_any (and under and_all
        when all are found)."""
        entry = candidate.entry
        buffer = self.scanner.buffer(entry, state)
        if buffer is None or not entry.keys:
            return 0
        case, whole = self.case_sensitive(entry), self.whole_words(entry)

        def found(keys: list[tuple[str, str]]) -> int:
            return sum(find_key(buffer.text(True if parse_regex_key(n) else case)[0], n, case_sensitive=case,
                                match_whole_words=whole) is not None for _w, n in keys)

        primary, secondary = found(candidate.keys), found(candidate.secondary)
        if entry.secondary_keys and entry.selective_logic == "and_any":
            return primary + secondary
        if entry.secondary_keys and entry.selective_logic == "and_all" and secondary == len(entry.secondary_keys):
            return primary + secondary
        return primary

    def inclusion_groups(self, matches: list[_Match], state: str) -> list[_Match]:
        """One entry per inclusion group (sillytavern.md §7.3), decided deterministically: see the module doc."""
        groups: dict[str, list[_Match]] = {}
        for match in matches:
            for group in match.candidate.groups:
                groups.setdefault(group, []).append(match)
        if not groups:
            return matches
        names = [g for g in groups if g.isascii() and g.isdecimal() and (g == "0" or not g.startswith("0"))]
        names = sorted(names, key=int) + [g for g in groups if g not in names]  # JavaScript's object key order
        removed: set[int] = set()

        def lose(match: _Match, group: str, winner: _Match | None, why: str) -> None:
            if id(match) in removed:
                return
            removed.add(id(match))
            self.skip(match.candidate.entry.uid, self.matched_skip(
                match, "group_lost", group=group, winner=winner.candidate.entry.uid if winner else None,
                message=f"lost inclusion group '{group}' {why}"))

        for name in names:  # group scoring first, as SillyTavern filters losers by score before choosing
            members = groups[name]
            scored = [m for m in members if (m.candidate.entry.use_group_scoring
                                             if m.candidate.entry.use_group_scoring is not None
                                             else self.book.use_group_scoring)]
            if not scored:
                continue
            scores = {id(m): self.score(m.candidate, state) for m in members}
            best = max(scores.values())
            losers = [m for m in scored if scores[id(m)] < best and id(m) not in removed]
            for match in losers:
                lose(match, name, None, f"with a lower key score ({scores[id(match)]} < {best})")
            groups[name] = [m for m in members if all(m is not loser for loser in losers)]
        active_groups = {g for match, _c, _p in self.activated.values() for g in match.candidate.groups}
        for name in names:
            members = groups[name]
            if name in active_groups:
                for match in members:
                    lose(match, name, None, "(the group already activated an entry in an earlier pass)")
                continue
            if len(members) <= 1:
                continue
            overrides = [m for m in members if m.candidate.entry.group_override]
            if overrides:
                winner = max(overrides, key=lambda m: (m.candidate.entry.order, -overrides.index(m)))
                why = f"to entry {winner.candidate.entry.uid} (group override with the highest order)"
            else:
                winner = max(members, key=lambda m: (m.candidate.entry.group_weight, -members.index(m)))
                why = f"to entry {winner.candidate.entry.uid} (the most likely winner: highest group weight)"
            for match in members:
                if match is not winner:
                    lose(match, name, winner, why)
        return [m for m in matches if id(m) not in removed]


def _activation_reason(match: _Match, scan_pass: int) -> ActivationReason:
    entry = match.candidate.entry
    probability = entry.probability if entry.use_probability and entry.probability != 100 else None
    where = _describe_source(match.matched_in)
    messages = {
        "constant": "constant entry",
        "decorator": "the content starts with @@activate",
        "key": f"key '{match.key}' found in {where}",
        "secondary": f"key '{match.key}' found in {where}; secondary keys pass {match.logic}",
        "recursion": f"key '{match.key}' found in {where}",
    }
    message = messages[match.kind]
    if match.kind == "recursion" and match.logic:
        message += f"; secondary keys pass {match.logic}"
    if probability is not None:
        message += f"; probability {probability}% passes the preview's roll of {PREVIEW_ROLL}"
    return ActivationReason(kind=match.kind, message=message, scan_pass=scan_pass, key=match.key,
                            matched_in=match.matched_in, selective_logic=match.logic,
                            secondary_keys=match.secondary_found, probability=probability)


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
        if entry.sticky:
            notes.append(f"entry {entry.uid}: sticky ({entry.sticky}) is not evaluated in the preview")
        if entry.cooldown:
            notes.append(f"entry {entry.uid}: cooldown ({entry.cooldown}) is not evaluated in the preview")
        if entry.character_filter and (entry.character_filter.get("names") or entry.character_filter.get("tags")):
            notes.append(f"entry {entry.uid}: the character filter is not evaluated in the preview")
        for key in (*entry.keys, *entry.secondary_keys):
            written = _REGEX_KEY.match(key.strip())
            if written and not _UNESCAPED_SLASH.search(written.group(1)) and parse_regex_key(key.strip()) is None:
                notes.append(f"entry {entry.uid}: key {key!r} does not compile as a Python regex; matched as text")
    return tuple(notes)


def activate_world_info(
    book: WorldBook | Mapping[str, Any],
    *,
    chat: Sequence[Mapping[str, Any]],
    names: Mapping[str, Any],
    max_context: int,
    encoding: str = "o200k_base",
    global_scan_data: Mapping[str, Any] | None = None,
    scan_injections: Sequence[str] = (),
    generation: str = "normal",
) -> WorldInfoActivation:
    """Which entries of `book` SillyTavern would activate for `chat` (oldest first, the current input last).

    `names`: {"user", "char"} for macros and name prefixes. `max_context`: the budget base (SillyTavern passes the
    preset's context minus its reply tokens). `global_scan_data`: texts entries may opt into (persona_description,
    character_description, character_personality, character_depth_prompt, scenario, creator_notes; camelCase
    accepted). `scan_injections`: extension prompts that allow world info scanning (author's note with
    allow_wi_scan, ...), scanned by every entry. `generation`: the generation type, for entry `triggers`."""
    book = _book(book)
    uids = [e.uid for e in book.entries]
    if len(set(uids)) != len(uids):
        twice = next(uid for uid in uids if uids.count(uid) > 1)
        raise _invalid("book.entries", "entries with distinct uids", f"uid {twice!r} used twice")
    if not isinstance(names, Mapping):
        raise _invalid("names", "an object with user and char", names)
    if isinstance(max_context, bool) or not isinstance(max_context, int) or max_context < 0:
        raise _invalid("max_context", "a non-negative integer", max_context)
    if encoding not in ENCODINGS:
        raise _invalid("encoding", "one of " + ", ".join(ENCODINGS), encoding)
    if generation not in GENERATION_TYPES:
        raise _invalid("generation", "one of " + ", ".join(GENERATION_TYPES), generation)
    if isinstance(scan_injections, (str, bytes)) or not all(isinstance(t, str) for t in scan_injections):
        raise _invalid("scan_injections", "a list of strings", scan_injections)
    user, char = _name(names, "user", "User"), _name(names, "char", "")
    messages = _chat_texts(chat, user, char, book.include_names)
    scan_data = _scan_data(global_scan_data)
    last = {role: next((m.get("content") or "" for m in reversed(chat) if m.get("role") == role), "")
            for role in ("user", "assistant")}

    def macros() -> MacroContext:
        return MacroContext(user=user, char=char, last_user_message=last["user"],
                            last_char_message=last["assistant"])

    # §7.2: chat lore first, then persona lore, then character lore and selected books in the book's strategy; each
    # by order, descending; stable, so ties keep the book's key order
    lore_rank = {"chat": 0, "persona": 1, **{
        "evenly": {"character": 2, "global": 2}, "character_first": {"character": 2, "global": 3},
        "global_first": {"global": 2, "character": 3}}[book.character_strategy]}
    ordered = sorted(_js_key_order(book.entries), key=lambda e: (lore_rank[e.lore], -e.order))

    def expand(keys: tuple[str, ...]) -> list[tuple[str, str]]:
        # (as written, macro-expanded and trimmed); a key that expands to "" is skipped, as in SillyTavern.
        expanded = [(key, expand_text_macros(key, macros()).text if "{{" in key else key) for key in keys]
        return [(key, text.strip()) for key, text in expanded if text]

    candidates = []
    for entry in ordered:
        decorators, raw = _decorators(entry.content)
        groups = tuple(g for g in re.split(r",\s*", entry.group) if g) if entry.group else ()
        candidates.append(_Candidate(entry, decorators, raw, expand(entry.keys), expand(entry.secondary_keys),
                                     groups))

    if book.activation == "all":
        active = []
        context = macros()  # one context for every entry: {{setvar}} in one is seen by the next, as in SillyTavern
        for candidate in candidates:
            if candidate.entry.enabled:
                content = expand_text_macros(candidate.raw_content, context).text
                active.append((candidate, _Match(candidate, "all"), content, 1))
        reasons = {id(m): ActivationReason(kind="all", message="enabled: chosen by the host (activation 'all')")
                   for _c, m, _t, _p in active}
        skipped = {e.uid: SkipReason(kind="disabled", message="the entry is disabled")
                   for e in book.entries if not e.enabled}
        return _result(book, "all", active, reasons, skipped, passes=0, budget=None)

    scan = _KeywordScan(
        book=book, candidates=candidates, budget=world_info_budget(book, max_context), encoding=encoding,
        generation=generation, chat_length=len(chat), macros=macros(),
        scanner=_Scanner(messages=messages, chat_length=len(chat), scan_data=scan_data,
                         injections=list(scan_injections), base_depth=book.scan_depth),
    )
    scan.run()
    by_uid = {c.entry.uid: c for c in candidates}
    active = [(by_uid[uid], match, content, at) for uid, (match, content, at) in scan.activated.items()]
    reasons = {id(m): _activation_reason(m, at) for _c, m, _t, at in active}
    skipped = dict(scan.outcome)
    used = count_tokens("".join(content + "\n" for _c, _m, content, _p in active), encoding) if active else 0
    budget = WorldInfoBudget(max_context=max_context, percent=book.budget_percent, cap=book.budget_cap,
                             limit=scan.budget, used=used, overflowed=scan.overflowed)
    return _result(book, "keywords", active, reasons, skipped, passes=scan.passes, budget=budget)


def _result(book: WorldBook, mode: Literal["all", "keywords"], active: list[tuple[_Candidate, _Match, str, int]],
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
        active=tuple(_emission_order(entries)),
        skipped=tuple(SkippedEntry(uid=e.uid, comment=e.comment, position=e.position, order=e.order,
                                   reason=skipped[e.uid]) for e in book.entries if e.uid in skipped),
        scan_passes=passes,
        budget=budget,
        notes=_notes(book),
    )


# -------------------------------------------------------------------------------------------------- outputs


def _by_order(active: Sequence[ActiveEntry]) -> list[ActiveEntry]:
    """SillyTavern's final sort: order descending, stable over activation order."""
    return sorted(active, key=lambda a: (-a.order, a.activation_index))


def _depth_groups(entries: Sequence[ActiveEntry]) -> list[tuple[int | None, str, list[ActiveEntry]]]:
    # The first (highest order) entry creates a group with ITS depth; others join a group whose stored depth
    # equals theirs (missing = 4) and are put in front. A group created with no depth is never joined (§11.7).
    groups: list[tuple[int | None, str, list[ActiveEntry]]] = []
    for entry in entries:
        wanted = entry.depth if entry.depth is not None else DEFAULT_DEPTH
        group = next((g for g in groups if g[0] == wanted and g[1] == entry.role), None)
        if group is not None:
            group[2].insert(0, entry)
        else:
            groups.append((entry.depth, entry.role, [entry]))
    return groups


def _emission_order(active: Sequence[ActiveEntry]) -> list[ActiveEntry]:
    ordered = _by_order(active)
    sequence: list[ActiveEntry] = []
    for number in sorted(WORLD_POSITION_BY_NUMBER):
        position = WORLD_POSITION_BY_NUMBER[number]
        here = [a for a in ordered if a.position == position]
        if position == "before_example_messages":
            sequence += here  # unshift, then unshift again: descending
        elif position == "outlet":
            names = list(dict.fromkeys(a.outlet_name for a in here))
            sequence += [a for name in names for a in here if a.outlet_name == name]  # push: descending
        elif position == "at_depth":
            sequence += [a for _d, _r, members in _depth_groups(here) for a in members]
        else:
            sequence += list(reversed(here))  # unshift: ascending, equal orders later-activated first
    return sequence


def world_info_outputs(activation: WorldInfoActivation) -> WorldInfoOutputs:
    """SillyTavern's world info outputs (sillytavern.md §7.5) built from an activation."""
    ordered: list[ActiveEntry] = []
    unplaced: list[UnplacedEntry] = []
    for entry in _by_order(activation.active):
        if not entry.content:
            unplaced.append(UnplacedEntry(uid=entry.uid, reason="empty_content",
                                          message="active, but its content is empty: SillyTavern emits nothing"))
            continue
        if entry.position == "outlet" and not entry.outlet_name:
            unplaced.append(UnplacedEntry(uid=entry.uid, reason="outlet_without_name",
                                          message="position outlet without an outlet name: nothing can pull it"))
            continue
        ordered.append(entry)

    def placed(entries: Sequence[ActiveEntry]) -> tuple[PlacedText, ...]:
        return tuple(PlacedText(uid=e.uid, content=e.content) for e in entries)

    def ascending(position: str) -> tuple[PlacedText, ...]:
        return placed([e for e in reversed(ordered) if e.position == position])

    outlets: dict[str, list[ActiveEntry]] = {}
    for entry in ordered:
        if entry.position == "outlet":
            outlets.setdefault(entry.outlet_name, []).append(entry)
    before, after = ascending("before"), ascending("after")
    return WorldInfoOutputs(
        before="\n".join(p.content for p in before),
        after="\n".join(p.content for p in after),
        before_entries=before,
        after_entries=after,
        an_top=ascending("before_author_note"),
        an_bottom=ascending("after_author_note"),
        examples_top=placed([e for e in ordered if e.position == "before_example_messages"]),
        examples_bottom=ascending("after_example_messages"),
        depth=tuple(
            DepthGroup(depth=depth, role=role, content="\n".join(e.content for e in members),
                       entries=placed(members))
            for depth, role, members in _depth_groups([e for e in ordered if e.position == "at_depth"])
        ),
        outlets={name: "\n".join(e.content for e in members) for name, members in outlets.items()},
        outlet_entries={name: placed(members) for name, members in outlets.items()},
        unplaced=tuple(unplaced),
    )


def format_world_info(value: str | Sequence[str], wi_format: str) -> str:
    """The preset's `wi_format` wrapper (sillytavern.md §4.1): "" for no world info, the text itself when the
    format is blank, else the format with every "{0}" replaced by the text. A list is joined with "\\n" first."""
    text = value if isinstance(value, str) else "\n".join(value)
    if not text:
        return ""
    if not wi_format.strip():
        return text
    return wi_format.replace("{0}", text)


def author_note_with_world_info(note: str, outputs: WorldInfoOutputs) -> str:
    """The author's note with the world info entries placed above and below it, for a turn where the note is
    inserted (sillytavern.md §7.5): top entries, note, bottom entries joined with "\\n", then one leading and one
    trailing newline removed."""
    text = "\n".join(p.content for p in outputs.an_top) + "\n" + note + "\n" + "\n".join(
        p.content for p in outputs.an_bottom)
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text
