"""Diffs of two result JSON documents, cheap on big ones (issue 19: the goldens page at 5,000 messages).

Both diffs read the documents as JSON with sorted keys. Equal documents answer at once: their canonical dumps (C
encoder, no indent) are compared, never diffed. `full_diff` is the unified diff of the whole indented documents (the
`goldens check` command and the API give it); it diffs only the lines between the common head and tail, so one
changed message in 5,000 costs little. `part_diff` is what the goldens page shows: the document walked down to the
parts that differ (a top-level key, one request message, one field of it), each part's unified diff under its path,
the whole bounded to a number of lines with a note of how many more there are.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

_MISSING = object()  # a key one document has and the other lacks
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$")
CONTEXT = 3  # unified diff context lines, as difflib's default
PAGE_LINES = 400  # the page's bound: more is a note, never 5,000 rows


def canonical(document: Any) -> str:
    """One string per JSON value: sorted keys, no indent (the C encoder), text kept as is."""
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def documents_equal(a: Any, b: Any) -> bool:
    """Equal as JSON (so `1` and `true` differ, as their dumps do)."""
    return a is b or canonical(a) == canonical(b)


def _lines(document: Any) -> list[str]:
    return [] if document is _MISSING else json.dumps(document, indent=2, sort_keys=True,
                                                       ensure_ascii=False).splitlines()


def full_diff(before: Any, after: Any, labels: tuple[str, str]) -> list[str]:
    """Unified diff of the two indented documents; empty when they are equal. Only the lines between the common
    head and tail (less the context kept around them) are handed to difflib; hunk numbers count from the top."""
    if documents_equal(before, after):
        return []
    a, b = _lines(before), _lines(after)
    head, tail = _common_ends(a, b)
    start, keep_tail = max(0, head - CONTEXT), max(0, tail - CONTEXT)
    lines = list(difflib.unified_diff(a[start:len(a) - keep_tail], b[start:len(b) - keep_tail], *labels,
                                      lineterm=""))
    return [_shifted(line, start) for line in lines]


def _shifted(line: str, offset: int) -> str:
    """A hunk header of a diff of a slice, renumbered as in the whole document."""
    found = _HUNK.match(line) if offset and line.startswith("@@") else None
    if not found:
        return line
    a_start, a_len, b_start, b_len = found.groups()
    return f"@@ -{int(a_start) + offset}{a_len or ''} +{int(b_start) + offset}{b_len or ''} @@"


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many items the two lists share at their head, and then at their tail."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


@dataclass(frozen=True)
class PartDiff:
    """The page's diff: the lines shown (headers, "@@ path" per part, then its lines) and how many were left out."""

    lines: list[str]
    more: int  # lines of the whole part diff past the bound

    @property
    def total(self) -> int:
        return len(self.lines) + self.more

    def __bool__(self) -> bool:
        return bool(self.lines)


def _path(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


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
        # no autojunk: it would call repeated equal items (two "ok" replies) changed
        matcher = difflib.SequenceMatcher(None, left[head:len(left) - tail], right[head:len(right) - tail],
                                          autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
            if tag == "replace" and i2 - i1 == j2 - j1:  # changed in place: each pair on its own
                for offset in range(i2 - i1):
                    if left[i1 + offset] != right[j1 + offset]:
                        _parts(_path(path, j1 + offset), a[i1 + offset], b[j1 + offset], out)
                continue
            label = _path(path, j1) if j2 - j1 <= 1 and i2 - i1 <= 1 else f"{path}[{j1}:{j2}]"
            out.append((label, a[i1:i2] if i2 > i1 else _MISSING, b[j1:j2] if j2 > j1 else _MISSING))
        return
    out.append((path, a, b))


def part_diff(before: Any, after: Any, labels: tuple[str, str], limit: int = PAGE_LINES) -> PartDiff:
    """The differing parts of two documents, each as a unified diff of its indented JSON under "@@ path @@", at most
    `limit` lines (the rest counted in `more`); empty when the documents are equal."""
    if documents_equal(before, after):
        return PartDiff([], 0)
    parts: list[tuple[str, Any, Any]] = []
    _parts("", before, after, parts)
    lines = [f"--- {labels[0]}", f"+++ {labels[1]}"]
    more = 0
    for path, a, b in parts:
        body = []
        for line in list(difflib.unified_diff(_lines(a), _lines(b), lineterm="", n=CONTEXT))[2:]:
            # the part's own line numbers mean nothing on the page: each hunk is headed by the part's path
            body.append(f"@@ {path or '(document)'} @@" if line.startswith("@@") else line)
        room = max(0, limit - len(lines))
        lines.extend(body[:room])
        more += len(body) - min(room, len(body))
    return PartDiff(lines, more)
