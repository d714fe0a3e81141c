"""Advanced Formatting files (assembly/sillytavern/text_presets.py): detection by keys, the master export, and
templates as SillyTavern ships them (read from the text-completion oracle's inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assembly.sillytavern.text_presets import TextPresetInvalid, detect_text_preset, read_text_presets
from assembly.sillytavern.text_templates import read_text_templates

ORACLE = Path(__file__).resolve().parents[3] / ".." / "shared" / "oracle" / "st-text" / "cases.json"

INSTRUCT = {"name": "Mine", "input_sequence": "<u>", "output_sequence": "<b>", "wrap": True, "custom": 1}
CONTEXT = {"name": "Mine", "story_string": "{{description}}", "chat_start": "--"}
SYSPROMPT = {"name": "Mine", "content": "Be {{char}}."}
REASONING = {"name": "Mine", "prefix": "<think>", "suffix": "</think>", "separator": "\n"}


@pytest.mark.parametrize(("data", "kind"), [(INSTRUCT, "instruct"), (CONTEXT, "context"), (SYSPROMPT, "sysprompt"),
                                             (REASONING, "reasoning"), ({"instruct": INSTRUCT}, "master"),
                                             ({"name": "x"}, None), ([], None)])
def test_detected_by_their_keys(data, kind):
    assert detect_text_preset(data) == kind


def test_master_export_splits_into_the_request_resources():
    presets = read_text_presets({"instruct": INSTRUCT, "context": CONTEXT, "sysprompt": SYSPROMPT,
                                 "reasoning": REASONING})
    assert presets.resources() == {"instruct_template": INSTRUCT, "context_template": CONTEXT,
                                   "system_prompt": {**SYSPROMPT, "post_history": ""}}
    assert presets.reasoning == REASONING
    assert presets.instruct_template["custom"] == 1  # a field SillyTavern does not read is kept


def test_a_lone_template_fills_its_part_only():
    presets = read_text_presets(CONTEXT)
    assert presets.context_template == CONTEXT and presets.instruct_template is None


def test_refusals_name_the_section():
    with pytest.raises(TextPresetInvalid, match="file"):
        read_text_presets({"name": "nothing else"})
    with pytest.raises(TextPresetInvalid, match="instruct"):
        read_text_presets({"instruct": {**INSTRUCT, "names_behavior": "often"}})


@pytest.mark.skipif(not ORACLE.exists(), reason="needs ../shared")
def test_the_shipped_templates_read_and_feed_the_request_shapes():
    cases = json.loads(ORACLE.read_text(encoding="utf-8"))["scenarios"]
    for case in cases[:60]:
        source = case["input"]
        master = {"instruct": source["instruct_template"], "context": source["context_template"],
                  "sysprompt": source["sysprompt"]}
        assert detect_text_preset(source["instruct_template"]) == "instruct"
        assert detect_text_preset(source["context_template"]) == "context"
        resources = read_text_presets(master).resources()
        assert resources["instruct_template"] == source["instruct_template"]
        assert read_text_templates(resources).context["story_string"] == source["context_template"]["story_string"]


def test_a_bad_field_is_named_within_the_file():
    with pytest.raises(TextPresetInvalid) as refused:
        read_text_presets({"context": {**CONTEXT, "story_string_depth": "deep"}})
    assert refused.value.detail["path"] == "context.story_string_depth"
