"""JavaScript's Number() and String() for numbers, as SillyTavern's variable macros convert values
(ECMAScript StringToNumber and Number::toString)."""

import math

import pytest

from assembly.sillytavern.js_numbers import js_number, js_number_string


@pytest.mark.parametrize(("text", "number"), [
    ("", 0.0), ("   ", 0.0), (" 42 ", 42.0), ("-3.5", -3.5), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0),
    ("0x10", 16.0), ("0b101", 5.0), ("0o17", 15.0), ("Infinity", math.inf), ("-Infinity", -math.inf),
    ("\u00a07\n", 7.0), (None, 0.0), (True, 1.0),
])
def test_number_reads_what_javascript_reads(text, number):
    assert js_number(text) == number


@pytest.mark.parametrize("text", ["abc", "1,5", "0x", "-0x10", "1e", "++1", "inf", "NaN", "12px"])
def test_number_of_anything_else_is_nan(text):
    assert math.isnan(js_number(text))


@pytest.mark.parametrize(("number", "text"), [
    (0.1 + 0.2, "0.30000000000000004"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"), (0.000001, "0.000001"), (123.456, "123.456"), (-0.0, "0"), (5.0, "5"), (7, "7"),
    (math.nan, "NaN"), (-math.inf, "-Infinity"), (2.5e25, "2.5e+25"),
])
def test_string_writes_what_javascript_writes(number, text):
    assert js_number_string(number) == text


def test_a_whole_number_past_the_largest_double_is_infinity_as_in_javascript():
    assert js_number(10**400) == math.inf and js_number(-(10**400)) == -math.inf
    assert js_number("0x" + "f" * 300) == math.inf  # Number("0xfff...") past 1.8e308
    assert js_number(2**53 + 1) == float(2**53)  # rounded as a double
