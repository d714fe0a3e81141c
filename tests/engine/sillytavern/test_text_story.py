"""The story string (assembly/sillytavern/text_story.py; sillytavern-text-completion.md §2)."""

from __future__ import annotations

from assembly.sillytavern.text_story import render_story_string, wrap_story_string
from assembly.sillytavern.text_templates import read_text_templates


def _render(template: str, params: dict, *, in_prompt: bool = True, instruct_on: bool = False, wrap: bool = True,
            suffix: str = "") -> str:
    return render_story_string(template, params, user="Ann", char="Bo", in_prompt=in_prompt,
                               instruct_on=instruct_on, wrap=wrap, suffix=suffix)


def test_if_blocks_render_only_non_empty_values():
    template = "{{#if a}}A: {{a}}\n{{/if}}{{#if b}}B: {{b}}\n{{/if}}"
    assert _render(template, {"a": "one", "b": ""}) == "A: one\n"


def test_else_and_unless_branches():
    assert _render("{{#if a}}yes{{else}}no{{/if}}", {"a": ""}) == "no\n"
    assert _render("{{#unless a}}empty{{/unless}}", {"a": ""}) == "empty\n"


def test_a_block_tag_alone_on_its_line_takes_the_line_with_it():
    template = "Top\n{{#if a}}\nInside\n{{/if}}\nBottom"
    assert _render(template, {"a": "x"}) == "Top\nInside\nBottom\n"
    assert _render(template, {"a": ""}) == "Top\nBottom\n"


def test_unknown_names_go_through_the_macros():
    assert _render("{{char}} and {{user}} and {{nothing}}", {}) == "Bo and Ann and {{nothing}}\n"


def test_trim_removes_the_newlines_around_it_only():
    assert _render("one\n\n{{trim}}\n\n two", {}) == "one two\n"


def test_leading_newlines_are_removed():
    assert _render("\n\nText", {}) == "Text\n"


def test_no_closing_newline_in_chat_or_when_instruct_wraps_it_itself():
    assert _render("Text", {}, in_prompt=False) == "Text"
    assert _render("Text", {}, instruct_on=True, wrap=False) == "Text"
    assert _render("Text", {}, instruct_on=True, wrap=True, suffix="</s>") == "Text"
    assert _render("Text", {}, instruct_on=True, wrap=True) == "Text\n"


def test_instruct_prefix_and_suffix_wrap_the_story_string():
    instruct = read_text_templates({"instruct_template": {
        "story_string_prefix": "<{{name}}>", "story_string_suffix": "</sys>", "wrap": True}}).instruct
    assert wrap_story_string("Body\n", instruct, user="Ann", char="Bo") == "<System>\nBody\n</sys>"
    assert wrap_story_string("", instruct, user="Ann", char="Bo") == ""


def test_outlets_take_their_world_info_text_and_are_empty_without_one():
    text = render_story_string("A{{outlet::lore}}B{{outlet::none}}", {}, user="Ann", char="Bo", in_prompt=True,
                               instruct_on=False, wrap=False, suffix="", outlets={"lore": "-x-"})
    assert text == "A-x-B\n"


def test_the_render_reports_the_parameters_it_put_in():
    # the story string's span names the anchors' sources only when the template put the anchor in
    used: set[str] = set()
    template = "{{#if anchorBefore}}{{anchorBefore}}\n{{/if}}{{description}}{{#if anchorAfter}}{{anchorAfter}}{{/if}}"
    out = render_story_string(template, {"anchorBefore": "Memory", "description": "Tall.", "anchorAfter": ""},
                              user="Ann", char="Bo", in_prompt=True, instruct_on=False, wrap=True, suffix="",
                              used=used)
    assert out == "Memory\nTall.\n"
    assert used == {"anchorBefore", "description"}


def test_a_template_is_parsed_once_and_renders_alike_with_other_values():
    from assembly.caches import TEMPLATES, clear_caches

    clear_caches()
    template = "{{#if a}}A: {{a}}\n{{/if}}{{#if b}}B: {{b}}\n{{/if}}"
    assert _render(template, {"a": "one", "b": ""}) == "A: one\n"
    assert len(TEMPLATES) == 1
    assert _render(template, {"a": "", "b": "two"}) == "B: two\n"
    assert len(TEMPLATES) == 1


def test_a_long_template_is_not_kept():
    from assembly.caches import TEMPLATES, clear_caches

    clear_caches()
    assert _render("{{a}}" + " " * 9_000, {"a": "x"}) == "x" + " " * 9_000 + "\n"
    assert len(TEMPLATES) == 0
