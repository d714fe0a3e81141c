"""SillyTavern 1.18's legacy macro engine (macros.js evaluateMacros), text by text: each pattern once over the whole
text in SillyTavern's order, so nesting resolves as its patterns leave it. Expected values follow macros.js and
variables.js as the st-macros oracle answers them (legacy runs)."""

from datetime import UTC, datetime

import pytest

from assembly.sillytavern.macro_clock import MacroClock
from assembly.sillytavern.macro_environment import MacroEnvironment
from assembly.sillytavern.macro_variables import MacroVariables
from assembly.sillytavern.macros_legacy import (
    _POST_COVERED,
    _POST_OPENER,
    _POST_STEPS,
    _PRE_COVERED,
    _PRE_KEYS,
    _PRE_STEPS,
    LegacyCall,
    _post_env,
    _pre_env,
    _pre_keys_in,
)


def env(**values):
    card = {"description": "A {{char}} of the woods", "personality": "calm", "scenario": "",
            "mesExamples": "<START>\n{{user}}: hi\n{{char}}: hello", "persona": "a traveller",
            "system": "", "jailbreak": "", "version": "1.0", "creatorNotes": "notes", "charDepthPrompt": ""}
    card.update(values.pop("card", {}))
    return MacroEnvironment(user="Alex", char="Zoe", engine="legacy", card=card, **values)


@pytest.mark.parametrize(("text", "expected"), [
    ("{{user}} and {{char}}", "Alex and Zoe"),
    ("{{User}} {{CHAR}}", "Alex Zoe"),  # names match whatever their case
    ("{{ user }}", "{{ user }}"),  # no whitespace inside the braces
    ("<USER> <bot> <CHAR> <GROUP>", "Alex Zoe Zoe Zoe"),
    ("<START> <CHARIFNOTGROUP>", "<START> Zoe"),  # other angle brackets stay as they are
    ("{{group}} {{charIfNotGroup}}", "Zoe Zoe"),  # a one-to-one chat: the group is the character
    ("a{{newline}}b", "a\nb"),
    ("a\n\n{{trim}}\nb", "ab"),
    ("x{{noop}}y", "xy"),
    ("keep {{// a comment }}this", "keep this"),
    ("{{reverse::abc}}", "cba:"),  # /{{reverse:(.+?)}}/ takes the second colon into the text
    ("{{description}}", "A Zoe of the woods"),  # a card field has its own macros substituted
    ("{{mesExamplesRaw}}", "<START>\nAlex: hi\nZoe: hello"),
    ("{{mesExamples}}", "<START>\nAlex: hi\nZoe: hello\n"),
    ("{{charVersion}}/{{char_version}}", "1.0/1.0"),
    ("{{creatorNotes}}", "notes"),
    ("{{unknownMacro}} stays", "{{unknownMacro}} stays"),
    ("{{random::a::b}}", "a"),  # the preview takes the first choice
    ("{{roll:2d6}}", "8"),  # and the middle face of every die
    ("{{timeDiff::2020-05-01 10:00::2020-05-01 08:00}}", "in 2 hours"),
    ("{{timeDiff::2024-01-01::2024-01-04}}", "3 days ago"),
])
def test_single_macros(text, expected):
    assert env().evaluate(text) == expected


@pytest.mark.parametrize(("text", "expected", "stored"), [
    # the variable patterns run before the names: a nested {{user}} is cut at the first "}}"
    ("{{setvar::who::{{user}}}}[{{getvar::who}}]", "}}[{{user]", {"who": "{{user"}),
    ("{{setvar::n::5}}{{addvar::n::2}}{{getvar::n}}", "7", {"n": 7}),
    ("{{addvar::s::ab}}{{addvar::s::cd}}{{getvar::s}}", "abcd", {"s": "abcd"}),
    ("{{incvar::c}} {{incvar::c}} {{decvar::d}}", "1 2 -1", {"c": 2, "d": -1}),
    ("{{setvar::x::0.1}}{{addvar::x::0.2}}{{getvar::x}}", "0.30000000000000004", {"x": 0.30000000000000004}),
    ("{{getvar::missing}}|", "|", {}),
    ("{{setvar::sp:: }}{{getvar::sp}}", "0", {"sp": " "}),  # Number(' ') is 0
])
def test_local_variables(text, expected, stored):
    environment = env()
    assert environment.evaluate(text) == expected
    assert environment.variables.local == stored


def test_global_variables_are_their_own_scope():
    environment = env(variables=MacroVariables(local={"g": "local"}, global_={"g": "global"}))
    assert environment.evaluate("{{getvar::g}} {{getglobalvar::g}}{{setglobalvar::h::1}}{{incglobalvar::h}}") == \
        "local global2"
    assert environment.variables.global_ == {"g": "global", "h": 2}


def test_original_fills_only_the_first_use():
    assert env().evaluate("[{{original}}|{{original}}]", original="base") == "[base|]"


def test_card_fields_are_read_by_every_call_so_their_macros_run_each_time():
    environment = env(card={"persona": "{{incvar::seen}}"})
    environment.evaluate("{{user}}")
    environment.evaluate("plain text")  # substituteParams builds its environment before looking for a macro
    environment.evaluate("")  # nothing to substitute: no environment
    environment.evaluate("{{char}}")
    assert environment.variables.local == {"seen": 3}


def test_a_card_field_inside_a_card_field_stays_as_written():
    environment = env(card={"personality": "{{description}}"})
    assert environment.evaluate("{{personality}}") == "{{description}}"


def test_a_value_brings_macros_of_later_names_only():
    # each name's pattern runs once, in the environment's order, over the text as the earlier ones left it
    environment = env(card={"scenario": "{{description}} with {{user}}", "description": "{{char}}"})
    assert environment.evaluate("{{scenario}}") == "{{description}} with Alex"
    assert environment.evaluate("{{description}} / {{scenario}}") == "Zoe / {{description}} with Alex"


def test_a_call_s_own_values_override_the_environment_and_registered_ones_only_add():
    # substituteParams spreads the call's extra values over its environment; a module's registered macro only
    # answers a name the environment does not have
    environment = env()
    environment.registered = {"user": lambda _: "registered", "weather": lambda _: "rain"}
    assert environment.evaluate("{{user}} / {{weather}}") == "Alex / rain"
    assert environment.evaluate("{{user}} / {{char}}", extra={"char": lambda: "Mia"}) == "Alex / Mia"
    assert environment.evaluate("{{description}}", card_fields=False) == "{{description}}"


def test_outlets_stay_for_the_placement_step_until_they_are_known():
    environment = env()
    assert environment.evaluate("[{{outlet::lore}}]") == "[{{outlet::lore}}]"
    environment.outlets = {"lore": "a fact"}
    assert environment.evaluate("[{{outlet::lore}}][{{outlet::none}}]") == "[a fact][]"


def test_a_card_field_that_reads_the_outlets_or_the_chat_is_read_again_when_they_change():
    environment = env(card={"description": "[{{outlet::lore}}]", "personality": "{{lastMessage}}"}, outlets={})
    assert environment.evaluate("{{description}} {{personality}}") == "[] "
    environment.outlets = {"lore": "old towers"}
    environment.chat = [{"role": "user", "content": "hello"}]
    assert environment.evaluate("{{description}} {{personality}}") == "[old towers] hello"


# Each group of the fixed patterns is skipped only when no pattern of it can match.
# one use of every macro the steps before and after the environment's values replace (macros.js evaluateMacros)
PRE_MACROS = ["{{roll 1d6}}", "{{roll:d6}}", "{{setvar::a::1}}", "{{addvar::a::1}}", "{{incvar::a}}", "{{decvar::a}}",
              "{{getvar::a}}", "{{setglobalvar::a::1}}", "{{addglobalvar::a::1}}", "{{incglobalvar::a}}",
              "{{decglobalvar::a}}", "{{getglobalvar::a}}", "{{newline}}", "{{trim}}", "{{noop}}", "{{input}}"]
POST_MACROS = ["{{maxPrompt}}", "{{lastMessage}}", "{{lastMessageId}}", "{{lastUserMessage}}", "{{lastCharMessage}}",
               "{{firstIncludedMessageId}}", "{{reverse:abc}}", "{{// a note}}", "{{timeDiff::a::b}}",
               "{{outlet::x}}", "{{random::a::b}}", "{{pick::a,b}}", '{{banned "x"}}', "{{time}}", "{{date}}",
               "{{weekday}}", "{{isotime}}", "{{isodate}}", "{{datetimeformat YYYY}}", "{{idle_duration}}",
               "{{time_UTC+2}}"]


def test_every_step_of_a_group_is_covered_by_its_openers():
    call = LegacyCall(MacroEnvironment(clock=MacroClock(now=datetime(2024, 5, 6, 7, 8, tzinfo=UTC))))
    assert len(_pre_env(call)) == _PRE_STEPS
    assert len(_post_env(call)) == _POST_STEPS
    assert _PRE_COVERED and _POST_COVERED


@pytest.mark.parametrize("text", PRE_MACROS)
def test_a_macro_before_the_environment_is_found_in_any_case_under_the_key_of_its_step(text):
    (key,) = _pre_keys_in(text)
    assert _pre_keys_in(text.upper()) == {key}
    assert _POST_OPENER.search(text) is None
    steps = _pre_env(LegacyCall(env()))
    # the step of that key is the one that changes the text; every other step leaves it as it is
    assert [step(text) != text for step in steps] == [k == key for k in _PRE_KEYS]


@pytest.mark.parametrize("text", POST_MACROS)
def test_a_macro_after_the_environment_is_found_in_any_case(text):
    assert _POST_OPENER.search(text) and _POST_OPENER.search(text.upper())


def test_a_time_macro_alone_still_runs_with_a_clock():
    env = MacroEnvironment(clock=MacroClock(now=datetime(2024, 5, 6, 7, 8, tzinfo=UTC)))
    assert env.evaluate("{{ISODATE}} {{isotime}}") == "2024-05-06 07:08"
    assert MacroEnvironment().evaluate("{{isodate}}") == "{{isodate}}"


def test_macros_written_in_capitals_still_run():
    env = MacroEnvironment(user="Ann", char="Bo")
    assert env.evaluate("{{SETVAR::x::5}}{{GetVar::x}} {{USER}} and {{Char}}{{NEWLINE}}{{LASTMESSAGEID}}") == \
        "5 Ann and Bo\n"


def test_a_text_whose_macros_are_all_unknown_stays_as_written():
    env = MacroEnvironment(user="Ann", char="Bo")
    assert env.evaluate("{{nothing}} here") == "{{nothing}} here"
    assert env.unsupported == ["nothing"]


@pytest.mark.parametrize(("formula", "total"), [
    ("2d6+3", "11"),
    ("999999999d999999999", "499999999500000000"),  # up to 15 digits a number is exact
    ("1d" + "9" * 5000, "Infinity"),  # past 1.8e308 a JavaScript number is Infinity (no 5,000-digit string)
    ("9" * 400 + "d6", "Infinity"),
    ("1d6+" + "9" * 5000, "Infinity"),
    ("2d" + "1" * 20, "11111111111111110000"),  # 20 digits: a double, written as JavaScript writes it
])
def test_dice_of_any_size_total_as_javascript_numbers_do(formula, total):
    from assembly.sillytavern.macros_legacy import roll

    assert roll(formula) == total


def test_a_token_a_name_brings_is_read_by_the_token_patterns_after_it():
    # <USER> runs before <BOT>: a user named "<BOT>" becomes the character's name
    environment = env()
    environment.user = "<BOT>"
    assert environment.evaluate("<USER>") == "Zoe"
    environment.user, environment.char = "Alex", "<USER>"
    assert environment.evaluate("<BOT>") == "<USER>"  # a pattern never reads what a later one wrote


def test_a_name_is_found_in_any_case_and_beside_words_the_engine_does_not_know():
    # "ſ" folds to "s" as the name's pattern matches it; a word beyond ASCII makes every name's pattern run
    assert env().evaluate("{{uſer}} {{ChAr}} {{变量}} {{user}}") == "Alex Zoe {{变量}} Alex"
