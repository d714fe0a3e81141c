"""Example dialogues for text completion (assembly/sillytavern/text_examples.py; sillytavern-text-completion.md
§1.6, §3)."""

from __future__ import annotations

from assembly.sillytavern.text_examples import example_heading, format_instruct_examples, parse_examples
from assembly.sillytavern.text_templates import read_text_templates

TEXT = "Ann: hello\nBo: hi there\n<START>\nBo: alone"


def test_plain_blocks_get_the_separator_heading():
    heading = example_heading("***", "Ann", "Bo")
    assert parse_examples(TEXT, instruct_on=False, heading=heading) == [
        "***\nAnn: hello\nBo: hi there\n", "***\nBo: alone\n"]
    assert parse_examples(TEXT, instruct_on=False, heading="")[1] == "Bo: alone\n"


def test_instruct_blocks_split_into_messages_with_force_naming_only_the_user():
    instruct = read_text_templates({"instruct_template": {
        "input_sequence": "[U]", "output_sequence": "[B]", "wrap": True, "macro": True}}).instruct
    blocks = parse_examples(TEXT, instruct_on=True, heading="")
    assert format_instruct_examples(blocks, instruct, heading="--\n", user="Ann", char="Bo") == [
        "--\n", "[U]\nAnn: hello\n", "[B]\nhi there\n", "--\n", "[B]\nalone\n"]


def test_skip_examples_keeps_the_text_with_the_heading():
    instruct = read_text_templates({"instruct_template": {"skip_examples": True}}).instruct
    blocks = parse_examples(TEXT, instruct_on=True, heading="")
    assert format_instruct_examples(blocks, instruct, heading="--\n", user="Ann", char="Bo")[1] == "--\nBo: alone\n"
