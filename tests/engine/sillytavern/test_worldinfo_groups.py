"""Inclusion groups with prioritized members, and entry delay (sillytavern.md §7.3, §13.3).

Read from SillyTavern 1.18's `filterByInclusionGroups`: per pass, the `group_override` member of highest order
wins its group; a group is closed for later passes only by an active entry whose whole `group` field is the
group's name; a loser is scanned again in later passes.
"""

from __future__ import annotations

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.sillytavern.worldinfo_groups import object_key_order

NAMES = {"user": "Ona", "char": "Pell"}


def _run(*entries: WorldBookEntry, chat: list[str], recursive: bool = True, **kwargs):
    wb = WorldBook(activation="keywords", recursive=recursive, scan_depth=5, entries=entries)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(chat)]
    return activate_world_info(wb, chat=messages, names=NAMES, max_context=100_000, **kwargs)


def _uids(result) -> list:
    return sorted(a.uid for a in result.active)


def _skip(result, uid):
    return next(s.reason for s in result.skipped if s.uid == uid)


def test_the_prioritized_member_of_highest_order_wins():
    result = _run(
        WorldBookEntry(uid=1, keys=("tide",), group="sea", group_override=True, order=40, content="low tide"),
        WorldBookEntry(uid=2, keys=("tide",), group="sea", group_override=True, order=90, content="high tide"),
        WorldBookEntry(uid=3, keys=("tide",), group="sea", group_weight=1000, order=99, content="spring tide"),
        chat=["The tide turns."], recursive=False)
    assert _uids(result) == [2]  # an unprioritized member loses whatever its weight or order
    assert (_skip(result, 1).winner, _skip(result, 3).winner) == (2, 2)


def test_a_group_is_closed_only_by_an_entry_whose_group_field_is_exactly_its_name():
    # Pass 1: 1 beats 2 in "reef". Pass 2 (recursion on 1's text) brings 2 back: the active entry's field is
    # "reef,wreck", not "reef", so 2 wins "reef" on its own. 3 waits for the word "pearl" and meets an entry of
    # group "pearls" exactly: closed.
    result = _run(
        WorldBookEntry(uid=1, keys=("dive",), group="reef,wreck", group_override=True, order=80,
                       content="the pearl lies deep"),
        WorldBookEntry(uid=2, keys=("dive",), group="reef", group_override=True, order=20, content="coral"),
        WorldBookEntry(uid=4, keys=("dive",), group="pearls", order=10, content="oysters"),
        WorldBookEntry(uid=3, keys=("pearl",), group="pearls", order=5, content="a pearl diver"),
        chat=["We dive at dawn."])
    assert _uids(result) == [1, 2, 4]
    assert _skip(result, 3).kind == "group_lost"
    assert _skip(result, 3).group == "pearls"


def test_a_loser_comes_back_only_when_there_is_another_pass():
    entries = (WorldBookEntry(uid=1, keys=("dive",), group="reef,wreck", group_override=True, order=80,
                              content="the pearl lies deep"),
               WorldBookEntry(uid=2, keys=("dive",), group="reef", group_override=True, order=20, content="coral"))
    assert _uids(_run(*entries, chat=["We dive."], recursive=False)) == [1]
    assert _uids(_run(*entries, chat=["We dive."])) == [1, 2]


def test_an_entry_dropped_by_two_groups_takes_the_last_match_with_it():
    # SillyTavern removes with newEntries.splice(newEntries.indexOf(entry), 1): the second removal of 2 finds no
    # index (-1) and removes the last new match, 9, which is in no group at all.
    result = _run(
        WorldBookEntry(uid=1, keys=("gull",), group="north", group_override=True, order=300, content="a"),
        WorldBookEntry(uid=2, keys=("gull",), group="north,south", order=200, content="b"),
        WorldBookEntry(uid=3, keys=("gull",), group="south", group_override=True, order=150, content="c"),
        WorldBookEntry(uid=9, keys=("gull",), order=10, content="d"),
        chat=["A gull cries."], recursive=False)
    assert _uids(result) == [1, 3]
    assert "in place of entry 2" in _skip(result, 9).message


def test_group_names_are_visited_in_object_key_order():
    assert object_key_order(["b", "10", "a", "2", "01"]) == ["2", "10", "b", "a", "01"]


def test_entry_delay_counts_the_chat_messages():
    delayed = WorldBookEntry(uid=5, keys=("lamp",), delay=3, content="the lamp is lit")
    assert _uids(_run(delayed, chat=["lamp", "ok"])) == []
    assert _skip(_run(delayed, chat=["lamp", "ok"]), 5).kind == "delayed"
    assert _uids(_run(delayed, chat=["lamp", "ok", "lamp"])) == [5]


def test_entry_delay_counts_a_swiped_message_the_scan_does_not_see():
    delayed = WorldBookEntry(uid=5, keys=("lamp",), delay=3, content="the lamp is lit")
    assert _uids(_run(delayed, chat=["lamp", "ok"], generation="swipe", full_chat_length=3)) == [5]


def test_a_name_of_thousands_of_digits_is_no_array_index():
    long = "9" * 5000
    assert object_key_order(["b", long, "10", "2"]) == ["2", "10", "b", long]
