"""What world info scans for each generation type (sillytavern.md §13.3).

quiet: the quiet prompt is scanned (SillyTavern sets it as an extension prompt that allows scanning); continue: the
continued message is in the chat and scanned; swipe: the swiped message is left out before world info scans, and
entry delays count only what it scans.
"""

from __future__ import annotations

import pytest

from assembly import assemble

PRESET = {"prompts": [
    {"identifier": "main", "role": "system", "content": "MAIN"},
    {"identifier": "worldInfoBefore", "marker": True},
    {"identifier": "chatHistory", "marker": True}],
    "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": i, "enabled": True} for i in ("main", "worldInfoBefore", "chatHistory")]}]}


def _book(*entries: dict) -> dict:
    return {"activation": "keywords", "scan_depth": 10, "entries": {
        str(e["uid"]): {"key": [], "content": f"LORE {e['uid']}", **e} for e in entries}}


def _active(generation: dict, history: list[str], *entries: dict) -> list[int]:
    chat = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "content": text}
            for i, text in enumerate(history)]
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": PRESET, "character": {"name": "Pell"},
                                     "worldbook": _book(*entries)},
                       "conversation": {"history": chat}, "names": {"user": "Ona"}, "generation": generation})
    return sorted(int(a.uid) for a in result.world_info.active)


COMET = {"uid": 1, "key": ["comet"]}


@pytest.mark.parametrize(("generation", "active"), [
    ({"type": "quiet", "quiet_prompt": "Describe the comet."}, [1]),
    ({"type": "quiet", "quiet_prompt": "Describe the sky."}, []),
    ({"type": "normal"}, []),
])
def test_the_quiet_prompt_is_scanned(generation, active):
    assert _active(generation, ["Good evening.", "Evening."], COMET) == active


def test_macros_in_the_quiet_prompt_are_expanded_before_the_scan():
    keyed_on_the_name = {"uid": 2, "key": ["Pell's journal"]}
    assert _active({"type": "quiet", "quiet_prompt": "Read {{char}}'s journal."}, ["Hi.", "Hello."],
                   keyed_on_the_name) == [2]


def test_the_continued_message_is_scanned():
    assert _active({"type": "continue"}, ["Look up.", "A comet crosses the"], COMET) == [1]


@pytest.mark.parametrize(("generation", "active"), [
    ({"type": "normal"}, [1]),
    ({"type": "swipe"}, []),  # the message being swiped is asked for again: its words activate nothing
])
def test_a_swiped_message_activates_nothing(generation, active):
    assert _active(generation, ["Look up.", "A comet!"], COMET) == active


def test_entry_delay_counts_only_the_messages_a_swipe_scans():
    # SillyTavern's timed effects count the chat world info scans, which a swipe has already shortened
    waits_for_three = {"uid": 3, "key": ["comet"], "delay": 3}
    history = ["A comet, look.", "Where?", "There."]
    assert _active({"type": "swipe"}, history, waits_for_three) == []  # 3 messages, the scan sees 2
    assert _active({"type": "swipe"}, [*history, "Up there."], waits_for_three) == [3]


def _scan_of(history: list[dict], typed: list[dict]) -> list[int]:
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": PRESET, "character": {"name": "Pell"}, "worldbook": {
                           "activation": "keywords", "include_names": False,
                           "entries": {"1": {"uid": 1, "key": ["Pell"], "content": "LORE 1"}}}},
                       "conversation": {"history": history, "input": typed}, "names": {"user": "Ona"}})
    return sorted(int(a.uid) for a in result.world_info.active)


def test_the_typed_input_is_scanned_with_its_macros_substituted():
    # SillyTavern stores what the user sends with substituteParams applied; stored messages are scanned as written.
    asked = {"id": "u", "role": "user", "content": "Where is {{char}}?"}
    greeting = {"id": "g", "role": "assistant", "content": "Hello."}
    assert _scan_of([greeting], [asked]) == [1]
    assert _scan_of([greeting, asked], []) == []
