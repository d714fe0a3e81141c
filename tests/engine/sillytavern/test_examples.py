"""Dialogue examples as chat completion sends them (sillytavern.md §3, §7.5): world-info entries at the example
positions are parsed as SillyTavern's parseMesExamples reads an untrimmed text."""

import pytest

from assembly.sillytavern.examples import ExampleWorldInfo, parse_dialogue_examples


def blocks(entries, card=""):
    parsed = parse_dialogue_examples(card, user_name="Alex", char_name="Zoe", new_example_chat_prompt="[Example Chat]",
                                     world_info=[ExampleWorldInfo(source_id=f"wi{i}", content=c, position="before")
                                                 for i, c in enumerate(entries)])
    return [[(m.name, m.content) for m in block] for block in parsed]


@pytest.mark.parametrize(("entries", "expected"), [
    (["\n"], [[(None, "[Example Chat]")]]),  # whitespace alone: one block, its header only
    (["<START>"], []),  # a lone marker: none
    (["Zoe: hi"], [[(None, "[Example Chat]"), ("example_assistant", "hi")]]),
    (["no speaker here"], [[(None, "[Example Chat]")]]),
])
def test_an_entry_is_parsed_untrimmed(entries, expected):
    assert blocks(entries) == expected


def test_the_card_text_keeps_its_own_rule():
    assert blocks([], card="<START>\n<START>") == []
