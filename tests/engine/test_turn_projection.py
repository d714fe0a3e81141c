"""The turn projection: N more host turns simulated through the engine; PRE_STEP_ACCUMULATES names a pre-step text
that piles up in the durable history, with its projected cost."""

import copy

import pytest

from assembly.catalogue import get_builtin_strategy
from assembly.errors import AssemblyError
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo_chance import Chance
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


# Timed world info across projected turns (SillyTavern's WorldInfoTimedEffects, sillytavern.md §7.3): builtin-st
# commits the typed user message and the reply, so projected turn n scans a chat of 2n + 1 messages (turn 0: the one
# input). An effect begun at length L with duration d holds while the chat is shorter than L + d.
BOOK = "atlas"
LAMP = WorldBookEntry(uid=1, keys=("lamp",), sticky=3, content="The lamp hums.")
BELL = WorldBookEntry(uid=2, constant=True, cooldown=3, content="The bell rings.")
HORN = WorldBookEntry(uid=3, constant=True, sticky=2, cooldown=3, content="A horn sounds.")
GATE = WorldBookEntry(uid=4, constant=True, delay=4, content="The gate opens.")


def _st_request(*entries, generation=None, history=(), text="A lamp at the window."):
    book = WorldBook(name=BOOK, activation="keywords", recursive=False, scan_depth=1, entries=entries)
    return {"strategy": "builtin-st", "host": {"core_available": True}, "names": {"user": "Ona"},
            "generation": generation or {"type": "normal"},
            "resources": {"character": {"name": "Pell"}, "worldbook": book},
            "conversation": {"history": list(history), "input": [{"id": "u0", "role": "user", "content": text}]}}


def _active(projection, uid):
    return [uid in t.world_info for t in projection.turns]


def test_each_projected_turn_commits_the_user_message_its_assembly_record_and_the_reply():
    # the assembly record (host.LOG_KIND) is kept in the history but never scanned: the chat grows by two a turn
    projection = project_turns(_st_request(LAMP), 3)
    assert [t.history_messages for t in projection.turns] == [0, 3, 6, 9]


def test_a_sticky_entry_outlasts_its_key_for_the_projected_turns_its_sticky_covers():
    # turn 0 (length 1): "lamp" matches, sticky 1..4; turn 1 (length 3 < 4): kept by sticky without its key;
    # turn 2 (length 5): ended, and the key has scrolled out of the scan (placeholder turns: the real input, repeated,
    # would match the key again on every turn)
    assert _active(project_turns(_st_request(LAMP), 4, repeat=False), 1) == [True, True, False, False, False]
    assert _active(project_turns(_st_request(LAMP), 4), 1) == [True] * 5


def test_a_cooldown_holds_a_constant_entry_back_on_the_projected_turns_it_covers():
    # length 1: active, cooldown 1..4; length 3: cooling; length 5: over, active again, cooldown 5..8; length 7:
    # cooling; length 9: active
    assert _active(project_turns(_st_request(BELL), 5), 2) == [True, False, True, False, True, False]


def test_a_sticky_that_runs_out_starts_its_cooldown_in_the_projection():
    # length 1: active, sticky 1..3 and cooldown 1..4; length 3: sticky over, a protected cooldown 3..6 at once;
    # length 5: cooling; length 7: over, active again (sticky 7..9); length 9: sticky over, cooldown 9..12; length
    # 11: cooling; length 13: active
    assert _active(project_turns(_st_request(HORN), 6), 3) == [True, False, False, True, False, False, True]


def test_a_delayed_entry_waits_until_the_projected_chat_is_long_enough():
    assert _active(project_turns(_st_request(GATE), 3), 4) == [False, False, True, True]  # lengths 1, 3, 5, 7


def test_a_carried_state_runs_its_course_from_the_request_on():
    # a chat of two messages and the input (length 3) with the bell cooling until length 6: held back at lengths 3
    # and 5, active at 7 (a new cooldown 7..10), held back at 9
    history = [{"id": "m1", "role": "user", "content": "hi"}, {"id": "m2", "role": "assistant", "content": "yes"}]
    request = _st_request(BELL, generation={"type": "normal", "turn": 1}, history=history, text="and then?")
    request["resources"]["world_state"] = {"sticky": {}, "cooldown": {f"{BOOK}.2": {"start": 1, "end": 6}}}
    assert _active(project_turns(request, 3), 2) == [False, False, True, False]


def test_each_projected_turn_rolls_the_seeded_chance_of_its_own_generation():
    # the rolls come from the seed and generation.turn: projected turn n is generation 2 + n of the chat
    coin = WorldBookEntry(uid=5, constant=True, probability=50, content="Heads.")
    seed = 11
    projection = project_turns(_st_request(coin, generation={"type": "normal", "turn": 2, "seed": seed}), 6)
    expected = [Chance(seed=seed, turn=2 + n).probability_roll() <= 50 for n in range(7)]
    assert _active(projection, 5) == expected
    assert len(set(expected)) == 2  # the seed chosen gives both outcomes over these turns


def test_a_request_without_keyword_world_info_projects_no_entries():
    assert all(t.world_info is None for t in project_turns(_request("builtin-st"), 2).turns)
