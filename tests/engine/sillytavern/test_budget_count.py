"""The SillyTavern budget counts every message once, up front (sillytavern.md §6): the counts, the content counts it hands
over and the all-fits answer must be those of the message-by-message count."""

import pytest

from assembly.sillytavern import budget
from assembly.sillytavern.budget import StBudgetGroup, StBudgetResult, st_budget, st_message_tokens
from assembly.sillytavern.messages import StMessage, StParityError


def _messages():
    return [StMessage(id="p", role="system", content="Main prompt text", kind="prompt"),
            StMessage(id="a", role="user", content="Hello there", name="Ann"),
            StMessage(id="b", role="assistant", content=""),
            StMessage(id="c", role="assistant", content="", name="Bob"),
            StMessage(id="d", role="user", content="Fine, thanks")]


def test_count_all_gives_each_message_its_own_count():
    messages = _messages()
    contents: dict[str, int] = {}
    ledger = budget._Ledger(1000, "o200k_base", contents)
    total = ledger.count_all(messages)
    assert ledger.tokens == {m.id: st_message_tokens(m) for m in messages}
    assert total == sum(ledger.tokens.values())
    # an empty unnamed message costs nothing and has no content count, as `_message_tokens` leaves it
    assert "b" not in contents and contents["c"] == 0
    assert contents == {m.id: budget.count_tokens(m.content) for m in messages if m.content or m.name}


def test_counting_up_front_changes_no_answer_of_the_phases():
    messages = _messages()
    groups = [StBudgetGroup(id="prompt:0", messages=(messages[0],))]
    for context in (10_000, 40, 25):
        counted: dict[str, int] = {}
        result = st_budget(max_context=context, max_tokens=0, mandatory=groups, history=messages[1:],
                           content_tokens=counted)
        lazily = budget._Ledger(0, "o200k_base", {})
        assert result.tokens == {m.id: lazily.cost_of(m) for m in messages}
        assert counted == lazily.contents


def test_a_chat_that_fits_is_kept_whole_and_charged_its_tokens():
    chat = [StMessage(id="a", role="user", content="Hello"), StMessage(id="b", role="assistant", content="Hi")]
    total = budget._Ledger(1000, "o200k_base").count_all(chat)
    fitted = st_budget(max_context=1003, max_tokens=0, history=chat)
    assert isinstance(fitted, StBudgetResult)
    assert fitted.history == tuple(chat) and fitted.remaining == 1000 - total and fitted.dropped == ()
    tight = st_budget(max_context=3 + total - 1, max_tokens=0, history=chat)  # one token short: the oldest goes
    assert [m.id for m in tight.history] == ["b"]


def test_a_message_id_used_twice_is_still_refused_and_named():
    chat = [StMessage(id="a", role="user", content="Hello"), StMessage(id="b", role="assistant", content="Hi")]
    twice = StMessage(id="b", role="system", content="other text", kind="new_chat")
    with pytest.raises(StParityError) as error:
        st_budget(max_context=1000, max_tokens=0, history=chat, new_chat=twice)
    assert error.value.code == "ST_DUPLICATE_ID" and "messages[2].id" in str(error.value)
    same_content = [chat[0], chat[0]._replace()]
    with pytest.raises(StParityError, match=r"messages\[1\]\.id"):
        st_budget(max_context=1000, max_tokens=0, history=same_content)
