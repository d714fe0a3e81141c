"""World info scan buffers: the text each entry scans, and where in it a key was found (sillytavern.md §7.2).

The buffer of an entry is the newest `scan_depth` chat messages (the entry's override, else the book's, widened by
min-activation passes), newest first, each prefixed with "\\x01" and joined with "\\n\\x01"; then the global scan
data the entry opts into, the injected prompts that allow scanning and the recursion buffer. A scan depth of 0 gives
no buffer at all.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from assembly.sillytavern.models import WorldBookEntry
from assembly.sillytavern.worldinfo_models import MatchSource

MAX_SCAN_DEPTH = 1000
_MATCHER = "\x01"
_JOINER = "\n" + _MATCHER


@dataclass(frozen=True)
class BufferSegment:
    text: str
    source: MatchSource | None  # None: the empty depth part of a chat with no messages in range
    # recursion chunks: (offset within the chunk, uid) for each entry content joined into it
    parts: tuple[tuple[int, int | str], ...] = ()


@dataclass
class ScanBuffer:
    """The text one entry scans, with the offsets of its segments (in the raw and in the lower-cased text)."""

    segments: list[BufferSegment]
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


class ScanState:
    INITIAL = "initial"
    RECURSION = "recursion"
    MIN_ACTIVATIONS = "min_activations"


@dataclass
class ScanBuffers:
    """Builds scan buffers; one buffer per distinct (depth, scan data opted into, recursion included)."""

    messages: list[str]  # newest first, trimmed, names prefixed
    chat_length: int
    scan_data: list[tuple[str, str, str]]  # (field, text, entry flag) for non-empty data, in SillyTavern's order
    injections: list[str]
    base_depth: int
    skew: int = 0
    recursion: list[BufferSegment] = field(default_factory=list)
    _cache: dict[tuple[Any, ...], ScanBuffer] = field(default_factory=dict)

    def depth(self) -> int:
        return self.base_depth + self.skew

    def buffer(self, entry: WorldBookEntry, state: str) -> ScanBuffer | None:
        depth = entry.scan_depth if entry.scan_depth is not None else self.depth()
        if depth <= 0:
            return None  # SillyTavern returns an empty buffer: no chat, no scan data, no recursion
        depth = min(depth, MAX_SCAN_DEPTH)
        opted = tuple(name for name, _text, flag in self.scan_data if getattr(entry, flag))
        with_recursion = state != ScanState.MIN_ACTIVATIONS and bool(self.recursion)
        key = (depth, opted, with_recursion, len(self.recursion))
        if key not in self._cache:
            shown = self.messages[:depth]
            if shown:
                segments = [BufferSegment(text, MatchSource(kind="message", index=self.chat_length - 1 - i))
                            for i, text in enumerate(shown)]
            else:
                segments = [BufferSegment("", None)]
            segments += [BufferSegment(text, MatchSource(kind="scan_data", field=name))
                         for name, text, _flag in self.scan_data if name in opted]
            segments += [BufferSegment(text, MatchSource(kind="injection", index=i))
                         for i, text in enumerate(self.injections)]
            if with_recursion:
                segments += self.recursion
            self._cache[key] = ScanBuffer(segments)
        return self._cache[key]

    def add_recursion(self, contents: list[tuple[int | str, str]]) -> None:
        parts, offset = [], 0
        for uid, content in contents:
            parts.append((offset, uid))
            offset += len(content) + 1
        self.recursion.append(BufferSegment("\n".join(content for _uid, content in contents), None, tuple(parts)))
        self._cache.clear()

