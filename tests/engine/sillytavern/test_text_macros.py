"""`substituteParams` for text completion (assembly/sillytavern/text_macros.py)."""

from __future__ import annotations

from assembly.sillytavern.text_macros import substitute_params


def test_original_fills_the_first_use_only():
    assert substitute_params("a {{original}} b {{original}}", "Ann", "Bo", original="X") == "a X b "


def test_original_without_a_value_stays_as_written():
    assert substitute_params("{{original}}", "Ann", "Bo") == "{{original}}"


def test_names_noop_and_newline():
    assert substitute_params("{{user}}{{noop}}{{newline}}{{char}}", "Ann", "Bo") == "Ann\nBo"


def test_trim_takes_newlines_but_not_spaces():
    assert substitute_params("a \n{{trim}}\n b", "Ann", "Bo") == "a  b"


def test_consecutive_trims_and_crlf_newlines():
    assert substitute_params("a\r\n{{trim}}\n\n{{TRIM}}\nb", "Ann", "Bo") == "ab"
    assert substitute_params("\n\n\n" * 20000 + "x", "Ann", "Bo").endswith("x")  # no trim: left as it is
