"""SillyTavern 1.18's legacy macro engine (macros.js evaluateMacros), text by text: each pattern once over the whole
text in SillyTavern's order, so nesting resolves as its patterns leave it. Expected values follow macros.js and
variables.js as the st-macros oracle answers them (legacy runs)."""

import pytest

from assembly.sillytavern.macro_environment import MacroEnvironment
from assembly.sillytavern.macro_variables import MacroVariables


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
