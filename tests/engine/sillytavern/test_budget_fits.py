"""SillyTavern's budget (sillytavern.md §6) when every message fits: nothing dropped, every message counted once."""

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


def test_when_all_fits_nothing_is_dropped_and_every_message_is_counted():
    counted = {}
    result = st_budget(**request(), content_tokens=counted)
    assert result.dropped == () and result.failure is None
    assert [m.id for m in result.history] == ["sep", "a", "b", "c"] and [m.id for m in result.tail] == ["cont", "q"]
    assert set(counted) == {"main", "q", "a", "b", "c", "cont", "h", "e", "sep"}
    assert result.remaining == result.limit - 3 - sum(result.tokens.values())
