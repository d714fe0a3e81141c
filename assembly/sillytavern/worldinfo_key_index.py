"""Every plain world info key of a scan in one Aho-Corasick automaton, so that a pass reads its text once instead of
once per key (sillytavern.md §7.3 decides what a match is; this only narrows who can match).

`KeyIndex.candidates_in(text)` answers the candidates with some key occurring in `text` lower-cased: a superset of
those whose key `worldinfo_keys.find_key` can find there, whatever their case and whole-word rules, because a key is
indexed only when that holds: every key of the candidate is plain (not a regex), ASCII (so lower-casing the text
around it cannot move it: Python's final-sigma rule and the like touch only non-ASCII letters) and free of "\\n" and
"\\x01" (so it cannot straddle the "\\n\\x01" that joins buffer segments: a key absent from a buffer can then only
appear in text appended after it), and at most `MAX_INDEXED_KEY_CHARS` long. A candidate with any other key is not
indexed and is always scanned in full.
"""

from __future__ import annotations

from collections.abc import Sequence

import ahocorasick

from assembly.sillytavern.worldinfo_keys import split_regex_key

# pyahocorasick frees its trie recursively: a key of ~500k characters is one chain that deep and crashes the process.
# A longer key leaves its candidate unindexed, so `find_key` scans it in full (same matches, no automaton).
MAX_INDEXED_KEY_CHARS = 4096


def indexable_key(needle: str) -> bool:
    return bool(needle) and len(needle) <= MAX_INDEXED_KEY_CHARS and needle.isascii() and "\n" not in needle and (
        "\x01" not in needle) and (
        not needle.startswith("/") or split_regex_key(needle) is None)


class KeyIndex:
    """The lower-cased plain keys of the indexable candidates (`keys_by_candidate[i]` None: candidate i is not
    indexable)."""

    def __init__(self, keys_by_candidate: Sequence[Sequence[str] | None]) -> None:
        self.indexed: set[int] = set()
        owners: dict[str, list[int]] = {}
        for index, needles in enumerate(keys_by_candidate):
            if needles is None or not needles or not all(indexable_key(n) for n in needles):
                continue
            self.indexed.add(index)
            for needle in needles:
                owners.setdefault(needle.lower(), []).append(index)
        self._automaton = ahocorasick.Automaton() if owners else None
        if self._automaton is not None:
            for needle, indices in owners.items():
                self._automaton.add_word(needle, tuple(indices))
            self._automaton.make_automaton()

    def candidates_in(self, text: str) -> set[int]:
        """The indexed candidates with a key occurring in `text` (compared lower-cased)."""
        found: set[int] = set()
        if self._automaton is None or not text:
            return found
        seen: set[tuple[int, ...]] = set()
        for _end, indices in self._automaton.iter(text.lower()):
            if indices not in seen:
                seen.add(indices)
                found.update(indices)
        return found
