"""The editor header's request total against the window and the reply reserve, and over it the eviction plan in one
line (engine.md §8). `window_line` reads only the result's token summary and budget report."""

from types import SimpleNamespace

from assembly.results import EvictionItem, TokenSummary
from strategies_app.presenters import window_line


def _result(total, window, reserve, plan=()):
    tokens = TokenSummary(total=total, by_module={}, tokenizer="o200k_base", request_total=total,
                          context_window=window, reply_reserve=reserve)
    return SimpleNamespace(tokens=tokens, budget=SimpleNamespace(eviction_plan=list(plan)) if plan else None)


def test_within_the_window_there_is_no_plan():
    line = window_line(_result(500, 8000, 1000))
    assert (line["total"], line["window"], line["reserve"], line["over"], line["plan"]) == (500, 8000, 1000, 0, "")


def test_over_the_window_the_plan_is_one_line_by_module():
    plan = [EvictionItem(id="history:1", module="history", tokens=40, reason="oldest"),
            EvictionItem(id="history:2", module="history", tokens=60, reason="oldest"),
            EvictionItem(id="wi:1", module="worldbook", tokens=30, reason="order")]
    line = window_line(_result(9000, 8000, 1000, plan))
    assert line["over"] == 2000
    assert line["plan"] == "Eviction plan: drop 2 Chat history items (100 tokens), 1 World book item (30 tokens)."


def test_over_the_window_without_a_budget_says_how_to_see_the_plan():
    line = window_line(_result(9000, 8000, 0))
    assert line["over"] == 1000 and "set one in the full preview" in line["plan"]


def test_without_a_window_only_the_total():
    assert window_line(_result(300, None, None))["window"] is None and window_line(None) is None
