"""JavaScript regular expressions in Python, as SillyTavern (a browser) runs them: its "/pattern/flags" strings
(`regexFromString`), the flags g i m s u y, named groups, and JavaScript's meaning of \\w \\d \\s \\b and $.

One translation for every SillyTavern regex: regex scripts (sillytavern.md §13.1) and, later, world-info regex keys.
A pattern JavaScript would refuse gives None, as SillyTavern's `regexFromString` gives undefined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STRING_FORM = re.compile(r"(/?)(.+)\1([a-z]*)", re.IGNORECASE | re.DOTALL)
_ST_FLAGS = re.compile(r"^(?!.*?(.).*?\1)[gmixXsuUAJ]+$")
_JS_FLAGS = frozenset("dgimsuvy")
# JavaScript's \s: ASCII whitespace plus the Unicode space separators, line terminators and the BOM.
_JS_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_ASCII_CLASSES = {"w": "A-Za-z0-9_", "d": "0-9", "s": _JS_SPACE}


@dataclass(frozen=True)
class JsRegex:
    """A compiled JavaScript regex: `pattern` for Python, the `global_` (g) and `sticky` (y) flags."""

    pattern: re.Pattern[str]
    global_: bool
    sticky: bool


def regex_from_string(text: str) -> JsRegex | None:
    """SillyTavern's `regexFromString`: "/pattern/flags" with valid flags, else the whole text as a pattern without
    flags; None when JavaScript could not compile it."""
    found = _STRING_FORM.search(text)
    if found is None:
        return None
    pattern, flags = found.group(2), found.group(3)
    if flags and not _ST_FLAGS.match(flags):
        pattern, flags = text, ""
    return compile_js(pattern, flags)


def compile_js(pattern: str, flags: str = "") -> JsRegex | None:
    """`new RegExp(pattern, flags)` in Python; None when JavaScript would throw (or Python cannot follow)."""
    if any(f not in _JS_FLAGS for f in flags) or len(set(flags)) != len(flags):
        return None
    unicode = "u" in flags or "v" in flags
    translated = _translate(pattern, unicode=unicode, multiline="m" in flags)
    if translated is None:
        return None
    options = (re.IGNORECASE if "i" in flags else 0) | (re.MULTILINE if "m" in flags else 0) | (
        re.DOTALL if "s" in flags else 0)
    try:
        return JsRegex(re.compile(translated, options), "g" in flags, "y" in flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None


def _translate(pattern: str, *, unicode: bool, multiline: bool) -> str | None:
    """Rewrite JavaScript-only syntax: named groups and back references, and (without u) the ASCII classes; `$`
    without m matches only at the very end."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                return None  # a trailing backslash: JavaScript refuses it
            n = pattern[i + 1]
            if n == "k" and pattern.startswith("<", i + 2):
                end = pattern.find(">", i + 3)
                if end < 0:
                    return None
                out.append(f"(?P={pattern[i + 3:end]})")
                i = end + 1
                continue
            if n.lower() in _ASCII_CLASSES and (not unicode or n.lower() == "s"):
                inner = _ASCII_CLASSES[n.lower()]
                if not in_class:
                    out.append(f"[{inner}]" if n.islower() else f"[^{inner}]")
                else:  # a negated shorthand cannot be spelled inside a class: Python's own is close enough
                    out.append(inner if n.islower() else pattern[i:i + 2])
                i += 2
                continue
            if n in "bB" and not in_class and not unicode:
                word = _ASCII_CLASSES["w"]
                edge = f"(?:(?<![{word}])(?=[{word}])|(?<=[{word}])(?![{word}]))"
                inside = f"(?:(?<=[{word}])(?=[{word}])|(?<![{word}])(?![{word}]))"
                out.append(edge if n == "b" else inside)
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(c)
            i += 1
            continue
        if c == "[":
            if pattern.startswith("[]", i):  # JavaScript's empty class matches nothing
                out.append("(?!)")
                i += 2
                continue
            if pattern.startswith("[^]", i):  # and its negation matches anything
                out.append("(?s:.)")
                i += 3
                continue
            in_class = True
            out.append(c)
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            i += 1
            continue
        if c == "(" and pattern.startswith("?<", i + 1) and not pattern.startswith(("?<=", "?<!"), i + 1):
            out.append("(?P<")
            i += 3
            continue
        if c == "$" and not multiline:
            out.append(r"(?!(?s:.))")
            i += 1
            continue
        out.append(c)
        i += 1
    return None if in_class else "".join(out)


def js_replace(regex: JsRegex, text: str, replacement) -> str:
    """`text.replace(regex, fn)`: every match with g (only the first without), contiguous matches from the start
    with y; `replacement(match)` gives each match's text."""
    if regex.sticky:
        out, pos = [], 0
        while True:
            found = regex.pattern.match(text, pos)
            if found is None:
                break
            out.append(replacement(found))
            pos = found.end()
            if found.end() == found.start():  # an empty match: JavaScript steps one character on
                if pos >= len(text):
                    break
                out.append(text[pos])
                pos += 1
            if not regex.global_:
                break
        return "".join(out) + text[pos:]
    return regex.pattern.sub(replacement, text, count=0 if regex.global_ else 1)
