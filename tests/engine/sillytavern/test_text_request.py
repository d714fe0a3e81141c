"""SillyTavern text completion through `assemble()` (assembly/sillytavern/text_request.py, text_gather.py,
text_prompt.py; text-completion.md). Expected prompts are worked out by hand from sillytavern-text-completion.md."""

from __future__ import annotations

import pytest

from assembly import assemble
from assembly.errors import AssemblyError


def _request(**over) -> dict:
    resources = {
        "character": {"name": "Bo", "description": "A {{char}} card.", "mes_example": ""},
        "context_template": {"story_string": "{{#if description}}{{description}}\n{{/if}}", "chat_start": "",
                             "example_separator": ""},
        "instruct_template": {"input_sequence": "[U]", "output_sequence": "[B]", "wrap": True},
        "system_prompt": {"name": "none", "content": "", "post_history": ""},
        "text_settings": {"instruct_enabled": False, "max_context": 4096, "amount_gen": 96, "token_padding": 0},
    }
    resources.update(over.pop("resources", {}))
    request = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate", "resources": resources,
               "names": {"user": "Ann", "char": "Bo"},
               "conversation": {"history": [{"id": "m1", "role": "assistant", "content": "Hello.", "name": "Bo"}],
                                "input": [{"id": "m2", "role": "user", "content": "Hi {{char}}.", "name": "Ann"}]}}
    request.update(over)
    return request


def _prompt(request: dict) -> str:
    return assemble(request).model_dump(mode="json")["request"]["prompt"]


def test_plain_prompt_names_each_message_and_stops_at_the_user():
    result = assemble(_request()).model_dump(mode="json")["request"]
    # the typed message gets its macros; the newest message loses its newline; nothing forces the name
    assert result["prompt"] == "A Bo card.\nBo: Hello.\nAnn: Hi Bo."
    assert result["stop"] == ["\nAnn:"]
    assert [s["source"] for s in result["spans"]] == ["story_string", "message:m1", "message:m2"]
    assert result["spans"][0]["tokens"] == 4  # 11 bytes / 3.35


def test_chat_results_keep_their_shape():
    chat = {"strategy": "builtin-native-slots"}
    assert "prompt" not in assemble(chat).model_dump(mode="json")["request"]


def test_instruct_prompt_ends_with_the_reply_sequence():
    request = _request(resources={"text_settings": {"instruct_enabled": True, "max_context": 4096,
                                                    "amount_gen": 96, "token_padding": 0}})
    assert _prompt(request) == "A Bo card.\n[B]\nHello.\n[U]\nHi Bo.\n[B]\n"


def test_always_force_name2_opens_the_characters_line():
    request = _request(resources={"context_template": {"story_string": "", "always_force_name2": True}})
    assert _prompt(request) == "Bo: Hello.\nAnn: Hi Bo.\nBo:"


def test_post_history_instructions_follow_the_newest_message_with_the_card_preferred():
    request = _request(resources={
        "character": {"name": "Bo", "post_history_instructions": "Card says {{original}}."},
        "system_prompt": {"name": "g", "content": "", "post_history": "be brief"},
        "context_template": {"story_string": ""},
        "text_settings": {"sysprompt_enabled": True, "prefer_character_jailbreak": True}})
    assert _prompt(request) == "Bo: Hello.\nAnn: Hi Bo.\nCard says be brief."


def test_continue_ends_with_the_continued_text():
    request = _request(generation={"type": "continue"}, conversation={"history": [
        {"id": "m1", "role": "user", "content": "Hi.", "name": "Ann"},
        {"id": "m2", "role": "assistant", "content": "Well", "name": "Bo"}]})
    request["resources"]["context_template"]["story_string"] = ""
    assert _prompt(request) == "Ann: Hi.\nBo: Well"


def test_a_small_budget_keeps_the_newest_messages():
    request = _request(resources={"context_template": {"story_string": ""},
                                  "text_settings": {"max_context": 10, "amount_gen": 5, "token_padding": 0}})
    assert _prompt(request) == "Ann: Hi Bo."  # 4 tokens; with "Bo: Hello.\n" (4 more) it would reach 5


def test_text_completion_refuses_another_strategy_or_tokenizer():
    with pytest.raises(AssemblyError) as refused:
        assemble(_request(strategy="builtin-native-slots"))
    assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
    with pytest.raises(AssemblyError):
        assemble(_request(tokenizer="o200k_base"))


def test_bad_template_values_are_refused_with_the_field_named():
    request = _request(resources={"instruct_template": {"names_behavior": "sometimes"}})
    with pytest.raises(AssemblyError) as refused:
        assemble(request)
    assert "instruct_template.names_behavior" in str(refused.value)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("resources, path", [
    ({"context_template": {"story_string": "bad \udfff"}}, "resources.context_template.story_string"),
    ({"text_settings": {"max_context": float("nan")}}, "resources.text_settings.max_context"),
    ({"instruct_template": {"wrap": _nested(2000)}}, "resources.instruct_template.wrap"),
])
def test_text_resources_get_the_requests_check_for_unsafe_values(resources, path):
    with pytest.raises(AssemblyError) as refused:
        assemble(_request(resources=resources))
    assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
    assert refused.value.detail["path"].startswith(path)


def test_spans_name_examples_messages_and_the_last_line():
    request = _request(resources={
        "character": {"name": "Bo", "mes_example": "<START>\nBo: an example"},
        "context_template": {"story_string": "", "always_force_name2": True}})
    spans = assemble(request).model_dump(mode="json")["request"]["spans"]
    assert [(s["source"], s["text"]) for s in spans] == [
        ("example:card", "Bo: an example\n"), ("message:m1", "Bo: Hello.\n"), ("message:m2", "Ann: Hi Bo."),
        ("last_line", "\nBo:")]


def test_tokens_report_the_padded_estimate_against_the_budget():
    request = _request(resources={"text_settings": {"max_context": 100, "amount_gen": 40, "token_padding": 20}})
    tokens = assemble(request).model_dump(mode="json")["tokens"]
    # "A Bo card.\nBo: Hello.\nAnn: Hi Bo." is 33 bytes: 10 tokens, 30 with the padding, against 100 - 40
    assert (tokens["total"], tokens["context_window"], tokens["reply_reserve"], tokens["fits"]) == (30, 100, 40, True)
    assert tokens["by_module"] == {"story_string": 4, "message": 8}


@pytest.mark.parametrize(("engine", "typed"), [
    ("legacy", "Hi {{if char}}there{{/if}} 1."),  # the legacy engine knows no {{if}}
    ("v2", "Hi there 1."),
])
def test_text_completion_uses_the_requests_macro_engine_and_one_variable_state(engine, typed):
    # the typed message sets a variable the post-history instructions read: one state for the whole generation
    request = _request(macro_engine=engine, resources={
        "character": {"name": "Bo", "post_history_instructions": "n={{getvar::n}}"},
        "context_template": {"story_string": ""},
        "text_settings": {"sysprompt_enabled": True, "prefer_character_jailbreak": True}},
        conversation={"history": [], "input": [{"id": "m2", "role": "user", "name": "Ann",
                                                "content": "{{setvar::n::1}}Hi {{if char}}there{{/if}} {{getvar::n}}."}]})
    result = assemble(request).model_dump(mode="json")
    assert result["request"]["prompt"] == f"Ann: {typed}\nn=1"
    assert result["macro_variables"]["engine"] == engine
    assert result["macro_variables"]["after"] == {"local": {"n": "1"}, "global": {}}


def test_text_completion_takes_the_imported_settings_engine_unless_the_request_names_one():
    request = _request(resources={"character": {"name": "Bo"}, "context_template": {"story_string": ""},
                                  "macro_engine": "v2"},  # as imported settings with Macros 2.0 on give it
                       conversation={"history": [], "input": [{"id": "m2", "role": "user", "name": "Ann",
                                                               "content": "{{if char}}yes{{/if}}"}]})
    assert _prompt(request) == "Ann: yes"
    assert _prompt({**request, "macro_engine": "legacy"}) == "Ann: {{if char}}yes{{/if}}"


@pytest.mark.parametrize(("value", "dropped"), [
    ("[oops", "the whole value: it is not valid JSON"),
    ('{"a": 1}', "the whole value: it is JSON but not an array of strings"),
    ('["ok", 3, null]', "2 item(s) that are not strings"),
])
def test_custom_stop_strings_sillytavern_drops_are_reported(value, dropped):
    settings = {"instruct_enabled": False, "max_context": 4096, "amount_gen": 96, "token_padding": 0,
                "custom_stopping_strings": value}
    result = assemble(_request(resources={"text_settings": settings})).model_dump(mode="json")
    assert {"code": "TEXT_STOP_STRINGS_DROPPED", "field": "text_settings.custom_stopping_strings",
            "dropped": dropped} in result["diagnostics"]
    assert result["request"]["stop"] == ["\nAnn:"] + (["ok"] if value.startswith('["ok"') else [])


def test_readable_custom_stop_strings_report_nothing():
    settings = {"instruct_enabled": False, "max_context": 4096, "amount_gen": 96, "token_padding": 0,
                "custom_stopping_strings": '["THE END"]'}
    result = assemble(_request(resources={"text_settings": settings})).model_dump(mode="json")
    assert result["diagnostics"] == [] and result["request"]["stop"] == ["\nAnn:", "THE END"]
