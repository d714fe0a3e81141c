"""`inject_in_chat` (sillytavern.md §4.5): each depth's injections merged into one block per order and role, the
blocks placed in the chat from its end; equal injections give equal answers, bad ones are refused every time."""

import pytest

from assembly.sillytavern.messages import StInjection, StMessage, StParityError
from assembly.sillytavern.steps import inject_in_chat


def _chat(n: int) -> list[StMessage]:
    return [StMessage(id=f"m{i}", role="user" if i % 2 == 0 else "assistant", content=f"c{i}", sources=(f"m{i}",))
            for i in range(n)]


def _injections() -> list[StInjection]:
    return [StInjection(sources=("a",), content="A", depth=0), StInjection(sources=("b",), content=" B ", depth=2),
            StInjection(sources=("c",), content="C", depth=2, role="user"),
            StInjection(sources=("d",), content="D", depth=9, key="customDepthWI_9_0"),
            StInjection(sources=("e",), content="E", depth=None), StInjection(sources=("f",), content="", depth=1)]


def _fresh(chat, injections):
    return inject_in_chat(list(chat), [i.model_copy() for i in injections])


@pytest.mark.parametrize("size", [0, 1, 3, 12])
def test_equal_injections_inject_alike_deepest_first(size):
    chat, injections = _chat(size), _injections()
    fresh = _fresh(chat, injections)
    again = inject_in_chat(chat, [i.model_copy() for i in injections])  # equal injections, other objects
    assert again == fresh and again is not fresh
    if size == 3:
        assert [m.id for m in fresh] == ["injection@9/100/system", "m0", "injection@2/100/user",
                                         "injection@2/100/system", "m1", "m2", "injection@0/100/system"]


def test_a_changed_injection_changes_its_block():
    chat, injections = _chat(4), _injections()
    inject_in_chat(chat, injections)
    changed = [injections[0].model_copy(update={"content": "A2"}), *injections[1:]]
    history = inject_in_chat(chat, changed)
    assert history[-1].content == "A2" and history == _fresh(chat, changed)
    moved = [injections[0].model_copy(update={"depth": 3}), *injections[1:]]
    assert inject_in_chat(chat, moved) == _fresh(chat, moved)


def test_bad_injections_are_refused_on_every_call():
    twice = [StInjection(sources=("a",), content="A", depth=0), StInjection(sources=("a",), content="B", depth=1)]
    for _ in range(2):
        with pytest.raises(StParityError):
            inject_in_chat(_chat(2), twice)


def test_the_history_is_the_callers_own():
    chat, injections = _chat(3), _injections()
    first = inject_in_chat(chat, injections)
    first.clear()
    assert len(chat) == 3 and inject_in_chat(chat, injections) == _fresh(chat, injections)


@pytest.mark.parametrize("checked", [True, False])
def test_a_chat_id_that_is_also_a_blocks_id_is_refused(checked):
    chat = [*_chat(3), StMessage(id="injection@2/100/user", role="user", content="x", sources=("x",))]
    with pytest.raises(StParityError, match=r"history\[\d+\]\.id"):
        inject_in_chat(chat, _injections(), chat_checked=checked)
    # the same chat without that block is fine
    assert [m.id for m in inject_in_chat(chat, _injections()[:2], chat_checked=checked)][-1] == \
        "injection@0/100/system"
