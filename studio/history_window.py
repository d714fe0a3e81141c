"""Which request messages a page shows of a long history, and which it folds into one row (quality.md, Performance).

A 5,000-message history rendered as 5,000 rows is megabytes of HTML. Pages show every message that is not plain
history, a few history messages on each side of it and at the ends, and fold each longer run of unchanged native
history into one row that names its range, its count and its tokens (exact sums), expandable on request. The rule is
here once (pure but for the words of a collapsed row) for the preview pages (`preview_app`) and the editor's live preview (`strategies_app`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from django.utils.translation import ngettext

from assembly.results import AssemblyResult

COLLAPSE_OVER = 40  # a foldable run this long or shorter is shown whole: small sessions show every row
CONTEXT = 3  # history messages kept on each side of a run (next to a non-history message, or at an end)
RANGE_ROWS = 200  # rows an expanded range shows at most; the rest stays behind its own "show more" row


class Counted(Protocol):
    history_status: str
    tokens: int


@dataclass(frozen=True)
class ShownMessage:
    index: int


@dataclass(frozen=True)
class CollapsedRun:
    first: int  # indices into the messages, both ends included
    last: int
    count: int
    tokens: int

    @property
    def range(self) -> str:
        return f"{self.first}-{self.last}"

    @property
    def collapsed(self) -> bool:  # a template's test between a folded run and a shown row
        return True


Segment = ShownMessage | CollapsedRun


def foldable(message: Counted) -> bool:
    """Plain history: a message the host already holds, sent unchanged."""
    return message.history_status == "native"


def history_window(messages: Sequence[Counted], keep: Iterable[int] = (), *, collapse_over: int = COLLAPSE_OVER,
                   context: int = CONTEXT) -> list[Segment]:
    """Every message in order, as shown messages and collapsed runs; `keep` are indices that must stay shown."""
    keep = set(keep)
    segments: list[Segment] = []
    run_start = None

    def close_run(end: int) -> None:  # the foldable run [run_start, end)
        inner_first, inner_last = run_start + context, end - 1 - context
        if inner_last - inner_first + 1 <= collapse_over:
            segments.extend(ShownMessage(i) for i in range(run_start, end))
            return
        segments.extend(ShownMessage(i) for i in range(run_start, inner_first))
        segments.append(CollapsedRun(inner_first, inner_last, inner_last - inner_first + 1,
                                     sum(messages[i].tokens for i in range(inner_first, inner_last + 1))))
        segments.extend(ShownMessage(i) for i in range(inner_last + 1, end))

    for index, message in enumerate(messages):
        if index not in keep and foldable(message):
            if run_start is None:
                run_start = index
            continue
        if run_start is not None:
            close_run(index)
            run_start = None
        segments.append(ShownMessage(index))
    if run_start is not None:
        close_run(len(messages))
    return segments


def range_window(messages: Sequence[Counted], first: int, last: int, *, rows: int = RANGE_ROWS) -> list[Segment]:
    """An expanded range: its first `rows` messages shown, the rest of it one collapsed run (its "show more")."""
    first, last = max(first, 0), min(last, len(messages) - 1)
    if first > last:
        return []
    cut = min(last, first + rows - 1)
    segments: list[Segment] = [ShownMessage(i) for i in range(first, cut + 1)]
    if cut < last:
        segments.append(CollapsedRun(cut + 1, last, last - cut, sum(messages[i].tokens for i in range(cut + 1, last + 1))))
    return segments


def run_words(run: CollapsedRun) -> str:
    """"messages 12–4,980: 4,969 history messages, 512,340 tokens" (plain text, not escaped)."""
    return ngettext("messages %(first)s–%(last)s: %(n)s history message, %(tokens)s tokens",
                    "messages %(first)s–%(last)s: %(n)s history messages, %(tokens)s tokens", run.count) % {
        "first": f"{run.first:,}", "last": f"{run.last:,}", "n": f"{run.count:,}", "tokens": f"{run.tokens:,}"}


def notable_messages(result: AssemblyResult) -> set[int]:
    """Indices of messages a page never folds: a part with a diagnostic, a lock or a regex change, or a part that is
    not the history's own (world info or an injection inside a history message)."""
    flagged = {d.details.get("id") for d in result.diagnostics} | {c.part for c in result.regex_changes}
    nodes = {node.id: node for node in result.nodes}
    found = set()
    for index, message in enumerate(result.request.messages):
        if not foldable(message):
            continue  # shown anyway
        for part in message.parts:
            node = nodes.get(part)
            # every history node is locked "runtime" (the host holds it): only another lock is worth showing
            if part in flagged or node is None or node.module != "history" or (
                    node.locked and node.lock_reason != "runtime"):
                found.add(index)
                break
    return found
