"""JavaScript's `Number(value)` and `String(number)`, as SillyTavern's macros convert values (ECMAScript
StringToNumber and Number::toString)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

# StrWhiteSpaceChar: WhiteSpace and LineTerminator
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = {"0x": (16, re.compile(r"[0-9a-fA-F]+")), "0o": (8, re.compile(r"[0-7]+")), "0b": (2, re.compile(r"[01]+"))}


def _double(whole: int) -> float:
    """An integer as a JavaScript number: Infinity past the largest double (Python's float() raises there)."""
    try:
        return float(whole)
    except OverflowError:
        return math.inf if whole > 0 else -math.inf


def js_number(value: Any) -> float:
    """`Number(value)`: NaN for what JavaScript cannot read as a number."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        return _double(value)
    if not isinstance(value, str):
        return math.nan
    text = value.strip(_JS_SPACE)
    if not text:
        return 0.0
    if text in ("Infinity", "+Infinity"):
        return math.inf
    if text == "-Infinity":
        return -math.inf
    radix = _RADIX.get(text[:2].lower())
    if radix is not None:
        base, digits = radix
        return _double(int(text[2:], base)) if digits.fullmatch(text[2:]) else math.nan
    if _DECIMAL.fullmatch(text):
        try:
            return float(text)
        except OverflowError:  # pragma: no cover - float() gives inf rather than raising
            return math.inf
    return math.nan


def js_number_string(number: float | int) -> str:
    """`String(number)`: integers without a fraction, the shortest digits that read back, exponents past 1e21."""
    if isinstance(number, bool):
        return "true" if number else "false"
    if isinstance(number, int) and abs(number) < 10**21:
        return str(number)
    number = float(number)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits_tuple = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    k = len(digits)
    n = digits_tuple.exponent + k  # the decimal point sits after n digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def js_string(value: Any) -> str:
    """`String(value)` for the values macros produce (text, numbers, booleans, null as '')."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return js_number_string(value)
    return str(value)
