"""Timed world info effects carried between generations (sillytavern.md §7.3; SillyTavern 1.18's
`WorldInfoTimedEffects`): sticky, cooldown and delay, counted in the messages the scan reads."""

from __future__ import annotations

import pytest

from assembly import assemble
from assembly.reading import ImportInvalid
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.sillytavern.worldinfo_timed import parse_world_state

NAMES = {"user": "Ona", "char": "Pell"}
BOOK = "atlas"


def _run(*entries: WorldBookEntry, chat: list[str], state: dict | None = None):
    book = WorldBook(name=BOOK, activation="keywords", recursive=False, scan_depth=1, entries=entries)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(chat)]
    return activate_world_info(book, chat=messages, names=NAMES, max_context=100_000,
                               world_state=parse_world_state(state))


def _uids(result) -> list:
    return sorted(a.uid for a in result.active)


def _state(result) -> dict:
    return result.world_state.model_dump()


def _effect(start: int, end: int, protected: bool = False) -> dict:
    return {"start": start, "end": end, "protected": protected}


LAMP = WorldBookEntry(uid=1, keys=("lamp",), sticky=2, content="The lamp hums.")
BELL = WorldBookEntry(uid=2, keys=("bell",), cooldown=2, content="The bell rang.")


def test_an_activated_sticky_entry_starts_its_effect_at_the_scanned_length():
    result = _run(LAMP, chat=["hello", "a lamp"])
    assert _state(result) == {"sticky": {"atlas.1": _effect(2, 4)}, "cooldown": {}}


def test_a_sticky_entry_stays_active_without_its_key_until_the_chat_reaches_its_end():
    carried = {"sticky": {"atlas.1": _effect(2, 4)}, "cooldown": {}}
    kept = _run(LAMP, chat=["hello", "a lamp", "dark now"], state=carried)
    assert _uids(kept) == [1]
    assert kept.active[0].reason.kind == "sticky"
    assert _state(kept)["sticky"] == {"atlas.1": _effect(2, 4)}  # the running effect is not restarted
    ended = _run(LAMP, chat=["hello", "a lamp", "dark now", "still dark"], state=carried)
    assert _uids(ended) == [] and _state(ended) == {"sticky": {}, "cooldown": {}}


def test_an_entry_in_cooldown_is_skipped_even_when_its_key_matches():
    carried = {"sticky": {}, "cooldown": {"atlas.2": _effect(1, 3)}}
    result = _run(BELL, chat=["the bell", "the bell again"], state=carried)
    assert _uids(result) == []
    assert next(s.reason.kind for s in result.skipped if s.uid == 2) == "cooldown"
    after = _run(BELL, chat=["the bell", "x", "the bell"], state=carried)
    assert _uids(after) == [2]
    assert _state(after)["cooldown"] == {"atlas.2": _effect(3, 5)}


def test_a_sticky_that_ends_starts_a_protected_cooldown_at_once():
    both = WorldBookEntry(uid=3, keys=("horn",), sticky=1, cooldown=2, content="A horn sounds.")
    carried = {"sticky": {"atlas.3": _effect(1, 2)}, "cooldown": {"atlas.3": _effect(1, 3)}}
    result = _run(both, chat=["horn", "horn"], state=carried)
    assert _uids(result) == []  # the key matches, but the new cooldown holds it back this very scan
    assert _state(result) == {"sticky": {}, "cooldown": {"atlas.3": _effect(2, 4, protected=True)}}


def test_effects_from_a_scan_of_the_same_length_are_dropped_unless_protected():
    # a swipe scans the chat again without the reply: effects that began at that length are undone
    carried = {"sticky": {"atlas.1": _effect(2, 4)}, "cooldown": {"atlas.2": _effect(2, 4, protected=True)}}
    result = _run(LAMP, BELL, chat=["quiet", "bell"], state=carried)
    assert _uids(result) == []
    assert _state(result) == {"sticky": {}, "cooldown": {"atlas.2": _effect(2, 4, protected=True)}}


def test_a_sticky_member_wins_its_inclusion_group():
    first = WorldBookEntry(uid=4, keys=("gate",), group="door", group_override=True, order=90, content="Iron gate.")
    held = WorldBookEntry(uid=5, keys=("gate",), group="door", sticky=3, order=10, content="Wooden gate.")
    carried = {"sticky": {"atlas.5": _effect(1, 4)}, "cooldown": {}}
    assert _uids(_run(first, held, chat=["gate", "the gate"])) == [4]
    assert _uids(_run(first, held, chat=["gate", "the gate"], state=carried)) == [5]


def test_a_sticky_entry_passes_its_probability_roll():
    unlikely = WorldBookEntry(uid=6, keys=("coin",), sticky=2, probability=1, content="Heads.")
    carried = {"sticky": {"atlas.6": _effect(1, 3)}, "cooldown": {}}
    assert _uids(_run(unlikely, chat=["coin", "coin"])) == []
    assert _uids(_run(unlikely, chat=["coin", "coin"], state=carried)) == [6]


def test_delay_waits_for_the_scanned_chat_and_keeps_no_state():
    late = WorldBookEntry(uid=7, keys=("owl",), delay=3, content="An owl calls.")
    early = _run(late, chat=["owl", "owl"])
    assert _uids(early) == [] and _state(early) == {"sticky": {}, "cooldown": {}}
    assert _uids(_run(late, chat=["owl", "owl", "owl"])) == [7]


def test_effects_of_entries_no_longer_in_the_book_wait_for_their_end():
    carried = {"sticky": {"other.9": _effect(1, 5)}, "cooldown": {}}
    assert _state(_run(LAMP, chat=["a", "b"], state=carried))["sticky"] == {"other.9": _effect(1, 5)}
    assert _state(_run(LAMP, chat=["a", "b", "c", "d", "e"], state=carried))["sticky"] == {}


def test_the_carried_state_is_read_as_sillytavern_reads_it():
    state = parse_world_state({"sticky": {"atlas.1": {"start": "2", "end": 4.0, "hash": 12}, "atlas.2": None},
                               "extra": True})
    assert state.model_dump() == {"sticky": {"atlas.1": _effect(2, 4)}, "cooldown": {}}
    with pytest.raises(ImportInvalid, match="world_state.sticky.atlas.1.end"):
        parse_world_state({"sticky": {"atlas.1": {"start": 1, "end": "soon"}}})


def test_the_request_carries_the_state_in_and_the_result_carries_it_out():
    request = {"strategy": "builtin-st", "host": {"core_available": True}, "names": {"user": "Ona"},
               "generation": {"type": "normal", "turn": 1},
               "resources": {"character": {"name": "Pell"}, "worldbook": {
                   "name": BOOK, "activation": "keywords", "entries": {"1": {"uid": 1, "key": ["lamp"], "sticky": 2,
                                                                              "content": "The lamp hums."}}},
                   "world_state": {"sticky": {"atlas.1": _effect(1, 4)}, "cooldown": {}}},
               "conversation": {"history": [{"id": "m1", "role": "user", "content": "a lamp"},
                                            {"id": "m2", "role": "assistant", "content": "yes"}],
                                "input": [{"id": "m3", "role": "user", "content": "and then?"}]}}
    result = assemble(request).model_dump(mode="json")
    assert [e["uid"] for e in result["world_info"]["active"]] == [1]
    assert result["world_info"]["world_state"] == {"sticky": {"atlas.1": _effect(1, 4)}, "cooldown": {}}
    bad = {**request, "resources": {**request["resources"], "world_state": {"sticky": {"atlas.1": {"end": "x"}}}}}
    with pytest.raises(Exception, match="world_state"):
        assemble(bad)


@pytest.mark.parametrize(("start", "expected"), [("9" * 5000, "a whole number of at most 15 digits"),
                                                 ("²", "a whole number"), ("-3", None)])
def test_a_start_written_as_text_is_a_count_of_at_most_15_ascii_digits(start, expected):
    if expected is None:
        assert parse_world_state({"sticky": {"a.1": {"start": start, "end": 4}}}).sticky["a.1"].start == -3
        return
    with pytest.raises(ImportInvalid, match=f"world_state.sticky.a.1.start: expected {expected}"):
        parse_world_state({"sticky": {"a.1": {"start": start, "end": 4}}})
