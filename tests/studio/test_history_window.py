"""The collapse rule of long histories (quality.md, Performance), table-driven: which messages stay shown, which runs
fold, and the folded runs' exact counts and tokens."""

from dataclasses import dataclass

import pytest

from studio.history_window import (
    CollapsedRun,
    ShownMessage,
    history_window,
    range_window,
)


def shown_indices(segments) -> list[int]:
    return [s.index for s in segments if isinstance(s, ShownMessage)]


@dataclass
class M:
    history_status: str
    tokens: int = 1


def _messages(shape: str) -> list[M]:
    """`h` native history, `s` anything else (system, input, request-only); token i+1 for message i."""
    return [M("native" if c == "h" else "request-only", i + 1) for i, c in enumerate(shape)]


def _describe(segments) -> list:
    return [s.index if isinstance(s, ShownMessage) else (s.first, s.last, s.count, s.tokens) for s in segments]


CASES = [
    # name, shape, keep, collapse_over, context, expected
    ("empty", "", (), 2, 1, []),
    ("short run shown whole", "shhhs", (), 2, 1, [0, 1, 2, 3, 4]),
    ("run at the threshold shown whole", "s" + "h" * 4 + "s", (), 2, 1, [0, 1, 2, 3, 4, 5]),
    ("run over the threshold folds, context kept", "s" + "h" * 5 + "s", (), 2, 1,
     [0, 1, (2, 4, 3, 3 + 4 + 5), 5, 6]),
    ("history at both ends keeps context at the ends", "h" * 6, (), 2, 1, [0, (1, 4, 4, 2 + 3 + 4 + 5), 5]),
    ("a kept index splits the run", "h" * 13, (6,), 2, 1,
     [0, (1, 4, 4, 14), 5, 6, 7, (8, 11, 4, 9 + 10 + 11 + 12), 12]),
    ("non-history in the middle splits", "hhhhhhshhhhhh", (), 2, 1,
     [0, (1, 4, 4, 14), 5, 6, 7, (8, 11, 4, 42), 12]),
    ("no context", "s" + "h" * 4 + "s", (), 2, 0, [0, (1, 4, 4, 14), 5]),
    ("all kept", "hhhhhhh", range(7), 2, 1, list(range(7))),
]


@pytest.mark.parametrize(("name", "shape", "keep", "collapse_over", "context", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_history_window(name, shape, keep, collapse_over, context, expected):
    messages = _messages(shape)
    segments = history_window(messages, keep, collapse_over=collapse_over, context=context)
    assert _describe(segments) == expected
    # every message exactly once, in order; the folded tokens sum exactly
    covered = []
    for s in segments:
        covered.extend([s.index] if isinstance(s, ShownMessage) else range(s.first, s.last + 1))
    assert covered == list(range(len(messages)))
    assert sum(s.tokens for s in segments if isinstance(s, CollapsedRun)) + sum(
        messages[i].tokens for i in shown_indices(segments)) == sum(m.tokens for m in messages)


def test_the_default_threshold_leaves_a_small_session_whole():
    messages = _messages("s" + "h" * 46 + "s")  # 40 foldable after the context on each side
    assert shown_indices(history_window(messages)) == list(range(48))
    folded = history_window(_messages("s" + "h" * 47 + "s"))
    assert [s for s in folded if isinstance(s, CollapsedRun)] == [CollapsedRun(4, 44, 41, sum(range(5, 46)))]


RANGES = [
    ("within the bound", 2, 5, 10, [2, 3, 4, 5]),
    ("over the bound: the rest folds", 1, 8, 3, [1, 2, 3, (4, 8, 5, 5 + 6 + 7 + 8 + 9)]),
    ("clipped to the messages", -3, 99, 100, list(range(10))),
    ("empty range", 6, 5, 10, []),
]


@pytest.mark.parametrize(("name", "first", "last", "rows", "expected"), RANGES, ids=[c[0] for c in RANGES])
def test_range_window(name, first, last, rows, expected):
    assert _describe(range_window(_messages("h" * 10), first, last, rows=rows)) == expected


def test_collapsed_run_names_its_range():
    assert CollapsedRun(12, 4980, 4969, 7).range == "12-4980"
