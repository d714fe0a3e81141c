"""Two requests side by side, message by message (web.md screen 4, and the goldens' diff).

Messages are matched by what they are made of, not by their index: a request message lists the node ids of its
parts (`preset:main`, `history:s1e4`, ...), and those ids are the same whichever strategy built the request. Pairs
are found in three passes: the same parts, then overlapping parts (a message that was split or merged), then the
same role and content (host-made text such as the runtime-context framing has no parts). What is left over on the
left was removed, on the right added.

A matched pair is "moved" when it is not part of the longest run of pairs that kept their relative order, so a
message that only shifted because something was inserted before it is not called moved. Each pair is also checked
for role, delivery, history status and content changes.

Rows come out in the right-hand order; a removed message comes before the next message that kept its place, so
removals are listed where they happened and before what replaced them.
"""

from __future__ import annotations

import bisect
from collections import defaultdict, deque
from dataclasses import dataclass, field

from assembly.results import RequestMessage
from studio.history_window import CollapsedRun, history_window, range_window

# The kinds of change, in the order a row lists them.
CHANGE_KINDS = ("added", "removed", "moved", "role", "delivery", "history_status", "content")


@dataclass
class AlignedRow:
    a_index: int | None
    b_index: int | None
    a: RequestMessage | None
    b: RequestMessage | None
    changes: list[str] = field(default_factory=list)
    collapsed = False  # a folded run's is True (studio.history_window.CollapsedRun)
    # A removed message whose parts are now (partly) inside another message: that message's index on the right;
    # an added message made (partly) of parts that were in a left message: that message's index on the left.
    parts_with: int | None = None

    @property
    def kind(self) -> str:
        """One word for the row's look: added, removed, moved, changed or same."""
        if not self.changes:
            return "same"
        return self.changes[0] if self.changes[0] in ("added", "removed", "moved") else "changed"


@dataclass
class Alignment:
    rows: list[AlignedRow]

    @property
    def counts(self) -> dict[str, int]:
        found = dict.fromkeys(CHANGE_KINDS, 0)
        for row in self.rows:
            for change in row.changes:
                found[change] += 1
        return found

    @property
    def changed_rows(self) -> list[AlignedRow]:
        return [row for row in self.rows if row.changes]

    @property
    def unchanged(self) -> int:
        return sum(1 for row in self.rows if not row.changes)

    @property
    def identical(self) -> bool:
        return all(not row.changes for row in self.rows)



def _folded(rows: list[AlignedRow], segments) -> list[AlignedRow | CollapsedRun]:
    out: list[AlignedRow | CollapsedRun] = []
    for segment in segments:
        if isinstance(segment, CollapsedRun):
            out.append(CollapsedRun(rows[segment.first].b_index, rows[segment.last].b_index, segment.count,
                                    segment.tokens))
        else:
            out.append(rows[segment.index])
    return out


def alignment_window(alignment: Alignment) -> list[AlignedRow | CollapsedRun]:
    """The rows a page shows: every row that differs, and unchanged plain history folded where it runs long.
    Folded rows have a right side (an unchanged row is a pair), so they are named by B's indices."""
    rows = alignment.rows
    sides = [row.b if row.b is not None else row.a for row in rows]
    return _folded(rows, history_window(sides, {k for k, row in enumerate(rows) if row.changes}))


def alignment_range(alignment: Alignment, first: int, last: int) -> list[AlignedRow | CollapsedRun]:
    """The rows of B's messages `first`..`last` (a folded run expanded), bounded, the rest folded again."""
    rows = [row for row in alignment.rows if row.b_index is not None and first <= row.b_index <= last]
    return _folded(rows, range_window([row.b for row in rows], 0, len(rows) - 1))


def _parts_key(message: RequestMessage) -> tuple:
    parts = message.parts
    if parts:
        return ("parts", *parts)
    return ("text", message.role, message.content)


def _pair(a: list[RequestMessage], b: list[RequestMessage]) -> dict[int, int]:
    """Left index -> right index for every matched message."""
    pairs: dict[int, int] = {}
    # 1. the same parts (or, without parts, the same role and text)
    waiting: dict[tuple, deque[int]] = defaultdict(deque)
    for j, message in enumerate(b):
        waiting[_parts_key(message)].append(j)
    taken: set[int] = set()
    for i, message in enumerate(a):
        queue = waiting.get(_parts_key(message))
        if queue:
            j = queue.popleft()
            pairs[i] = j
            taken.add(j)
    # 2. overlapping parts: split or merged messages pair with the one sharing the most parts
    for i, message in enumerate(a):
        if i in pairs or not message.parts:
            continue
        mine = set(message.parts)
        best, best_overlap = None, 0
        for j, other in enumerate(b):
            if j in taken:
                continue
            overlap = len(mine & set(other.parts))
            if overlap > best_overlap:
                best, best_overlap = j, overlap
        if best is not None:
            pairs[i] = best
            taken.add(best)
    # 3. the same role and content, whatever their parts: the first one not taken (indexed once: a scan of `b` per
    # message made a long pasted request quadratic)
    same_text: dict[tuple[str, str], deque[int]] = defaultdict(deque)
    for j, other in enumerate(b):
        if j not in taken:
            same_text[(other.role, other.content)].append(j)
    for i, message in enumerate(a):
        if i in pairs:
            continue
        queue = same_text.get((message.role, message.content))
        if queue:
            j = queue.popleft()
            pairs[i] = j
            taken.add(j)
    return pairs


def _in_order(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The longest run of pairs (sorted by left index) whose right indices increase: those did not move."""
    tails: list[int] = []  # smallest right index ending a run of each length
    tail_at: list[int] = []  # index into pairs of that run's last pair
    previous: list[int | None] = []
    for k, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[length] = j
            tail_at[length] = k
        previous.append(tail_at[length - 1] if length else None)
    kept: set[tuple[int, int]] = set()
    k = tail_at[-1] if tail_at else None
    while k is not None:
        kept.add(pairs[k])
        k = previous[k]
    return kept


def _changes(a: RequestMessage, b: RequestMessage) -> list[str]:
    found = []
    if a.role != b.role:
        found.append("role")
    if a.delivery != b.delivery:
        found.append("delivery")
    if a.history_status != b.history_status:
        found.append("history_status")
    if a.content != b.content:
        found.append("content")
    return found


def align_messages(a: list[RequestMessage], b: list[RequestMessage]) -> Alignment:
    """Align two lists of request messages (`RequestMessage`s, or messages with the same role, content, parts,
    delivery and history status, as the parity check's)."""
    pairs = sorted(_pair(a, b).items())
    kept = _in_order(pairs)
    left_of = {j: i for i, j in pairs}
    paired = dict(pairs)  # once: built per index it made a 5,000-message comparison quadratic
    removed = [i for i in range(len(a)) if i not in paired]
    rows: list[AlignedRow] = []
    flushed = 0  # removed messages already emitted, in left order

    def flush_removed(before: int) -> None:
        nonlocal flushed
        while flushed < len(removed) and removed[flushed] < before:
            i = removed[flushed]
            rows.append(AlignedRow(i, None, a[i], None, ["removed"]))
            flushed += 1

    # For each right index, the left index of the next pair that kept its order: removed messages before it are
    # shown first, so a removal comes before the additions that replace it.
    next_anchor = [len(a)] * (len(b) + 1)
    for j in range(len(b) - 1, -1, -1):
        i = left_of.get(j)
        next_anchor[j] = i if i is not None and (i, j) in kept else next_anchor[j + 1]
    for j, message in enumerate(b):
        flush_removed(next_anchor[j])
        i = left_of.get(j)
        if i is None:
            rows.append(AlignedRow(None, j, None, message, ["added"]))
        elif (i, j) in kept:
            rows.append(AlignedRow(i, j, a[i], message, _changes(a[i], message)))
        else:
            rows.append(AlignedRow(i, j, a[i], message, ["moved", *_changes(a[i], message)]))
    flush_removed(len(a))
    for row in rows:
        if row.changes == ["removed"]:
            row.parts_with = _sharing(row.a, b)
        elif row.changes == ["added"]:
            row.parts_with = _sharing(row.b, a)
    return Alignment(rows)


def _sharing(message: RequestMessage, others: list[RequestMessage]) -> int | None:
    """The index of the message in `others` sharing most parts with `message` (None when none shares any)."""
    mine = set(message.parts)
    if not mine:  # shares no part with any: no need to look at each (a pasted request's messages have none)
        return None
    best, best_overlap = None, 0
    for index, other in enumerate(others):
        overlap = len(mine & set(other.parts))
        if overlap > best_overlap:
            best, best_overlap = index, overlap
    return best
