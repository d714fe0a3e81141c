"""Stop strings for text completion (assembly/sillytavern/text_stop.py; sillytavern-text-completion.md §6)."""

from __future__ import annotations

from assembly.sillytavern.text_stop import stop_strings
from assembly.sillytavern.text_templates import read_text_templates


def test_names_instruct_context_and_custom_in_that_order_without_repeats():
    templates = read_text_templates({
        "context_template": {"chat_start": "<chat>", "example_separator": "", "use_stop_strings": True},
        "instruct_template": {"stop_sequence": "</s>"},
        "text_settings": {"instruct_enabled": True, "custom_stopping_strings": '["{{char}}!", "\\nAnn:", 3]'}})
    assert stop_strings(templates, user="Ann", char="Bo", impersonate=False, continue_on_user=False) == [
        "\nAnn:", "</s>", "\n<chat>", "Bo!"]


def test_impersonation_stops_at_the_character_and_single_line_puts_newline_first():
    templates = read_text_templates({"context_template": {"single_line": True}})
    assert stop_strings(templates, user="Ann", char="Bo", impersonate=True, continue_on_user=False) == [
        "\n", "\nBo:", "\nAnn:"]


def test_continuing_a_user_message_also_stops_at_the_character():
    templates = read_text_templates({})
    assert stop_strings(templates, user="Ann", char="Bo", impersonate=False, continue_on_user=True) == [
        "\nAnn:", "\nBo:"]


def test_custom_strings_that_are_not_a_json_array_give_none():
    templates = read_text_templates({"context_template": {"names_as_stop_strings": False},
                                     "text_settings": {"custom_stopping_strings": "not json"}})
    assert stop_strings(templates, user="Ann", char="Bo", impersonate=False, continue_on_user=False) == []
