"""The world info keyword scan: SillyTavern 1.18's passes over a book's candidates (sillytavern.md §7.2–§7.4).

* Passes: the first scan, then recursion passes over the contents of newly active entries (unless
  `prevent_recursion`), `delay_until_recursion` levels, and `min_activations` passes that widen the scan depth by one
  message, up to `max_recursion_steps` passes when that is > 0.
* Each pass: the new matches (candidate order) go through inclusion groups, the probability roll and the token
  budget (`round(max_context * budget_percent / 100) or 1`, capped by `budget_cap` when > 0), each text counted as
  one system message of the chat-completion counter (`world_info_tokens`). An entry that would reach the budget
  is skipped, and so is every later entry that does not `ignore_budget`; recursion stops.

Rolls come from `worldinfo_chance`: without a seed they are deterministic and show the more likely outcome (the
probability roll at its middle, 50, so `probability` >= 50 passes; an unprioritized group to its highest
`group_weight`); with a seed they are drawn as SillyTavern draws them.

Cost: a pass reads each buffer once for all plain keys (`worldinfo_key_index`), and looks for a candidate's keys
one by one only when one of them occurs. A candidate a recursion pass found nothing for is "settled": the next
recursion pass's buffer is the same text with the new recursion text appended, so it is visited again only when one
of its keys occurs in that new text (its skip reason is carried to the pass it would have been recorded in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assembly.macros import MacroContext, expand_text_macros
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.pattern_matcher import PatternRuns
from assembly.sillytavern.worldinfo_budget import PassBudget
from assembly.sillytavern.worldinfo_buffer import ScanBuffer, ScanBuffers, ScanState
from assembly.sillytavern.worldinfo_chance import PREVIEW_ROLL, Chance
from assembly.sillytavern.worldinfo_groups import filter_inclusion_groups, object_key_order
from assembly.sillytavern.worldinfo_key_index import KeyIndex
from assembly.sillytavern.worldinfo_keys import find_key, parse_regex_key
from assembly.sillytavern.worldinfo_models import MatchSource, SkipKind, SkipReason
from assembly.sillytavern.worldinfo_timed import TimedEffects, timed_skip_message


def javascript_key_order(entries: Sequence[WorldBookEntry]) -> list[WorldBookEntry]:
    """The book's entries as JavaScript's Object.keys lists them: integer keys ascending, then the rest as given."""
    keys = [str(e.uid) for e in entries]
    rank = {key: i for i, key in enumerate(object_key_order(list(dict.fromkeys(keys))))}
    return sorted(entries, key=lambda e: rank[str(e.uid)])  # stable: 1 and "1" keep the book's order


def split_decorators(content: str) -> tuple[tuple[str, ...], str]:
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


def _matches_card_fields(entry: WorldBookEntry) -> bool:
    return bool(entry.match_persona_description or entry.match_character_description
                or entry.match_character_personality or entry.match_character_depth_prompt or entry.match_scenario
                or entry.match_creator_notes)


def _macro_syntax(key: str) -> bool:
    """Whether a key may read differently through SillyTavern's macros (braces, or a legacy `<USER>`-style token)."""
    return "{{" in key or "<" in key


@dataclass
class Candidate:
    entry: WorldBookEntry
    decorators: tuple[str, ...]
    raw_content: str  # decorator lines removed, macros not yet expanded
    keys: list[tuple[str, str]]  # (as written, expanded and trimmed); empty expansions dropped
    secondary: list[tuple[str, str]]
    groups: tuple[str, ...]
    # keys as written, each put through the generation's own macros (SillyTavern's substituteParams) when the scan
    # reaches it: the primary keys until one is found, the secondary ones as the entry's logic reads them
    lazy_keys: bool = False


@dataclass
class Match:
    candidate: Candidate
    kind: str  # constant | decorator | key | secondary | recursion
    key: str | None = None
    matched_in: MatchSource | None = None
    logic: str | None = None
    secondary_found: tuple[str, ...] = ()


_DECISIVE = {"group_lost", "probability", "over_budget"}  # decided after a match; a later non-match does not undo it


@dataclass
class KeywordScan:
    """One keyword scan of a book: `run()` fills `activated` (uid -> match, content, pass) and `outcome` (uid ->
    why it was skipped)."""

    book: WorldBook
    candidates: list[Candidate]
    buffers: ScanBuffers
    budget: int
    encoding: str
    generation: str
    chat_length: int  # the scanned chat (min-activation passes stop beyond it)
    timed_chat_length: int  # SillyTavern's whole chat, which entry delays count (a swipe's message included)
    macros: MacroContext
    timed: TimedEffects | None = None  # sticky, cooldown and delay (worldinfo_timed); None: delay alone
    chance: Chance = field(default_factory=Chance)  # probability rolls and group picks (worldinfo_chance)
    rolls: dict[Any, float] = field(default_factory=dict)  # uid -> the probability roll that decided it
    activated: dict[Any, tuple[Match, str, int]] = field(default_factory=dict)  # uid -> (match, content, pass)
    outcome: dict[Any, SkipReason] = field(default_factory=dict)
    failed_probability: set[Any] = field(default_factory=set)
    overflowed: bool = False
    passes: int = 0
    patterns: PatternRuns = field(default_factory=PatternRuns)  # this request's regex key runs and their limits
    _index: KeyIndex | None = None
    _settled: set[int] = field(default_factory=set)  # candidate indices (see the module doc)
    _present: dict[int, tuple[ScanBuffer, set[int]]] = field(default_factory=dict)  # id(buffer) -> candidates
    _positions: dict[int, int] = field(default_factory=dict)  # id(candidate) -> its index
    _woken: set[int] = field(default_factory=set)  # settled candidates whose keys occur in this pass's new text
    _closed_groups: set[str] = field(default_factory=set)  # the inclusion groups of the activated entries
    # (candidate index, primary or secondary, key as written) -> the key as the generation's macros first read it
    _keys_read: dict[tuple[int, str, str], str | None] = field(default_factory=dict)

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
        state = ScanState.INITIAL
        all_activated_text = ""
        counted_activation: tuple[str, int] | None = None  # the last activated text counted, with its tokens
        self._index = KeyIndex([None if c.lazy_keys and any(_macro_syntax(w) for w, _n in c.keys)
                                else [needle for _w, needle in c.keys] for c in self.candidates])
        self._positions = {id(c): i for i, c in enumerate(self.candidates)}
        while state:
            if book.max_recursion_steps and book.max_recursion_steps <= self.passes:
                break
            if state != ScanState.RECURSION:
                self.unsettle(self._settled)
            self._present.clear()
            self.passes += 1
            matches = self.scan(state, current_level)
            matches.sort(key=lambda m: not self.sticky(m.candidate.entry))  # sticky entries first, then candidates
            matches = self.inclusion_groups(matches, state)
            pass_budget = PassBudget(all_activated_text, self.encoding, self.budget, counted_activation)
            passed: list[tuple[Match, str]] = []
            for match in matches:
                entry = match.candidate.entry
                if self.rolled_out(match):
                    continue
                content = expand_text_macros(match.candidate.raw_content, self.macros).text
                passed.append((match, content))
                pass_budget.add(content)
                if entry.ignore_budget:
                    self.activate(match, content)
                    continue
                if self.overflowed:
                    self.skip(entry.uid, self.matched_skip(
                        match, "over_budget", budget=self.budget,
                        message=f"the world info budget ({self.budget} tokens) was already reached"))
                    continue
                tokens = pass_budget.reached()
                if tokens is not None:
                    self.overflowed = True
                    self.skip(entry.uid, self.matched_skip(
                        match, "over_budget", budget=self.budget, tokens=tokens,
                        message=f"over the world info budget: {tokens} tokens >= {self.budget}"))
                    continue
                self.activate(match, content)
            if pass_budget.before_text_tokens is not None:
                counted_activation = (all_activated_text, pass_budget.before_text_tokens)
            # As in SillyTavern, an entry that passed its roll feeds recursion even when the budget refused it (only
            # a later delay-level or min-activation pass can read it: overflow stops normal recursion).
            for_recursion = [(m.candidate.entry.uid, content) for m, content in passed
                             if not m.candidate.entry.prevent_recursion]

            following = None
            if book.recursive and not self.overflowed and for_recursion:
                following = ScanState.RECURSION
            if (book.recursive and not self.overflowed and state == ScanState.MIN_ACTIVATIONS
                    and self.buffers.recursion):
                following = ScanState.RECURSION
            if following is None and book.min_activations > 0 and len(self.activated) < book.min_activations:
                depth = self.buffers.depth()
                beyond = (book.min_activations_depth_max > 0 and depth > book.min_activations_depth_max) or (
                    depth > self.chat_length)
                if not beyond:
                    following = ScanState.MIN_ACTIVATIONS
                    self.buffers.skew += 1
            if following is None and levels:
                following = ScanState.RECURSION
                current_level = levels.pop(0)
            state = following
            if state:
                self.buffers.add_recursion(for_recursion)
                all_activated_text = "\n".join(c for _uid, c in for_recursion) + "\n" + all_activated_text
        self.unsettle(self._settled)

    def unsettle(self, indices: set[int]) -> None:
        """Settled candidates visited again: their no-match reason as the last pass that skipped them recorded it."""
        for index in list(indices):
            uid = self.candidates[index].entry.uid
            reason = self.outcome.get(uid)
            if reason is not None and reason.kind == "no_match" and reason.scan_pass != self.passes:
                self.outcome[uid] = reason.model_copy(update={"scan_pass": self.passes})
            self._settled.discard(index)

    def visiting(self, state: str) -> list[int]:
        """The candidates this pass looks at, in candidate order: all but the settled ones whose keys are absent
        from the newest recursion text."""
        self._woken = set()
        if not self._settled:
            return list(range(len(self.candidates)))
        assert self._index is not None and state == ScanState.RECURSION
        woken = self._settled & self._index.candidates_in(self.buffers.recursion[-1].text)
        self.unsettle(woken)
        self._woken = woken
        return [i for i in range(len(self.candidates)) if i not in self._settled]

    def rolled_out(self, match: Match) -> bool:
        """SillyTavern's probability roll (a sticky entry keeps its place without one): True when it fails."""
        entry = match.candidate.entry
        if not entry.use_probability or entry.probability == 100 or self.sticky(entry):
            return False
        roll = self.chance.probability_roll()
        self.rolls[entry.uid] = roll
        if roll <= entry.probability:
            return False
        self.failed_probability.add(entry.uid)
        rolled = (f"rolled {roll:.2f}" if self.chance.seeded
                  else f"the preview rolls {PREVIEW_ROLL} (the more likely outcome)")
        self.skip(entry.uid, self.matched_skip(
            match, "probability", probability=entry.probability, roll=roll if self.chance.seeded else None,
            message=f"probability {entry.probability}%: {rolled} and the entry does not activate"))
        return True

    def sticky(self, entry: WorldBookEntry) -> bool:
        return self.timed is not None and self.timed.is_sticky(entry)

    def skipper(self, uid: Any) -> Any:
        def skip(kind: SkipKind, message: str, **fields: Any) -> None:
            self.skip(uid, SkipReason(kind=kind, message=message, scan_pass=self.passes, **fields))

        return skip

    def activate(self, match: Match, content: str) -> None:
        self.activated[match.candidate.entry.uid] = (match, content, self.passes)
        self._closed_groups.add(match.candidate.entry.group)
        self.outcome.pop(match.candidate.entry.uid, None)

    def matched_skip(self, match: Match, kind: SkipKind, **fields: Any) -> SkipReason:
        return SkipReason(kind=kind, scan_pass=self.passes, key=match.key, matched_in=match.matched_in, **fields)

    def scan(self, state: str, current_level: int) -> list[Match]:
        matches = []
        for index in self.visiting(state):
            candidate = self.candidates[index]
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
            if entry.delay and self.timed_chat_length < entry.delay:
                skip("delayed", f"delayed until the chat has {entry.delay} messages (it has "
                                f"{self.timed_chat_length})")
                continue
            sticky = self.sticky(entry)
            if not sticky and self.timed is not None and self.timed.is_cooling(entry):
                skip("cooldown", timed_skip_message(self.timed, entry))
                continue
            level = 0 if sticky else _delay_level(entry)
            if state != ScanState.RECURSION and level:
                skip("delayed_until_recursion", f"waits for recursion level {level}; no recursion pass reached it")
                continue
            if state == ScanState.RECURSION and level > current_level:
                skip("delayed_until_recursion", f"waits for recursion level {level}; the scan stopped at level "
                                                f"{current_level}")
                continue
            if state == ScanState.RECURSION and self.book.recursive and entry.exclude_recursion and not sticky:
                found = self.primary(candidate, state, substitute=False)
                if found is not None and found[1] is not None and found[1].kind == "recursion":
                    skip("recursion_excluded", f"key '{found[0]}' is in the recursion buffer, which this entry "
                                               f"does not scan", key=found[0], matched_in=found[1])
                continue
            if "@@activate" in candidate.decorators:
                matches.append(Match(candidate, "decorator"))
                continue
            if "@@dont_activate" in candidate.decorators:
                skip("decorator", "the content starts with @@dont_activate")
                continue
            if entry.constant:
                matches.append(Match(candidate, "constant"))
                continue
            if sticky:
                matches.append(Match(candidate, "sticky"))
                continue
            if not entry.keys:
                skip("no_keys", "the entry has no keys and is not constant")
                continue
            found = self.primary(candidate, state)
            if found is None:
                depth = entry.scan_depth if entry.scan_depth is not None else self.buffers.depth()
                where = "the scan depth is 0" if depth <= 0 else f"the last {depth} message(s)"
                skip("no_match", f"no primary key found ({where})")
                # Settled unless a later pass must read it again: an indexed candidate's keys hold no macro (the
                # first substitution is the one kept), but its card fields' persona runs the macros at every pass.
                if state == ScanState.RECURSION and self._index is not None and index in self._index.indexed \
                        and not (candidate.lazy_keys and _matches_card_fields(entry)):
                    self._settled.add(index)
                continue
            key, source = found
            kind = "recursion" if source is not None and source.kind == "recursion" else "key"
            if not (entry.selective and entry.secondary_keys):  # a key that expands to "" still counts, unfound
                matches.append(Match(candidate, kind, key, source))
                continue
            match = self.secondary(candidate, state, key, source, kind)
            if match is None:
                continue
            matches.append(match)
        return matches

    def secondary(self, candidate: Candidate, state: str, key: str, source: Any, kind: str) -> Match | None:
        """The match of a selective entry whose primary `key` was found: its secondary keys pass its logic, or it is
        skipped (None)."""
        entry = candidate.entry
        logic = entry.selective_logic
        buffer = self.buffers.buffer(entry, state)
        if candidate.lazy_keys:
            found_secondary, passed = self.lazy_secondary(candidate, buffer)
        else:
            found_secondary = tuple(written for written, needle in candidate.secondary
                                    if buffer is not None and self.find(buffer, entry, needle) is not None)
            every = len(found_secondary) == len(entry.secondary_keys)
            passed = {"and_any": bool(found_secondary), "not_all": not every, "not_any": not found_secondary,
                      "and_all": every}[logic]
        if not passed:
            shown = ", ".join(repr(k) for k in found_secondary) or "none"
            self.skipper(entry.uid)("secondary_failed", f"primary key '{key}' matched but the secondary keys fail "
                                                       f"{logic} (found: {shown})", key=key, matched_in=source)
            return None
        return Match(candidate, "recursion" if kind == "recursion" else "secondary", key, source, logic,
                     found_secondary)

    def lazy_secondary(self, candidate: Candidate, buffer: ScanBuffer | None) -> tuple[tuple[str, ...], bool]:
        """SillyTavern's secondary keys, each substituted as its loop reaches it: and_any stops at the first found,
        not_all at the first missing. Returns the keys found and whether the logic passed."""
        entry, logic = candidate.entry, candidate.entry.selective_logic
        found: list[str] = []
        every = True
        for written, _needle in candidate.secondary:
            needle = self.substituted(candidate, "secondary", written)
            hit = needle is not None and buffer is not None and self.find(buffer, entry, needle) is not None
            if hit:
                found.append(written)
            every = every and hit
            if (logic == "and_any" and hit) or (logic == "not_all" and not hit):
                return tuple(found), True
        return tuple(found), (logic == "not_any" and not found) or (logic == "and_all" and every)

    def substituted(self, candidate: Candidate, kind: str, written: str) -> str | None:
        """A key through the generation's macros, trimmed; None when they leave nothing (the key is skipped).
        SillyTavern substitutes an entry's key the first time the scan tries it; a later pass (recursion, minimum
        activations) reads it as it came out then, its macros not run again (st-macros: a counter in the persona
        that every legacy substituteParams call runs)."""
        slot = (self._positions.get(id(candidate), id(candidate)), kind, written)
        if slot in self._keys_read:
            return self._keys_read[slot]
        text = self.macros.st.evaluate(written) if written else ""
        value = self._keys_read[slot] = text.strip() if text else None
        return value

    def case_sensitive(self, entry: WorldBookEntry) -> bool:
        return entry.case_sensitive if entry.case_sensitive is not None else self.book.case_sensitive

    def whole_words(self, entry: WorldBookEntry) -> bool:
        return entry.match_whole_words if entry.match_whole_words is not None else self.book.match_whole_words

    def primary(self, candidate: Candidate, state: str,
                substitute: bool = True) -> tuple[str, MatchSource | None] | None:
        """The first primary key (in the entry's order) found in its buffer, and where it was found. Keys of the
        generation's macros are substituted one by one up to the one found (`substitute` False: read as written)."""
        buffer = self.buffers.buffer(candidate.entry, state)
        lazy = candidate.lazy_keys and substitute
        if lazy and buffer is not None and _matches_card_fields(candidate.entry):
            self.macros.st.read_persona_scan_data()  # the entry's buffer takes in the fields it matches
        if buffer is None or not self.may_match(candidate, buffer):
            for written, _needle in candidate.keys if lazy else ():
                self.substituted(candidate, "primary", written)  # every key it tries is substituted, found or not
            return None
        for written, needle in candidate.keys:
            if lazy:
                substituted = self.substituted(candidate, "primary", written)
                if substituted is None:
                    continue
                needle = substituted
            offset = self.find(buffer, candidate.entry, needle)
            if offset is not None:
                return written, buffer.source_at(offset, self.raw_text(candidate.entry, needle))
        return None

    def may_match(self, candidate: Candidate, buffer: ScanBuffer) -> bool:
        """False when the key index shows none of the candidate's keys in the buffer (one read per buffer)."""
        index = self._index
        if index is None:
            return True
        position = self._positions[id(candidate)]
        if position not in index.indexed or position in self._woken:
            return True
        present = self._present.get(id(buffer))
        if present is None or present[0] is not buffer:
            present = (buffer, index.candidates_in(buffer.text(True)[0]))
            self._present[id(buffer)] = present
        return position in present[1]

    def raw_text(self, entry: WorldBookEntry, needle: str) -> bool:
        # A regex key runs on the raw buffer (its own flags decide case); a plain key on the lower-cased one unless
        # the entry is case-sensitive. Primary and secondary keys alike.
        return parse_regex_key(needle) is not None or self.case_sensitive(entry)

    def find(self, buffer: ScanBuffer, entry: WorldBookEntry, needle: str) -> int | None:
        text = buffer.text(self.raw_text(entry, needle))[0]
        return find_key(text, needle, case_sensitive=self.case_sensitive(entry),
                        match_whole_words=self.whole_words(entry), runs=self.patterns,
                        owner=f"world info entry {entry.uid}")

    def score(self, candidate: Candidate, state: str) -> int:
        """SillyTavern's group score: primary keys found, plus secondary keys found under and_any (and under and_all
        when all are found)."""
        entry = candidate.entry
        buffer = self.buffers.buffer(entry, state)
        if buffer is None or not entry.keys:
            return 0

        def found(keys: list[tuple[str, str]]) -> int:
            return sum(self.find(buffer, entry, needle) is not None for _w, needle in keys)

        primary, secondary = found(candidate.keys), found(candidate.secondary)
        if entry.secondary_keys and entry.selective_logic == "and_any":
            return primary + secondary
        if entry.secondary_keys and entry.selective_logic == "and_all" and secondary == len(entry.secondary_keys):
            return primary + secondary
        return primary

    def inclusion_groups(self, matches: list[Match], state: str) -> list[Match]:
        """One entry per inclusion group and pass (sillytavern.md §7.3): `worldinfo_groups`."""
        closed = self._closed_groups
        kept, losses = filter_inclusion_groups(
            matches, groups_of=lambda m: m.candidate.groups, entry_of=lambda m: m.candidate.entry,
            closed=lambda name: name in closed,
            scored=lambda m: (m.candidate.entry.use_group_scoring if m.candidate.entry.use_group_scoring is not None
                              else self.book.use_group_scoring),
            score=lambda m: self.score(m.candidate, state),
            sticky=lambda m: self.sticky(m.candidate.entry), pick=self.chance.group_pick)
        for loss in losses:
            why = f"lost inclusion group '{loss.group}' {loss.why}"
            if loss.in_place_of is not None:
                why += (f"; removed in place of entry {loss.in_place_of.candidate.entry.uid}, which had already left "
                        "the pass (SillyTavern's splice at index -1)")
            self.skip(loss.match.candidate.entry.uid, self.matched_skip(
                loss.match, "group_lost", group=loss.group,
                winner=loss.winner.candidate.entry.uid if loss.winner is not None else None, message=why))
        return kept
