"""Diffs of two result JSON documents, cheap on big ones (quality.md, Performance: the goldens page at 5,000
messages).

Both diffs read the documents as JSON with sorted keys. Equal documents answer at once: the parsed documents are
compared, never dumped nor diffed. `full_diff` is the unified diff of the whole indented documents (the
`goldens check` command and the API give it); it diffs only the lines between the common head and tail, so one
changed message in 5,000 costs little. `part_diff` is what the goldens page shows: the document walked down to the
parts that differ (a top-level key, one request message, one field of it), each part's unified diff under its path,
the whole bounded to a number of lines with a note of how many parts are left out.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

_MISSING = object()  # a key one document has and the other lacks
CONTEXT = 3  # unified diff context lines, as difflib's default
PAGE_LINES = 400  # the page's bound: the parts past it are a note, never 5,000 rows


def canonical(document: Any) -> str:
    """One string per JSON value: sorted keys, no indent (the C encoder), text kept as is."""
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def documents_equal(a: Any, b: Any) -> bool:
    """Equal as parsed JSON: Python's own comparison, at C speed (a tenth of one canonical dump of a 5,000-message
    result). As for any Python JSON reader, 1, 1.0 and true are one value here; the result models type every field,
    so a field does not turn from one to another alone."""
    return a == b


def _lines(document: Any) -> list[str]:
    return [] if document is _MISSING else json.dumps(document, indent=2, sort_keys=True,
                                                       ensure_ascii=False).splitlines()


def full_diff(before: Any, after: Any, labels: tuple[str, str]) -> list[str]:
    """Unified diff of the two indented documents, as difflib's `unified_diff` writes it; empty when they are equal.
    The common head and tail are matched at once (the longer first, as difflib's longest match would take it) and
    only the lines between them are handed to difflib, so one changed message in 5,000 costs little."""
    if documents_equal(before, after):
        return []
    a, b = _lines(before), _lines(after)
    head, tail = _common_ends(a, b, tail_first=_run_back(a, b) > _run_forward(a, b))
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail])
    blocks = [(0, 0, head), *((i + head, j + head, n) for i, j, n in middle.get_matching_blocks()[:-1]),
              (len(a) - tail, len(b) - tail, tail)]
    matcher = difflib.SequenceMatcher(None, [], [])  # no set_seqs over the whole: it would index every line
    matcher.a, matcher.b = a, b
    matcher.matching_blocks = [difflib.Match(*block) for block in blocks if block[2]] + [difflib.Match(len(a),
                                                                                                      len(b), 0)]
    lines = [f"--- {labels[0]}", f"+++ {labels[1]}"]
    for group in matcher.get_grouped_opcodes(CONTEXT):
        lines.append(f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[i1:i2])
                continue
            lines.extend("-" + line for line in a[i1:i2])
            lines.extend("+" + line for line in b[j1:j2])
    return lines


def _range(start: int, stop: int) -> str:
    """A unified diff range, as difflib writes it: 1-based, length left out when 1, "start,0" before an empty one."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def _run_forward(a: list[str], b: list[str]) -> int:
    """How many items the two lists share at their head."""
    head, most = 0, min(len(a), len(b))
    while head < most and a[head] == b[head]:
        head += 1
    return head


def _run_back(a: list[str], b: list[str], most: int | None = None) -> int:
    """How many items the two lists share at their tail (at most `most`)."""
    tail, most = 0, min(len(a), len(b)) if most is None else most
    while tail < most and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return tail


def _common_ends(a: list[str], b: list[str], tail_first: bool = False) -> tuple[int, int]:
    """How many items the two lists share at their head and at their tail, not overlapping. Where an insertion
    could slide (both runs reach into it), the longer run keeps it, as difflib's longest match would."""
    shortest = min(len(a), len(b))
    if tail_first:
        tail = _run_back(a, b)
        return min(_run_forward(a, b), shortest - tail), tail
    head = _run_forward(a, b)
    return head, _run_back(a, b, shortest - head)


@dataclass(frozen=True)
class PartDiff:
    """The page's diff: the lines shown (headers, then each part's lines under "@@ path @@"), how many differing
    parts there are, and how many of them are left out or cut short by the bound."""

    lines: list[str]
    parts: int
    more: int

    def __bool__(self) -> bool:
        return bool(self.lines)


def _path(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def _items(items: list[Any], start: int, end: int) -> Any:
    """A run of list items as one part: the item itself when it is one, nothing when none."""
    return _MISSING if end == start else items[start] if end - start == 1 else items[start:end]


def _parts(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    """The smallest pieces where `a` and `b` differ, in document order: (path, before, after), `_MISSING` where one
    side has nothing. Lists are matched by their items' canonical dumps, so one inserted message is one part."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            left, right = a.get(key, _MISSING), b.get(key, _MISSING)
            if left is _MISSING or right is _MISSING or not documents_equal(left, right):
                _parts(_path(path, key), left, right, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        left, right = [canonical(item) for item in a], [canonical(item) for item in b]
        head, tail = _common_ends(left, right)  # most lists differ in a few items: match only the middle
        # autojunk off: a repeated item (many "ok" replies) must still be able to match
        matcher = difflib.SequenceMatcher(None, left[head:len(left) - tail], right[head:len(right) - tail],
                                          autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
            if tag == "replace":  # changed in place: each pair on its own, then what is left over on one side
                paired = min(i2 - i1, j2 - j1)
                for offset in range(paired):
                    if left[i1 + offset] != right[j1 + offset]:
                        _parts(_path(path, j1 + offset), a[i1 + offset], b[j1 + offset], out)
                i1, j1 = i1 + paired, j1 + paired
                if i1 == i2 and j1 == j2:
                    continue
            label = _path(path, j1) if j2 - j1 <= 1 and i2 - i1 <= 1 else f"{path}[{j1}:{j2}]"
            out.append((label, _items(a, i1, i2), _items(b, j1, j2)))
        return
    out.append((path, a, b))


def part_diff(before: Any, after: Any, labels: tuple[str, str], limit: int | None = None) -> PartDiff:
    """The differing parts of two documents, each as a unified diff of its indented JSON under "@@ path @@", at most
    `limit` lines; the parts past the bound are counted, not diffed (a strategy that changes every message gives
    5,000 parts). Empty when the documents are equal."""
    if documents_equal(before, after):
        return PartDiff([], 0, 0)
    limit = PAGE_LINES if limit is None else limit
    parts: list[tuple[str, Any, Any]] = []
    _parts("", before, after, parts)
    lines = [f"--- {labels[0]}", f"+++ {labels[1]}"]
    for shown, (path, a, b) in enumerate(parts):
        room = limit - len(lines)
        if room <= 0:
            return PartDiff(lines, len(parts), len(parts) - shown)
        body = []
        for line in list(difflib.unified_diff(_lines(a), _lines(b), lineterm="", n=CONTEXT))[2:]:
            # the part's own line numbers mean nothing on the page: each hunk is headed by the part's path
            body.append(f"@@ {path or '(document)'} @@" if line.startswith("@@") else line)
        lines.extend(body[:room])
        if len(body) > room:
            return PartDiff(lines, len(parts), len(parts) - shown)
    return PartDiff(lines, len(parts), 0)
