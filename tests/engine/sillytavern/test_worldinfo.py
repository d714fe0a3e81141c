"""World info activation (sillytavern.md §7, §11; engine.md §5 "World book activation").

Expected values are worked out by hand from the reference's rules and, for the Eldoria book, from the entries of
shared/fixtures/sillytavern/st_worldinfo_Eldoria.json. Token counts are only used to place a budget exactly on an
edge; which entries fall on which side of it follows from the rules.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly.reading import ImportInvalid
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.settings import import_settings
from assembly.sillytavern.vocabulary import WORLD_POSITION_NUMBER
from assembly.sillytavern.worldbook import export_worldbook, import_worldbook
from assembly.sillytavern.worldinfo import WorldInfoError, activate_world_info
from assembly.sillytavern.worldinfo_budget import world_info_budget
from assembly.sillytavern.worldinfo_emission import depth_groups, format_world_info
from assembly.sillytavern.worldinfo_keys import find_key, parse_regex_key, regex_key_refusal
from assembly.sillytavern.worldinfo_models import WorldInfoActivation
from assembly.tokens import count_tokens

NAMES = {"user": "Aria", "char": "Seraphina"}
BIG = 1_000_000  # a context so large that the budget never matters


def entry(uid, **fields) -> WorldBookEntry:
    return WorldBookEntry(uid=uid, **{"content": f"content {uid}", **fields})


def book(*entries: WorldBookEntry, **book_settings) -> WorldBook:
    return WorldBook(entries=entries, **{"activation": "keywords", **book_settings})


def said(*texts: str) -> list[dict]:
    """A chat, oldest first, alternating user / assistant starting with user."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def run(wb: WorldBook, chat: list[dict], **kwargs) -> WorldInfoActivation:
    return activate_world_info(wb, chat=chat, names=kwargs.pop("names", NAMES),
                               max_context=kwargs.pop("max_context", BIG), **kwargs)


def active_uids(result: WorldInfoActivation) -> list:
    return [a.uid for a in result.active]


def skip_of(result: WorldInfoActivation, uid):
    return next(s.reason for s in result.skipped if s.uid == uid)


def active_of(result: WorldInfoActivation, uid):
    return next(a for a in result.active if a.uid == uid)


def assert_each_entry_once(wb: WorldBook, result: WorldInfoActivation) -> None:
    listed = [a.uid for a in result.active] + [s.uid for s in result.skipped]
    assert sorted(map(str, listed)) == sorted(str(e.uid) for e in wb.entries)


# ---------------------------------------------------------------------------------------------- key options

CASE_CASES = [
    # (book case_sensitive, entry override, key, message, active)
    (False, None, "Dragon", "a dragon appears", True),
    (True, None, "Dragon", "a dragon appears", False),
    (True, None, "Dragon", "a Dragon appears", True),
    (False, True, "Dragon", "a dragon appears", False),
    (True, False, "Dragon", "a dragon appears", True),
    (False, None, "DRAGON", "a Dragon appears", True),
]


@pytest.mark.parametrize(("book_case", "override", "key", "message", "expected"), CASE_CASES)
def test_case_sensitivity(book_case, override, key, message, expected):
    wb = book(entry(1, keys=(key,), case_sensitive=override), case_sensitive=book_case)
    assert (active_uids(run(wb, said(message))) == [1]) is expected


WHOLE_WORD_CASES = [
    # (book match_whole_words, entry override, key, message, active)
    (True, None, "wood", "deep in the woods", False),
    (False, None, "wood", "deep in the woods", True),
    (True, None, "wood", "made of wood.", True),  # punctuation is a boundary
    (True, None, "wood", "wood", True),  # the name prefix "Aria: " and the end of the buffer are boundaries
    (True, False, "wood", "deep in the woods", True),
    (False, True, "wood", "deep in the woods", False),
    (True, None, "magical forest", "the magical forests", True),  # several words: plain substring
    (True, None, "_x", "a_x", False),  # "_" is a word character
    (True, None, "42", "room x42", False),
    # JavaScript's \W is every character but [A-Za-z0-9_]: CJK and accented neighbours are boundaries.
    (True, None, "龙", "一条龙飞过", True),
    (True, None, "ドラゴン", "ドラゴンが来た", True),
    (True, None, "caf", "un café noir", True),
    (True, None, "café", "deux cafés", False),
    (True, None, "naïve", "so naïve!", True),
    (False, None, "龙", "一条龙飞过", True),
]


@pytest.mark.parametrize(("book_whole", "override", "key", "message", "expected"), WHOLE_WORD_CASES)
def test_whole_words(book_whole, override, key, message, expected):
    wb = book(entry(1, keys=(key,), match_whole_words=override), match_whole_words=book_whole)
    assert (active_uids(run(wb, said(message))) == [1]) is expected


SECONDARY_CASES = [
    # (logic, message, active)
    ("and_any", "a sword of fire", True),
    ("and_any", "a sword of fire and ice", True),
    ("and_any", "a plain sword", False),
    ("not_all", "a sword of fire", True),
    ("not_all", "a plain sword", True),
    ("not_all", "a sword of fire and ice", False),
    ("not_any", "a plain sword", True),
    ("not_any", "a sword of ice", False),
    ("and_all", "a sword of fire and ice", True),
    ("and_all", "a sword of fire", False),
    ("and_all", "fire and ice, no blade", False),  # the primary key decides first
]


@pytest.mark.parametrize(("logic", "message", "expected"), SECONDARY_CASES)
def test_secondary_logic(logic, message, expected):
    wb = book(entry(1, keys=("sword",), secondary_keys=("fire", "ice"), selective_logic=logic))
    result = run(wb, said(message))
    if expected:
        reason = active_of(result, 1).reason
        assert (reason.kind, reason.key, reason.selective_logic) == ("secondary", "sword", logic)
        assert set(reason.secondary_keys) == {k for k in ("fire", "ice") if k in message}
    elif "sword" in message:
        assert skip_of(result, 1).kind == "secondary_failed"
        assert skip_of(result, 1).key == "sword"
    else:
        assert skip_of(result, 1).kind == "no_match"


def test_secondary_keys_ignored_when_not_selective():
    wb = book(entry(1, keys=("sword",), secondary_keys=("fire", "ice"), selective=False, selective_logic="and_all"))
    reason = active_of(run(wb, said("a plain sword")), 1).reason
    assert (reason.kind, reason.selective_logic) == ("key", None)


SCAN_DEPTH_CHAT = said("the old dragon sleeps", "hello", "how are you", "fine")  # the key is 4 messages back


@pytest.mark.parametrize(("book_depth", "override", "expected"), [
    (2, None, False),
    (3, None, False),
    (4, None, True),
    (2, 4, True),  # the entry's override wins
    (9, 3, False),
    (50, None, True),  # deeper than the chat: all of it
    (0, None, False),
    (9, 0, False),
])
def test_scan_depth_book_and_entry(book_depth, override, expected):
    wb = book(entry(1, keys=("dragon",), scan_depth=override), scan_depth=book_depth)
    result = run(wb, SCAN_DEPTH_CHAT)
    assert (active_uids(result) == [1]) is expected
    if expected:
        assert active_of(result, 1).reason.matched_in.model_dump() == {
            "kind": "message", "index": 0, "uid": None, "field": None}


def test_scan_depth_zero_scans_nothing_not_even_recursion():
    # SillyTavern returns an empty buffer for depth 0: an entry with scan depth 0 cannot be reached by recursion.
    wb = book(entry(1, constant=True, content="the dragon"), entry(2, keys=("dragon",), scan_depth=0))
    result = run(wb, said("hello"))
    assert active_uids(result) == [1]
    assert skip_of(result, 2).kind == "no_match"
    assert "scan depth is 0" in skip_of(result, 2).message


def test_include_names_prefixes_the_speaker():
    wb_named = book(entry(1, keys=("seraphina",)))
    chat = said("hi", "Welcome back.")
    assert active_uids(run(wb_named, chat)) == [1]  # "Seraphina: Welcome back." holds the key
    assert active_uids(run(wb_named.model_copy(update={"include_names": False}), chat)) == []
    # A message's own name wins over the role's default.
    named = [{"role": "assistant", "content": "Hello.", "name": "Narrator"}]
    assert active_uids(run(book(entry(1, keys=("narrator",))), named)) == [1]
    assert active_uids(run(book(entry(1, keys=("seraphina",))), named)) == []


# ---------------------------------------------------------------------------------------------- recursion


def chain(**overrides) -> tuple[WorldBookEntry, ...]:
    """A mentions beta, B mentions gamma, C is about gamma."""
    a = {"keys": ("alpha",), "content": "alpha knows beta"}
    b = {"keys": ("beta",), "content": "beta fears gamma"}
    c = {"keys": ("gamma",), "content": "gamma"}
    for name, fields in overrides.items():
        {"a": a, "b": b, "c": c}[name].update(fields)
    return entry(1, **a), entry(2, **b), entry(3, **c)


@pytest.mark.parametrize(("overrides", "book_settings", "active", "skips"), [
    ({}, {}, [1, 2, 3], {}),
    ({}, {"recursive": False}, [1], {2: "no_match", 3: "no_match"}),
    ({"a": {"prevent_recursion": True}}, {}, [1], {2: "no_match", 3: "no_match"}),
    ({"b": {"exclude_recursion": True}}, {}, [1], {2: "recursion_excluded", 3: "no_match"}),
    ({"b": {"prevent_recursion": True}}, {}, [1, 2], {3: "no_match"}),
    ({}, {"max_recursion_steps": 2}, [1, 2], {3: "no_match"}),
    ({}, {"max_recursion_steps": 1}, [1], {2: "no_match", 3: "no_match"}),
])
def test_recursion(overrides, book_settings, active, skips):
    wb = book(*chain(**overrides), **book_settings)
    result = run(wb, said("tell me about alpha"))
    assert sorted(active_uids(result)) == active
    assert {uid: skip_of(result, uid).kind for uid in skips} == skips
    assert_each_entry_once(wb, result)


def test_recursion_reasons_name_the_entry_and_the_pass():
    result = run(book(*chain()), said("tell me about alpha"))
    first, second, third = (active_of(result, uid).reason for uid in (1, 2, 3))
    assert (first.kind, first.key, first.scan_pass, first.matched_in.kind, first.matched_in.index) == (
        "key", "alpha", 1, "message", 0)
    assert (second.kind, second.key, second.scan_pass, second.matched_in.uid) == ("recursion", "beta", 2, 1)
    assert (third.kind, third.key, third.scan_pass, third.matched_in.uid) == ("recursion", "gamma", 3, 2)
    assert result.scan_passes == 4  # the fourth pass finds nothing new


def test_recursion_from_a_constant_entry():
    wb = book(entry(1, constant=True, content="the beta stone"), entry(2, keys=("beta",)))
    reason = active_of(run(wb, said("hi")), 2).reason
    assert (reason.kind, reason.matched_in.uid) == ("recursion", 1)


def test_delay_until_recursion():
    wb = book(entry(1, keys=("alpha",), content="alpha"), entry(2, keys=("beta",), delay_until_recursion=True))
    # In the chat from the start, but it waits for the recursion pass that entry 1 opens.
    result = run(wb, said("alpha and beta"))
    reason = active_of(result, 2).reason
    assert (reason.kind, reason.scan_pass, reason.matched_in.kind) == ("key", 2, "message")
    # Without anything to recurse on, level 1 is never reached.
    result = run(wb, said("only beta"))
    assert skip_of(result, 2).kind == "delayed_until_recursion"


def test_delay_until_recursion_levels_open_one_after_another():
    wb = book(entry(1, keys=("beta",), delay_until_recursion=1), entry(2, keys=("gamma",), delay_until_recursion=2))
    # Nothing activates in the first pass; level 2 is still open, so a recursion pass runs at level 2, where both
    # level 1 and level 2 entries may match the chat.
    result = run(wb, said("beta gamma"))
    assert sorted(active_uids(result)) == [1, 2]
    assert {active_of(result, uid).reason.scan_pass for uid in (1, 2)} == {2}


def test_min_activations_widen_the_scan_depth():
    wb = book(entry(1, keys=("dragon",)), scan_depth=1, min_activations=1)
    result = run(wb, said("a dragon", "hello"))
    reason = active_of(result, 1).reason
    assert (reason.scan_pass, reason.matched_in.index) == (2, 0)
    # Without min activations the depth-1 scan misses it.
    assert active_uids(run(wb.model_copy(update={"min_activations": 0}), said("a dragon", "hello"))) == []


# ---------------------------------------------------------------------------------------------- constant, disabled


def test_constant_disabled_and_keyless_entries():
    wb = book(
        entry(1, constant=True),
        entry(2, constant=True, enabled=False),
        entry(3),  # no keys, not constant
        entry(4, keys=("dragon",), enabled=False),
    )
    result = run(wb, said("a dragon"))
    assert active_uids(result) == [1]
    assert active_of(result, 1).reason.kind == "constant"
    assert {s.uid: s.reason.kind for s in result.skipped} == {2: "disabled", 3: "no_keys", 4: "disabled"}


def test_activation_all_takes_every_enabled_entry_without_budget():
    wb = book(entry(1), entry(2, enabled=False), entry(3, keys=("never",), content="x" * 5000), activation="all")
    result = run(wb, said("hello"), max_context=10)
    assert sorted(active_uids(result)) == [1, 3]
    assert {active_of(result, uid).reason.kind for uid in (1, 3)} == {"all"}
    assert skip_of(result, 2).kind == "disabled"
    assert result.budget is None


# ---------------------------------------------------------------------------------------------- budget


def three_constants(**per_entry) -> WorldBook:
    fields = {1: {"order": 300, "content": "The first constant entry about mountains."},
              2: {"order": 200, "content": "The second constant entry about rivers and lakes."},
              3: {"order": 100, "content": "The third constant entry about deserts."}}
    for uid, extra in per_entry.items():
        fields[int(uid[1:])].update(extra)
    return book(*(entry(uid, constant=True, **f) for uid, f in fields.items()), budget_percent=100)


def message_tokens(text: str) -> int:
    """sillytavern.md §6, §13.2: the world info budget counts a text as one system message, counted in full: the
    role and the content, 3 per message and 3 for the reply priming, less 1."""
    return count_tokens("system") + count_tokens(text) + 5


def contents(wb: WorldBook, *uids) -> str:
    return "".join(wb.entry(uid).content + "\n" for uid in uids)


def test_budget_is_spent_in_candidate_order_and_reaching_it_is_over():
    wb = three_constants()
    limit = message_tokens(contents(wb, 1, 2))  # entry 2 brings the count exactly to the budget: ">=" refuses it
    result = run(wb, said("hi"), max_context=limit)
    assert active_uids(result) == [1]
    assert (skip_of(result, 2).kind, skip_of(result, 2).tokens, skip_of(result, 2).budget) == (
        "over_budget", limit, limit)
    assert skip_of(result, 3).kind == "over_budget"  # nothing after the overflow
    assert result.budget.limit == limit and result.budget.overflowed
    assert result.budget.used == message_tokens(contents(wb, 1))
    # One more token of budget and entry 2 fits.
    assert active_uids(run(wb, said("hi"), max_context=limit + 1)) == [2, 1]  # emitted ascending


def test_ignore_budget_entries_are_exempt_but_their_text_counts():
    wb = three_constants(e3={"ignore_budget": True})
    limit = message_tokens(contents(wb, 1, 2))
    result = run(wb, said("hi"), max_context=limit)
    assert sorted(active_uids(result)) == [1, 3]  # 3 comes after the overflow and still activates
    assert skip_of(result, 2).kind == "over_budget"

    wb = three_constants(e2={"ignore_budget": True})
    limit = message_tokens(contents(wb, 1, 2, 3))  # entry 3 would bring the count exactly to the budget
    result = run(wb, said("hi"), max_context=limit)
    assert sorted(active_uids(result)) == [1, 2]
    assert skip_of(result, 3).kind == "over_budget"


def test_budget_follows_order_not_constant():
    # sillytavern.md §10.7: constants are not protected; a higher-order keyword entry is paid first.
    wb = book(entry(1, constant=True, order=10, content="The constant entry about the realm's history."),
              entry(2, keys=("dragon",), order=500, content="The dragon entry about scales and fire."),
              budget_percent=100)
    limit = message_tokens(contents(wb, 2, 1))
    result = run(wb, said("a dragon"), max_context=limit)
    assert active_uids(result) == [2]
    assert skip_of(result, 1).kind == "over_budget"


def test_budget_overflow_stops_recursion():
    wb = book(entry(1, keys=("alpha",), content="alpha knows beta", order=200),
              entry(2, constant=True, content="a long constant entry that does not fit at all", order=100),
              entry(3, keys=("beta",)), budget_percent=100)
    result = run(wb, said("alpha"), max_context=message_tokens(contents(wb, 1, 2)))
    assert active_uids(result) == [1]
    assert skip_of(result, 2).kind == "over_budget"
    assert skip_of(result, 3).kind == "no_match"
    assert result.scan_passes == 1


@pytest.mark.parametrize(("percent", "cap", "max_context", "limit"), [
    (25, 0, 8000, 2000),
    (25, 0, 10, 3),  # 2.5 rounds half up, as JavaScript's Math.round
    (25, 0, 6, 2),
    (25, 0, 1, 1),  # 0.25 -> 0 -> "|| 1"
    (0, 0, 8000, 1),
    (25, 100, 8000, 100),
    (25, 5000, 8000, 2000),  # the cap only lowers
])
def test_budget_limit(percent, cap, max_context, limit):
    wb = book(budget_percent=percent, budget_cap=cap)
    assert world_info_budget(wb, max_context) == limit
    assert run(wb, said("hi"), max_context=max_context).budget.limit == limit


# ---------------------------------------------------------------------------------------------- probability


@pytest.mark.parametrize(("use", "probability", "active", "reported"), [
    (True, 100, True, None),
    (True, 50, True, 50),  # the preview rolls 50: "roll <= probability" passes
    (True, 80, True, 80),
    (True, 49, False, None),
    (True, 0, False, None),
    (False, 0, True, None),  # no roll at all
])
def test_probability_rule(use, probability, active, reported):
    wb = book(entry(1, keys=("dragon",), use_probability=use, probability=probability))
    result = run(wb, said("a dragon"))
    if active:
        assert active_of(result, 1).reason.probability == reported
    else:
        reason = skip_of(result, 1)
        assert (reason.kind, reason.probability, reason.key) == ("probability", probability, "dragon")


def test_failed_probability_does_not_recurse():
    wb = book(entry(1, keys=("alpha",), content="beta", probability=10), entry(2, keys=("beta",)))
    result = run(wb, said("alpha"))
    assert active_uids(result) == []
    assert skip_of(result, 2).kind == "no_match"


# ---------------------------------------------------------------------------------------------- inclusion groups


@pytest.mark.parametrize(("first", "second", "winner"), [
    ({"group_weight": 30}, {"group_weight": 70}, 2),
    ({"group_weight": 70}, {"group_weight": 30}, 1),
    ({}, {}, 1),  # equal weights: the earlier candidate
    ({"order": 50}, {"order": 90}, 2),  # equal weights: the higher order is the earlier candidate
    ({"group_weight": 90}, {"group_override": True, "group_weight": 10}, 2),  # an override beats any weight
    ({"group_override": True, "order": 10}, {"group_override": True, "order": 20}, 2),
])
def test_inclusion_group_winner(first, second, winner):
    wb = book(entry(1, keys=("rain",), group="weather", **first), entry(2, keys=("rain",), group="weather", **second))
    result = run(wb, said("rain again"))
    loser = 3 - winner
    assert active_uids(result) == [winner]
    reason = skip_of(result, loser)
    assert (reason.kind, reason.group, reason.winner, reason.key) == ("group_lost", "weather", winner, "rain")


def test_inclusion_group_of_one_and_entry_in_two_groups():
    # Without recursion there is one pass. (With it, entry 2 comes back in pass 2 and wins "mood" alone: the
    # active entry's field "weather, mood" is not the group "mood"; test_worldinfo_groups.)
    wb = book(entry(1, keys=("rain",), group="weather, mood", group_weight=100),
              entry(2, keys=("rain",), group="mood", group_weight=50),
              entry(3, keys=("rain",), group="alone"), recursive=False)
    result = run(wb, said("rain"))
    assert sorted(active_uids(result)) == [1, 3]
    assert (skip_of(result, 2).group, skip_of(result, 2).winner) == ("mood", 1)


def test_inclusion_group_already_won_in_an_earlier_pass():
    wb = book(entry(1, keys=("rain",), group="weather", content="storm"),
              entry(2, keys=("storm",), group="weather"))
    result = run(wb, said("rain"))
    assert active_uids(result) == [1]
    reason = skip_of(result, 2)
    assert (reason.kind, reason.winner, reason.scan_pass) == ("group_lost", None, 2)


def test_inclusion_group_scoring():
    wb = book(entry(1, keys=("rain",), group="weather", group_weight=100),
              entry(2, keys=("rain", "storm"), group="weather", group_weight=1),
              use_group_scoring=True)
    result = run(wb, said("rain and storm"))
    assert active_uids(result) == [2]  # score 2 beats score 1 whatever the weights
    assert "score" in skip_of(result, 1).message
    # Without scoring the weight decides.
    assert active_uids(run(wb.model_copy(update={"use_group_scoring": False}), said("rain and storm"))) == [1]


# ---------------------------------------------------------------------------------------------- keys, macros


def test_regex_keys():
    wb = book(entry(1, keys=("/drag(on|oness)/i",), case_sensitive=True),
              entry(2, keys=("/^Aria: hi$/",)),  # the buffer starts with "\x01": an anchored regex never matches
              entry(3, keys=("/a/b/",)))  # an unescaped slash: a plain key
    result = run(wb, said("hi, DRAGONESS /a/b/"))
    assert sorted(active_uids(result)) == [1, 3]
    assert skip_of(result, 2).kind == "no_match"


@pytest.mark.parametrize(("key", "is_regex"), [
    ("/dragon/", True), ("/dragon/gi", True), ("/a\\/b/", True), ("/a/b/", False), ("dragon", False),
    ("/dragon/x", False), ("//", False), ("/(/", False),
])
def test_parse_regex_key(key, is_regex):
    assert (parse_regex_key(key) is not None) is is_regex


@pytest.mark.parametrize(("key", "noted"), [
    ("/\\p{L}x/u", True), ("/(?<=a+)b/", False), ("/dragon/", False), ("/a/b/", False), ("dragon", False), ("/dragon/x", False),
])
def test_untranslatable_regex_keys(key, noted):
    refusal = regex_key_refusal(key)
    assert (refusal is not None and refusal.kind == "unsupported") is noted


def test_javascript_named_groups_are_understood():
    assert find_key("abab", r"/(?<x>ab)\k<x>/", case_sensitive=True, match_whole_words=True) == 0


def test_a_regex_python_cannot_compile_is_a_plain_key_and_noted():
    wb = book(entry(1, keys=("/\\p{L}x/u",)))  # a property escape: JavaScript yes, the translation no
    result = run(wb, said("x /\\p{L}x/u y"))
    assert active_uids(result) == [1]
    assert any("entry 1" in note and "regex" in note for note in result.notes)


def test_a_key_with_a_lookbehind_of_any_width_matches_as_in_javascript():
    # JavaScript looks behind at any width: "b" preceded by one or more "a"
    wb = book(entry(1, keys=("/(?<=xa+)b/",)), entry(2, keys=("/(?<=xa+)c/",)))
    assert active_uids(run(wb, said("see xaaab and yaac"))) == [1]


def test_macros_in_keys_and_content():
    wb = book(entry(1, keys=("{{char}}'s sword",), content="{{user}} holds {{char}}'s sword"))
    result = run(wb, said("Is that Seraphina's sword?"))
    assert active_of(result, 1).content == "Aria holds Seraphina's sword"
    assert active_of(result, 1).reason.key == "{{char}}'s sword"


def test_a_secondary_key_that_expands_to_nothing_is_never_found():
    # "{{// note}}" expands to "": SillyTavern counts the key as not found (and_all fails, not_all passes).
    keys = {"keys": ("sword",), "secondary_keys": ("fire", "{{// note}}")}
    assert active_uids(run(book(entry(1, selective_logic="and_all", **keys)), said("sword of fire"))) == []
    assert active_uids(run(book(entry(1, selective_logic="not_all", **keys)), said("sword of fire"))) == [1]
    only_empty = {"keys": ("sword",), "secondary_keys": ("{{// note}}",), "selective_logic": "and_any"}
    assert skip_of(run(book(entry(1, **only_empty)), said("sword")), 1).kind == "secondary_failed"


def test_whitespace_only_key_matches_anything():
    # SillyTavern trims the key after checking it is non-empty: "" is found everywhere.
    result = run(book(entry(1, keys=("  ",))), said("anything"))
    assert active_uids(result) == [1]


def test_decorators():
    wb = book(entry(1, content="@@activate\nalways here"),
              entry(2, keys=("dragon",), content="@@dont_activate\nnever here"),
              entry(3, keys=("dragon",), content="@@unknown\n@@@activate\nfallback decorator"))
    result = run(wb, said("a dragon"))
    assert sorted(active_uids(result)) == [1, 3]
    assert active_of(result, 1).reason.kind == "decorator"
    assert active_of(result, 1).content == "always here"
    assert skip_of(result, 2).kind == "decorator"


def test_triggers_and_delay():
    wb = book(entry(1, keys=("dragon",), triggers=("continue",)), entry(2, keys=("dragon",), delay=3))
    result = run(wb, said("a dragon"))
    assert active_uids(result) == []
    assert skip_of(result, 1).kind == "trigger"
    assert skip_of(result, 2).kind == "delayed"
    result = run(wb, said("x", "y", "a dragon"), generation="continue")
    assert sorted(active_uids(result)) == [1, 2]


def test_global_scan_data_and_injections():
    wb = book(entry(1, keys=("healer",), match_persona_description=True),
              entry(2, keys=("healer",)),
              entry(3, keys=("castle",)))
    result = run(wb, said("hello"), global_scan_data={"personaDescription": "Aria is a healer."},
                 scan_injections=["[Note: the castle burns]"])
    assert sorted(active_uids(result)) == [1, 3]
    assert active_of(result, 1).reason.matched_in.field == "persona_description"
    assert active_of(result, 3).reason.matched_in.model_dump() == {
        "kind": "injection", "index": 0, "uid": None, "field": None}
    assert skip_of(result, 2).kind == "no_match"


def test_the_newest_message_is_reported():
    result = run(book(entry(1, keys=("dragon",))), said("dragon one", "dragon two"))
    assert active_of(result, 1).reason.matched_in.index == 1


# ---------------------------------------------------------------------------------------------- emission order (§7.5)
# `active` is the order the product emits (sources.active_world_entries reads it as it stands).


def at(result: WorldInfoActivation, position: str) -> list:
    """The uids active at one position, in emission order."""
    return [a.uid for a in result.active if a.position == position]


def test_before_and_after_ascending_with_later_activated_first_on_ties():
    # §7.5: "Order 100 appears before Order 250"; §11.4: equal orders put the later-activated entry first.
    wb = book(entry(1, constant=True, order=250), entry(2, constant=True, order=100),
              entry(3, constant=True, order=100), entry(4, constant=True, order=100, position="after"),
              entry(5, constant=True, order=50, position="after"))
    result = run(wb, said("hi"))
    assert at(result, "before") == [3, 2, 1]
    assert [a.content for a in result.active if a.position == "before"] == ["content 3", "content 2", "content 1"]
    assert at(result, "after") == [5, 4]
    assert active_uids(result) == [3, 2, 1, 5, 4]


def test_candidate_order_ties_follow_javascript_key_order():
    # Object.keys lists integer keys ascending, then the other keys: 2, 10, "x" activate in that order.
    wb = import_worldbook({"entries": {
        "10": {"uid": 10, "constant": True, "content": "ten"},
        "x": {"uid": "x", "constant": True, "content": "ex"},
        "2": {"uid": 2, "constant": True, "content": "two"},
    }}).model_copy(update={"activation": "keywords"})
    result = run(wb, said("hi"))
    assert [a.activation_index for a in sorted(result.active, key=lambda a: str(a.uid))] == [1, 0, 2]
    assert [a.content for a in result.active] == ["ex", "ten", "two"]


def test_examples_top_descending_bottom_ascending():
    # §11.3
    wb = book(entry(1, constant=True, order=10, position="before_example_messages"),
              entry(2, constant=True, order=20, position="before_example_messages"),
              entry(3, constant=True, order=10, position="after_example_messages"),
              entry(4, constant=True, order=20, position="after_example_messages"))
    result = run(wb, said("hi"))
    assert at(result, "before_example_messages") == [2, 1]
    assert at(result, "after_example_messages") == [3, 4]


def test_outlets_highest_order_first():
    # §11.2: grouped by name (case-sensitive) in the order the names first appear, highest order first in a group.
    wb = book(entry(1, constant=True, order=10, position="outlet", outlet_name="lore"),
              entry(2, constant=True, order=30, position="outlet", outlet_name="lore"),
              entry(3, constant=True, order=20, position="outlet", outlet_name="Lore"),
              entry(4, constant=True, order=40, position="outlet"))
    result = run(wb, said("hi"))
    assert [(a.uid, a.outlet_name) for a in result.active] == [(4, ""), (2, "lore"), (1, "lore"), (3, "Lore")]


def test_author_note_lists_ascending():
    wb = book(entry(1, constant=True, order=30, position="before_author_note"),
              entry(2, constant=True, order=10, position="before_author_note"),
              entry(3, constant=True, order=20, position="after_author_note"))
    result = run(wb, said("hi"))
    assert at(result, "before_author_note") == [2, 1]
    assert active_uids(result) == [2, 1, 3]


def test_depth_groups():
    wb = book(entry(1, constant=True, order=30, position="at_depth", depth=2, role="user"),
              entry(2, constant=True, order=20, position="at_depth", depth=2, role="user"),
              entry(3, constant=True, order=10, position="at_depth", depth=2, role="system"),
              entry(4, constant=True, order=40, position="at_depth", depth=0, role="assistant"))
    result = run(wb, said("hi"))
    # Groups in creation order (highest order first creates), entries ascending within a group.
    assert [(a.uid, a.depth, a.role) for a in result.active] == [
        (4, 0, "assistant"), (2, 2, "user"), (1, 2, "user"), (3, 2, "system")]
    groups = depth_groups([active_of(result, uid) for uid in (4, 1, 2, 3)])  # highest order first
    assert [(depth, role, [a.uid for a in members]) for depth, role, members in groups] == [
        (0, "assistant", [4]), (2, "user", [2, 1]), (2, "system", [3])]


def test_depth_missing_never_injects():
    # §11.7: a group created by an entry without depth has no depth and is never joined; an entry without depth
    # joins an existing depth-4 group.
    wb = book(entry(1, constant=True, order=30, position="at_depth", depth=None),
              entry(2, constant=True, order=20, position="at_depth", depth=4),
              entry(3, constant=True, order=10, position="at_depth", depth=None))
    result = run(wb, said("hi"))
    assert active_uids(result) == [1, 3, 2]
    groups = depth_groups([active_of(result, uid) for uid in (1, 2, 3)])
    assert [(depth, [a.uid for a in members]) for depth, _role, members in groups] == [(None, [1]), (4, [3, 2])]


def test_empty_content_is_still_active():
    result = run(book(entry(1, constant=True, content="")), said("hi"))
    assert active_uids(result) == [1]
    assert active_of(result, 1).content == ""


@pytest.mark.parametrize(("value", "wi_format", "expected"), [
    ("", "[{0}]", ""),
    ("lore", "", "lore"),
    ("lore", "   ", "lore"),
    ("lore", "{0}", "lore"),
    ("lore", "[World: {0}]", "[World: lore]"),
    ("lore", "{0}/{0} {1}", "lore/lore {1}"),
    (["a", "b"], "<{0}>", "<a\nb>"),
    ([], "<{0}>", ""),
])
def test_format_world_info(value, wi_format, expected):
    assert format_world_info(value, wi_format) == expected


# ---------------------------------------------------------------------------------------------- the Eldoria book


@pytest.fixture(scope="module")
def eldoria(shared_fixtures: Path) -> tuple[WorldBook, dict]:
    path = shared_fixtures / "sillytavern" / "st_worldinfo_Eldoria.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    return import_worldbook(raw).model_copy(update={"activation": "keywords"}), raw


ELDORIA_CHAT = [
    {"role": "assistant", "content": "Welcome, traveler. Rest here a while; the beasts cannot reach you."},
    {"role": "user", "content": "Where am I? What is this place?"},
    {"role": "assistant", "content": "You are in my glade, deep within the woods."},
    {"role": "user", "content": "Were those Shadowfangs that attacked me?"},
]


def expanded(raw: dict, uid: int) -> str:
    return raw["entries"][str(uid)]["content"].replace("{{user}}", "Aria").replace("{{char}}", "Seraphina")


def test_eldoria_recursive(eldoria):
    # Depth 2 scans "Aria: Were those Shadowfangs..." and "Seraphina: You are in my glade, deep within the woods."
    # Pass 1: only "glade" (uid 2) matches: "woods" is not the whole word "wood", "Shadowfangs" not "shadowfang",
    # and "beasts" is three messages back. Pass 2 scans uid 2's text: "Eldoria was once..." (uid 0's first key),
    # "No foul beast" (uid 1: "shadowfang" fails, "beast" matches), "my power protects" (uid 3's first key).
    wb, raw = eldoria
    result = run(wb, ELDORIA_CHAT)
    reasons = {a.uid: a.reason for a in result.active}
    assert (reasons[2].kind, reasons[2].key, reasons[2].matched_in.index) == ("key", "glade", 2)
    assert {uid: (r.kind, r.key, r.matched_in.uid, r.scan_pass) for uid, r in reasons.items() if uid != 2} == {
        0: ("recursion", "eldoria", 2, 2), 1: ("recursion", "beast", 2, 2), 3: ("recursion", "power", 2, 2)}
    assert result.skipped == ()
    # All four are "before" with order 100: activation order 2, 0, 1, 3, emitted later-activated first.
    assert active_uids(result) == [3, 1, 0, 2]
    assert {a.position for a in result.active} == {"before"}
    assert [a.content for a in result.active] == [expanded(raw, uid) for uid in (3, 1, 0, 2)]


def test_eldoria_without_recursion(eldoria):
    wb, _raw = eldoria
    result = run(wb.model_copy(update={"recursive": False}), ELDORIA_CHAT)
    assert active_uids(result) == [2]
    assert {s.uid: s.reason.kind for s in result.skipped} == {0: "no_match", 1: "no_match", 3: "no_match"}
    # Four messages deep the first message's "beasts" is in reach: the last of uid 1's keys, the others fail.
    result = run(wb.model_copy(update={"recursive": False, "scan_depth": 4}), ELDORIA_CHAT)
    assert sorted(active_uids(result)) == [1, 2]
    reason = active_of(result, 1).reason
    assert (reason.key, reason.matched_in.index) == ("beasts", 0)


def test_eldoria_budget(eldoria):
    # Pass 1 pays uid 2; pass 2 starts from uid 2's text and adds 0, then 1, then 3 (candidate order).
    wb, raw = eldoria
    wb = wb.model_copy(update={"budget_percent": 100})
    first = message_tokens(expanded(raw, 2) + "\n")
    limit = first + message_tokens(expanded(raw, 0) + "\n" + expanded(raw, 1) + "\n")
    result = run(wb, ELDORIA_CHAT, max_context=limit)
    assert sorted(active_uids(result)) == [0, 2]
    assert (skip_of(result, 1).kind, skip_of(result, 1).tokens) == ("over_budget", limit)
    assert skip_of(result, 3).kind == "over_budget"
    assert [a.content for a in result.active] == [expanded(raw, 0), expanded(raw, 2)]


def test_eldoria_with_shipped_settings(eldoria, shared_fixtures: Path):
    # §11.22: the shipped settings.json turns recursion and whole words on; the code's defaults are off.
    settings = import_settings(json.loads((shared_fixtures / "sillytavern" / "st_default_settings.json").read_text(
        encoding="utf-8"))).worldbook
    wb, _raw = eldoria
    shipped = settings.model_copy(update={"entries": wb.entries, "activation": "keywords"})
    assert sorted(active_uids(run(shipped, ELDORIA_CHAT))) == [0, 1, 2, 3]
    code_defaults = shipped.model_copy(update={"recursive": False, "match_whole_words": False})
    # Substrings now: "woods" holds "wood" (uid 0) and "Shadowfangs" holds "shadowfang" (uid 1).
    assert sorted(active_uids(run(code_defaults, ELDORIA_CHAT))) == [0, 1, 2]


# ---------------------------------------------------------------------------------------------- contract


def test_result_is_json_and_inputs_are_untouched():
    chat = said("a dragon")
    before = copy.deepcopy(chat)
    wb = book(entry(1, keys=("dragon",)), entry(2, keys=("wyrm",)))
    result = run(wb, chat)
    assert chat == before
    dumped = result.model_dump(mode="json")
    assert json.loads(json.dumps(dumped)) == dumped
    assert dumped["active"][0]["reason"]["matched_in"] == {"kind": "message", "index": 0, "uid": None,
                                                           "field": None}
    assert [a["content"] for a in dumped["active"]] == ["content 1"]


def test_a_native_world_book_is_read_by_the_importer_first():
    native = {"entries": {"0": {"uid": 0, "key": ["dragon"], "content": "x"}}, "activation": "keywords"}
    result = activate_world_info(import_worldbook(native), chat=said("a dragon"), names=NAMES, max_context=BIG)
    assert active_uids(result) == [0]
    with pytest.raises(WorldInfoError) as error:
        activate_world_info(native, chat=said("a dragon"), names=NAMES, max_context=BIG)
    assert (error.value.code, error.value.detail["field"]) == ("WORLD_INFO_INVALID", "book")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"chat": [{"role": "user", "content": 5}]}, "chat[0].content"),
    ({"chat": [{"content": "x"}]}, "chat[0].role"),
    ({"chat": ["hello"]}, "chat[0]"),
    ({"max_context": -1}, "max_context"),
    ({"names": {"user": 3}}, "names.user"),
    ({"global_scan_data": {"persona": "x"}}, "global_scan_data.persona"),
    ({"generation": "dream"}, "generation"),
    ({"encoding": "gpt2"}, "encoding"),
    ({"global_scan_data": {"scenario": ["x"]}}, "global_scan_data.scenario"),
    ({"scan_injections": "note"}, "scan_injections"),
])
def test_invalid_input(kwargs, field):
    arguments = {"chat": said("hi"), "names": NAMES, "max_context": BIG, **kwargs}
    with pytest.raises(WorldInfoError) as error:
        activate_world_info(book(entry(1)), **arguments)
    assert (error.value.code, error.value.status, error.value.detail["field"]) == ("WORLD_INFO_INVALID", 400, field)
    assert field in error.value.message


def test_duplicate_uids_are_refused():
    with pytest.raises(WorldInfoError) as error:
        activate_world_info(book(entry(1), entry(1)), chat=[], names=NAMES, max_context=BIG)
    assert "uid 1" in error.value.message


ENTRY = st.fixed_dictionaries({
    "keys": st.lists(st.sampled_from(["dragon", "rain", "beta", "/r.in/", "Storm"]), max_size=2).map(tuple),
    "secondary_keys": st.lists(st.sampled_from(["fire", "rain"]), max_size=2).map(tuple),
    "selective_logic": st.sampled_from(["and_any", "not_all", "not_any", "and_all"]),
    "constant": st.booleans(),
    "enabled": st.booleans(),
    "order": st.integers(0, 3),
    "probability": st.sampled_from([0, 40, 60, 100]),
    "group": st.sampled_from(["", "g", "g, h"]),
    "content": st.sampled_from(["beta rain", "dragon", "", "a long text about storms and rain " * 3]),
    "prevent_recursion": st.booleans(),
    "delay_until_recursion": st.sampled_from([False, True, 2]),
    "ignore_budget": st.booleans(),
    "position": st.sampled_from(["before", "after", "at_depth", "outlet", "before_example_messages"]),
    "depth": st.sampled_from([None, 0, 4]),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(ENTRY, max_size=8), max_context=st.integers(1, 200), recursive=st.booleans())
def test_every_entry_appears_exactly_once(entries, max_context, recursive):
    wb = book(*(entry(i, **fields) for i, fields in enumerate(entries)), recursive=recursive)
    result = run(wb, said("a dragon in the rain", "fire"), max_context=max_context)
    assert_each_entry_once(wb, result)
    assert sorted(a.activation_index for a in result.active) == list(range(len(result.active)))
    assert_emission_order(result)


def assert_emission_order(result: WorldInfoActivation) -> None:
    """§7.5's directions: positions in SillyTavern's numeric order; before / after, the author's note lists and
    the examples' bottom ascending (equal orders later-activated first); the examples' top descending; outlets by
    name, descending; at depth one run per (depth, role) group, ascending within it."""
    numbers = [WORLD_POSITION_NUMBER[a.position] for a in result.active]
    assert numbers == sorted(numbers)
    for position in ("before", "after", "before_author_note", "after_author_note", "after_example_messages"):
        here = [a for a in result.active if a.position == position]
        assert here == sorted(here, key=lambda a: (a.order, -a.activation_index))
    top = [a for a in result.active if a.position == "before_example_messages"]
    assert top == sorted(top, key=lambda a: (-a.order, a.activation_index))
    outlets = [a for a in result.active if a.position == "outlet"]
    names = list(dict.fromkeys(a.outlet_name for a in outlets))
    assert [a.outlet_name for a in outlets] == [n for n in names for a in outlets if a.outlet_name == n]
    for name in names:
        group = [a for a in outlets if a.outlet_name == name]
        assert group == sorted(group, key=lambda a: (-a.order, a.activation_index))
    deep = [a for a in result.active if a.position == "at_depth"]
    runs = [members for _depth, _role, members in depth_groups(sorted(deep, key=lambda a: (-a.order,
                                                                                          a.activation_index)))]
    assert deep == [a for members in runs for a in members]
    for members in runs:
        assert [a.order for a in members] == sorted(a.order for a in members)


# ---------------------------------------------------------------------------------------------- character lore

@pytest.mark.parametrize(("strategy", "kept"), [
    # §7.2: evenly sorts both sources together (order 300 first); character_first (SillyTavern's default) takes the
    # character's lore first, whatever its order; global_first the selected book first.
    ("evenly", "g1"),
    ("character_first", "c1"),
    ("global_first", "g1"),
])
def test_the_character_strategy_decides_who_spends_the_budget_first(strategy, kept):
    wb = book(entry("g1", order=300, constant=True, content="The selected book's constant entry about mountains."),
              entry("c1", order=10, constant=True, lore="character",
                    content="The character's own lore about the lighthouse keeper."),
              budget_percent=100, character_strategy=strategy)
    first = message_tokens(wb.entry(kept).content + "\n")
    result = run(wb, said("hi"), max_context=first + 1)  # room for one entry only
    assert active_uids(result) == [kept]
    other = "c1" if kept == "g1" else "g1"
    assert skip_of(result, other).kind == "over_budget"


def test_lore_and_the_strategy_are_read_and_written_back():
    data = {"world_info_character_strategy": 2, "entries": {
        "1": {"uid": 1, "key": ["x"], "content": "y", "lore": "character"}}}
    wb = import_worldbook(data)
    assert wb.character_strategy == "global_first" and wb.entries[0].lore == "character"
    again = import_worldbook(export_worldbook(wb))
    assert again.character_strategy == "global_first" and again.entries[0].lore == "character"
    with pytest.raises(ImportInvalid, match=r"entries\.1\.lore: expected where the entry comes from"):
        import_worldbook({"entries": {"1": {"uid": 1, "lore": "group"}}})


@pytest.mark.parametrize("strategy", ["evenly", "character_first", "global_first"])
def test_chat_lore_then_persona_lore_come_first_whatever_the_strategy(strategy):
    # §7.2: entries = [chat lore (sorted), persona lore (sorted), ...the strategy's character and global lore]
    wb = book(entry("g", order=900, constant=True, content="Global lore with the highest order of all."),
              entry("c", order=800, constant=True, lore="character", content="Character lore, high order too."),
              entry("p", order=5, constant=True, lore="persona", content="Persona lore of a low order."),
              entry("h", order=1, constant=True, lore="chat", content="Chat lore of the lowest order."),
              budget_percent=100, character_strategy=strategy)
    room = message_tokens(wb.entry("h").content + "\n" + wb.entry("p").content + "\n") + 1
    result = run(wb, said("hi"), max_context=room)  # room for the first two candidates only
    assert sorted(active_uids(result)) == ["h", "p"]
    assert skip_of(result, "g").kind == skip_of(result, "c").kind == "over_budget"


# --- the extension prompts the scan reads beside the chat (scan_injections) -----------------------------------------
# sillytavern.md §7.3: the scan buffer adds the extension prompts with scan:true: the author's note when "allow WI
# scan" is on (§8.1), other extensions' prompts marked scan, the quiet prompt (§13.3), and the persona at depth
# (§8.3, scan=true), which addPersonaDescriptionExtensionPrompt sets after the scan (§1), so only a later
# generation's scan reads it. setFloatingPrompt runs before the scan and sets the note empty when its interval leaves
# it out (§8.1); the character's note is set with scan = "allow WI scan" (§8.2), after removeDepthPrompts deleted it,
# so it is the newest key.


def _scanned_resources(**fields):
    from assembly.sillytavern.models import AuthorNote, Character, DepthPrompt, ExtensionPrompt, Persona, Resources

    return Resources(
        character=Character(name="Seraphina", depth_prompt=DepthPrompt(prompt=fields.get("depth_prompt", ""))),
        author_note=AuthorNote(content="Mention the moon.", allow_wi_scan=fields.get("allow", True),
                               interval=fields.get("interval", 1)),
        persona=Persona(name="Aria", description="Aria fears wolves.", position=fields.get("persona", "at_depth")),
        extension_prompts=(ExtensionPrompt(key="1_memory", content="They met at the harbor.", scan=True),
                           ExtensionPrompt(key="3_vectors", content="A tower fell.", scan=False)))


def test_scan_injections_read_the_scanning_note_extensions_and_quiet_prompt_on_a_first_generation():
    from assembly.sillytavern.worldinfo import scan_injections

    assert scan_injections(_scanned_resources(), turn=0, user_messages=1, quiet_prompt="Say the bell.") == [
        "Mention the moon.", "They met at the harbor.", "Say the bell."]


def test_scan_injections_leave_out_a_note_that_does_not_allow_scanning():
    from assembly.sillytavern.worldinfo import scan_injections

    assert scan_injections(_scanned_resources(allow=False), turn=0, user_messages=1) == ["They met at the harbor."]


@pytest.mark.parametrize(("turn", "position", "read"), [
    (0, "at_depth", False),  # the first generation: nothing set it before the scan
    (1, "at_depth", True),  # the second: the one the first generation set
    (3, "at_depth", True),
    (1, "in_prompt", False),  # only the persona at depth is an extension prompt that allows scanning
    (1, "top_an", False),
])
def test_scan_injections_read_the_persona_at_depth_from_the_second_generation_on(turn, position, read):
    from assembly.sillytavern.worldinfo import scan_injections

    texts = scan_injections(_scanned_resources(persona=position), turn=turn, user_messages=turn + 1)
    assert ("Aria fears wolves." in texts) is read
    assert texts[:2] == ["Mention the moon.", "They met at the harbor."]


@pytest.mark.parametrize(("interval", "user_messages", "read"), [
    (1, 1, True), (1, 0, True),  # interval 1: always (the count is forced to 1)
    (0, 3, False),  # interval 0: the note is disabled
    (3, 1, False), (3, 2, False), (3, 3, True), (3, 4, False), (3, 6, True),  # every third user message
    (2, 0, False),  # no user message yet
])
def test_scan_injections_read_the_note_only_on_the_turns_its_interval_puts_it_in(interval, user_messages, read):
    from assembly.sillytavern.worldinfo import scan_injections

    texts = scan_injections(_scanned_resources(interval=interval), turn=0, user_messages=user_messages)
    assert ("Mention the moon." in texts) is read


@pytest.mark.parametrize(("allow", "read"), [(True, True), (False, False)])
def test_scan_injections_read_the_characters_note_when_the_note_allows_scanning_last(allow, read):
    from assembly.sillytavern.worldinfo import scan_injections

    texts = scan_injections(_scanned_resources(allow=allow, depth_prompt=" Seraphina guards the glade. "), turn=1,
                            user_messages=2)
    assert (texts[-1] == "Seraphina guards the glade.") is read  # trimmed, after the persona
    assert ("Aria fears wolves." in texts) and not any("glade" in t for t in texts[:-1])


def test_an_entry_keyed_by_a_word_only_in_a_scan_injection_activates():
    lore = book(entry(1, keys=["moon"]))
    chat = [{"role": "user", "content": "Hello"}]
    assert activate_world_info(lore, chat=chat, names=NAMES, max_context=BIG).active == ()
    found = activate_world_info(lore, chat=chat, names=NAMES, max_context=BIG,
                                scan_injections=["Mention the moon."]).active
    assert [e.uid for e in found] == [1] and found[0].reason.matched_in.kind == "injection"
