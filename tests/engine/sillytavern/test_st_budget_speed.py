"""The all-fits shortcut of the SillyTavern budget gives the phases' own answer (issue 19)."""

import pytest

from assembly.sillytavern import budget
from assembly.sillytavern.budget import StBudgetGroup, st_budget
from assembly.sillytavern.messages import StMessage


def msg(i, role="user", content="some words here", kind="chat"):
    return StMessage(id=i, role=role, content=content, kind=kind, sources=(i,))


def request(**changes):
    args = dict(max_context=10_000, max_tokens=100,
                mandatory=[StBudgetGroup(id="prompt:0", messages=(msg("main", "system", kind="prompt"),)),
                           StBudgetGroup(id="quiet", messages=(msg("q", "system", kind="control"),), reserve=True)],
                history=[msg("a"), msg("b", "assistant"), msg("c")], new_chat=msg("sep", "system", kind="new_chat"),
                continue_messages=[msg("cont", "assistant", kind="continue_message")],
                examples=[[msg("h", "system", kind="example_header"), msg("e", "assistant", kind="example")]])
    args.update(changes)
    return args


CASES = [{}, {"new_chat": None}, {"examples": []}, {"continue_messages": []}, {"max_context": 160},
         {"history": [msg("a"), msg("b", "assistant", content="")]}, {"send_if_empty": "go on"},
         {"history": [msg("a"), msg("b", "assistant")], "send_if_empty": "go on"}, {"has_examples_slot": False},
         {"has_history_slot": False}, {"max_context": 120}]


@pytest.mark.parametrize("changes", CASES)
def test_the_shortcut_answers_as_the_phases_do(changes, monkeypatch):
    fast = st_budget(**request(**changes))
    monkeypatch.setattr(budget, "_all_fit", lambda *a: None)
    assert fast == st_budget(**request(**changes))


def test_when_all_fits_nothing_is_dropped_and_every_message_is_counted():
    counted = {}
    result = st_budget(**request(), content_tokens=counted)
    assert result.dropped == () and result.failure is None
    assert [m.id for m in result.history] == ["sep", "a", "b", "c"] and [m.id for m in result.tail] == ["cont", "q"]
    assert set(counted) == {"main", "q", "a", "b", "c", "cont", "h", "e", "sep"}
    assert result.remaining == result.limit - 3 - sum(result.tokens.values())
