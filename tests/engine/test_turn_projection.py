"""The turn projection: N more host turns simulated through the engine; PRE_STEP_ACCUMULATES names a pre-step text
that piles up in the durable history, with its projected cost."""

import copy

import pytest

from assembly.catalogue import get_builtin_strategy
from assembly.errors import AssemblyError
from assembly.turn_projection import project_turns

PRESET = {"prompts": [
    {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
    {"identifier": "chatHistory", "marker": True},
    {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}


def _request(strategy_id):
    return {"strategy": get_builtin_strategy(strategy_id), "resources": {"preset": PRESET},
            "conversation": {"history": [], "input": [{"id": "u1", "role": "user", "content": "Hello?"}]},
            "host": {"core_available": True}}


def test_a_standard_backend_pre_step_accumulates_one_copy_a_turn():
    request = _request("builtin-native-slots")
    before = copy.deepcopy(request)
    projection = project_turns(request, 5)
    assert request == before  # never mutated
    assert [t.turn for t in projection.turns] == [0, 1, 2, 3, 4, 5]
    copies = [t.pre_step_copies for t in projection.turns]
    assert copies == [1, 2, 3, 4, 5, 6]
    assert all(b.tokens > a.tokens for a, b in zip(projection.turns, projection.turns[1:], strict=False))
    (found,) = [d for d in projection.diagnostics if d.code == "PRE_STEP_ACCUMULATES"]
    details = found.details
    assert details["text"] == "Answer in one line." and details["copies_now"] == 1 and details["copies_after"] == 6
    assert details["projected_tokens"] == 5 * details["tokens_each"] > 0


def test_builtin_st_sends_post_history_once_and_reports_nothing():
    projection = project_turns(_request("builtin-st"), 3)
    assert all(t.pre_step_copies == 0 for t in projection.turns)
    assert projection.diagnostics == []
    assert [t.history_messages for t in projection.turns] == sorted({t.history_messages for t in projection.turns})


def test_overflow_turn_is_where_the_window_is_first_exceeded():
    request = _request("builtin-native-slots")
    first = project_turns(request, 5).turns
    window = first[2].tokens  # a window turn 2 just fills: turn 3 is the first over it
    request["budget"] = {"context_window": window}
    projection = project_turns(request, 5)
    overflow = projection.overflow_turn
    assert overflow is not None and overflow >= 1 and projection.turns[overflow].fits is False
    assert all(t.fits for t in projection.turns[:overflow])


@pytest.mark.parametrize("turns", [0, 21, "5", True])
def test_a_bad_turn_count_is_refused_naming_the_field(turns):
    with pytest.raises(AssemblyError) as refused:
        project_turns(_request("builtin-native-slots"), turns)
    assert refused.value.status == 400 and "turns" in str(refused.value)


def _gate_request():
    lore = {"activation": "keywords", "entries": [
        {"uid": 1, "content": "The gate is closed at night. " * 20, "position": "before", "keys": ["gate"]}]}
    preset = {"prompts": [{"identifier": "main", "role": "system", "content": "You keep the gate."},
                          {"identifier": "worldInfoBefore", "marker": True},
                          {"identifier": "chatHistory", "marker": True}]}
    return {"strategy": get_builtin_strategy("builtin-st"), "resources": {"preset": preset, "worldbook": lore},
            "conversation": {"history": [{"id": "h1", "role": "user", "content": "Good evening."},
                                         {"id": "h2", "role": "assistant", "content": "Evening, traveller."}],
                             "input": [{"id": "u1", "role": "user", "content": "Is the gate open?"}]},
            "host": {"core_available": True}}


def test_future_turns_repeat_the_real_input_and_reply_so_world_info_keeps_firing():
    """A keyword in the real input keeps its world-info entry in every projected request: the request grows by the
    repeated turns and never falls when the input moves into the history (placeholders would drop the entry)."""
    projection = project_turns(_gate_request(), 5)
    assert projection.future_turns == "repeat"
    assert projection.repeated_input == "Is the gate open?" and projection.repeated_reply == "Evening, traveller."
    tokens = [t.tokens for t in projection.turns]
    assert all(b > a for a, b in zip(tokens, tokens[1:], strict=False)), tokens


def test_a_conversation_without_a_reply_says_the_reply_is_a_placeholder():
    request = _request("builtin-st")
    projection = project_turns(request, 2)
    assert projection.future_turns == "input-only" and projection.repeated_input == "Hello?"
    assert projection.repeated_reply is None
    request["conversation"]["input"] = []
    assert project_turns(request, 2).future_turns == "placeholder"
