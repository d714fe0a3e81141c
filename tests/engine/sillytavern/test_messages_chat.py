"""The pieces the `st` request path builds its chat with in one pass (assembly/sillytavern/messages.py, steps.py,
budget.py): each must give what the general steps give, worked out by hand from sillytavern.md §3, §4.5 and §6."""

from __future__ import annotations

import json

import pytest

from assembly import assemble
from assembly.sillytavern.budget import st_budget, st_message_tokens
from assembly.sillytavern.messages import (
    StInjection,
    StMessage,
    StParityError,
    trusted_message,
    unique_ids,
)
from assembly.sillytavern.steps import NAMES_BEHAVIOR, apply_names_behavior, inject_in_chat, named_content
from tests.engine.sillytavern.factories import message


def test_named_content_follows_each_names_behaviour():
    # §3: content names prefix "Speaker: " on non-system messages; completion names go in `name`, sanitized to
    # letters, digits, "_" and "-"; carriage returns are removed in every mode.
    assert named_content("hi\r\nthere", "user", "Alex", NAMES_BEHAVIOR["default"]) == ("hi\nthere", None)
    assert named_content("hi", "user", "Alex", NAMES_BEHAVIOR["none"]) == ("hi", None)
    assert named_content("hi", "assistant", "Bo", NAMES_BEHAVIOR["content"]) == ("Bo: hi", None)
    assert named_content("hi", "system", "Bo", NAMES_BEHAVIOR["content"]) == ("hi", None)
    assert named_content("hi", "user", "Alex B.", NAMES_BEHAVIOR["completion"]) == ("hi", "Alex_B_")
    assert named_content("hi", "user", None, NAMES_BEHAVIOR["completion"]) == ("hi", None)


@pytest.mark.parametrize("behavior", sorted(NAMES_BEHAVIOR.values()))
def test_named_content_agrees_with_the_names_step(behavior):
    chat = [message("a", "user", "one\r", speaker="Alex"), message("b", "assistant", "two", speaker="Bo B"),
            message("c", "system", "three", speaker="Narrator")]
    stepped = apply_names_behavior(chat, behavior, user_name="Alex", char_name="Bo B")
    assert [(m.content, m.name) for m in stepped] == [
        named_content(m.content, m.role, m.speaker, behavior) for m in chat]


def test_a_trusted_message_equals_the_validated_one():
    built = trusted_message(id="injection@2/100/system", role="system", content="x", kind="injection",
                            sources=("a", "b"), depth=2, order=100)
    assert built == StMessage(id="injection@2/100/system", role="system", content="x", kind="injection",
                              sources=("a", "b"), depth=2, order=100)


def test_unique_ids_names_the_first_repeated_id():
    unique_ids([message("a", "user"), message("b", "user")], "chat")  # no error
    with pytest.raises(StParityError) as caught:
        unique_ids([message("a", "user"), message("b", "user"), message("a", "user"), message("b", "user")], "chat")
    assert caught.value.code == "ST_DUPLICATE_ID"
    assert "chat[2].id" in str(caught.value)


def test_one_depth_holds_one_message_per_order_and_role_top_to_bottom():
    # §4.5: ascending order, then assistant, user, system; extension prompts join order 100 after the Prompt
    # Manager prompts of that role, sorted by key; Prompt Manager texts of one bucket keep their list order.
    chat = [message("u1", "user", "hi")]
    injections = [
        StInjection(sources=("p1",), content="sys 100 first", role="system", depth=1, order=100),
        StInjection(sources=("p2",), content="user 50", role="user", depth=1, order=50),
        StInjection(sources=("e2",), content=" ext b ", role="system", depth=1, key="b_key"),
        StInjection(sources=("p3",), content="sys 100 second", role="system", depth=1, order=100),
        StInjection(sources=("e1",), content="ext a", role="system", depth=1, key="a_key"),
        StInjection(sources=("p4",), content="assistant 100", role="assistant", depth=1, order=100),
    ]
    history = inject_in_chat(chat, injections)
    assert [(m.id, m.content, m.sources) for m in history] == [
        ("injection@1/50/user", "user 50", ("p2",)),
        ("injection@1/100/assistant", "assistant 100", ("p4",)),
        ("injection@1/100/system", "sys 100 first\nsys 100 second\next a\next b", ("p1", "p3", "e1", "e2")),
        ("u1", "hi", ("u1",)),
    ]


def test_the_history_budget_charges_each_message_once_and_keeps_what_fits():
    # §6: "hello world" from the user costs 1 (role) + 2 (content) + 3 = 6 tokens (test_steps.test_message_tokens);
    # 3 are reserved for priming. With room for two messages the newest two stay and the oldest is cut.
    chat = [message(f"m{i}", "user", "hello world") for i in range(3)]
    assert st_message_tokens(chat[0]) == 6
    result = st_budget(max_context=3 + 12 + 5, max_tokens=0, history=chat)
    assert [m.id for m in result.history] == ["m1", "m2"]
    assert result.remaining == 5
    assert [(d.id, d.reason, d.tokens) for d in result.dropped] == [("m0", "over_budget", 6)]
    assert result.tokens == {"m0": 6, "m1": 6, "m2": 6}


def test_each_chat_message_expands_its_macros_in_its_own_context(shared_fixtures):
    # The history's macros are expanded message by message, each with a fresh macro context (as the separate
    # history step did): {{user}} is the user's name everywhere, and a variable set in one message is not read by
    # a later one, so {{getvar::mood}} there is empty.
    preset = json.loads((shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_text(encoding="utf-8"))
    history = [{"id": "h0", "role": "assistant", "content": "Welcome."},
               {"id": "h1", "role": "user", "content": "{{setvar::mood::calm}}I am {{user}}."},
               {"id": "h2", "role": "assistant", "content": "Mood: [{{getvar::mood}}]"}]
    result = assemble({"strategy": "builtin-st",
                       "resources": {"preset": preset, "character": {"name": "Sera", "description": "A guardian."}},
                       "conversation": {"history": history,
                                        "input": [{"id": "now", "role": "user", "content": "Go on."}]},
                       "host": {"core_available": True}, "names": {"user": "Alex"}})
    texts = [m.content for m in result.request.messages]
    assert "I am Alex." in texts
    assert "Mood: []" in texts
