"""Text-completion settings (assembly/sillytavern/text_templates.py; text-completion.md "Request")."""

from __future__ import annotations

import pytest

from assembly.sillytavern.text_templates import TextSettingsInvalid, custom_stopping_strings, read_text_templates


def test_missing_instruct_fields_get_sillytaverns_defaults():
    instruct = read_text_templates({"instruct_template": {"input_sequence": "<u>"}}).instruct
    assert instruct["names_behavior"] == "force" and instruct["sequences_as_stop_strings"] is True
    assert instruct["output_suffix"] == "" and instruct["wrap"] is False


def test_the_budget_comes_from_max_context_and_amount_gen_and_numbers_are_coerced():
    settings = read_text_templates({"text_settings": {"max_context": "2048", "amount_gen": 48.0}}).settings
    assert (settings["max_context"], settings["amount_gen"]) == (2048, 48)


def test_a_wrong_type_is_refused_with_its_field():
    with pytest.raises(TextSettingsInvalid) as refused:
        read_text_templates({"context_template": {"story_string": 3}})
    assert refused.value.detail["path"] == "resources.context_template.story_string"


def test_custom_stopping_strings_are_a_json_array_in_a_string():
    assert custom_stopping_strings('["a", 1, "b"]') == ["a", "b"]
    assert custom_stopping_strings("") == [] and custom_stopping_strings("{}") == []


def test_stopping_strings_nested_past_the_parsers_depth_give_none():
    assert custom_stopping_strings("[" * 100_000) == []


def test_an_infinite_number_is_refused_with_its_field():
    with pytest.raises(TextSettingsInvalid) as refused:
        read_text_templates({"context_template": {"story_string_role": float("-inf")}})
    assert refused.value.detail["path"] == "resources.context_template.story_string_role"
