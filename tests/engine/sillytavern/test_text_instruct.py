"""Instruct formatting for text completion (assembly/sillytavern/text_instruct.py; sillytavern-text-completion.md
§3, §6)."""

from __future__ import annotations

from assembly.sillytavern.text_instruct import format_chat_message, instruct_stop_strings, last_line
from assembly.sillytavern.text_templates import read_text_templates


def _instruct(**fields) -> dict:
    return read_text_templates({"instruct_template": fields}).instruct


def _message(instruct: dict, name: str, text: str, *, is_user: bool = True, is_narrator: bool = False,
             force=None) -> str:
    return format_chat_message(instruct, name, text, is_user=is_user, is_narrator=is_narrator, force=force,
                               user="Ann", char="Bo")


def test_wrap_joins_sequence_and_text_with_a_newline_and_an_empty_suffix_becomes_one():
    instruct = _instruct(input_sequence="[U]", wrap=True)
    assert _message(instruct, "Ann", "hi") == "[U]\nhi\n"


def test_without_wrap_parts_touch():
    instruct = _instruct(input_sequence="[U]", input_suffix="[/U]", wrap=False)
    assert _message(instruct, "Ann", "hi") == "[U]hi[/U]"


def test_first_and_last_variants_replace_the_sequence_when_set():
    instruct = _instruct(output_sequence="<a>", first_output_sequence="<first>", last_input_sequence="<last>",
                         input_sequence="<u>")
    assert _message(instruct, "Bo", "x", is_user=False, force="first") == "<first>x"
    assert _message(instruct, "Bo", "x", is_user=False, force="last") == "<a>x"  # no last output sequence
    assert _message(instruct, "Ann", "x", force="last") == "<last>x"


def test_names_always_prefix_speakers_but_never_the_narrator():
    instruct = _instruct(input_sequence="U:", system_sequence="S:", names_behavior="always")
    assert _message(instruct, "Ann", "x") == "U:Ann: x"
    assert _message(instruct, "", "x", is_user=False, is_narrator=True) == "S:x"


def test_macro_fills_name_in_sequences():
    instruct = _instruct(output_sequence="<{{name}}>", macro=True)
    assert _message(instruct, "Bo", "x", is_user=False) == "<Bo>x"
    assert _message(_instruct(output_sequence="<{{name}}>"), "Bo", "x", is_user=False) == "<{{name}}>x"


def test_last_line_opens_the_reply_with_start_reply_with():
    instruct = _instruct(output_sequence="### R:", input_sequence="### U: ", wrap=True)
    assert last_line(instruct, name="Bo", impersonate=False, bias="  Sure", user="Ann", char="Bo") == \
        "\n### R:\nSure\n"
    # impersonation: the input sequence, no Start Reply With; wrap trims the end before the closing newline
    assert last_line(instruct, name="Ann", impersonate=True, bias="Sure", user="Ann", char="Bo") == "\n### U:\n"


def test_last_line_with_names_ends_with_the_name():
    instruct = _instruct(output_sequence="[R]", names_behavior="always", wrap=False)
    assert last_line(instruct, name="Bo", impersonate=False, bias="", user="Ann", char="Bo") == "[R]Bo:"


def test_stop_sequences_are_split_by_line_deduplicated_and_prefixed_when_wrapping():
    instruct = _instruct(stop_sequence="</s>", input_sequence="<u>\n{{name}}", output_sequence="<u>", wrap=True)
    assert instruct_stop_strings(instruct, user="Ann", char="Bo") == ["\n</s>", "\n<u>", "\nAnn"]
    off = _instruct(stop_sequence="</s>", input_sequence="<u>", sequences_as_stop_strings=False)
    assert instruct_stop_strings(off, user="Ann", char="Bo") == ["</s>"]
