"""Text macros (assembly/macros.py): `{{trim}}` and unclosed braces."""

from __future__ import annotations

import time

import pytest

from assembly.macros import MacroContext, expand_text_macros, holds_macro


def test_trim_removes_the_whitespace_around_each_use():
    assert expand_text_macros("a \n {{trim}} \n b{{ trim }}  c", MacroContext()).text == "abc"


def test_text_after_the_last_closing_braces_is_kept_as_written():
    assert expand_text_macros("{{user}} {{ left open", MacroContext(user="Ann")).text == "Ann {{ left open"


def test_many_unclosed_braces_take_linear_time():
    started = time.perf_counter()
    expand_text_macros("{{" * 50_000 + "}}" + "{{" * 50_000, MacroContext())
    expand_text_macros(" " * 100_000 + "{{trim}}" + " " * 100_000, MacroContext())
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize("text", ["", "{", "}}", "{{", "a{b{c", "a{ {b", "x{{", "{x{{y", "{{{", "}{{", "{a{b{c{{d",
                                  "明天{{user}}", "{" * 7, "{}{}{"])
def test_holds_macro_answers_as_a_search_for_the_two_braces(text):
    assert holds_macro(text) is ("{{" in text)


@pytest.mark.parametrize(("text", "expected"), [
    ("{{roll:2d6+3}}", "11"),
    ("{{roll:1d0+3}}", "3"),  # no faces: the bonus alone
    ("{{roll:1d" + "9" * 5000 + "}}", "Infinity"),  # a JavaScript number, never a 5,000-digit total
])
def test_dice_of_any_size_take_the_middle_face(text, expected):
    assert expand_text_macros(text, MacroContext()).text == expected
