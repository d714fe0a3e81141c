"""An engine refusal's line in the page's language.

The engine refuses bad input with a line in English, `<path>: expected <what>[, got <value>]` (IMPORT_INVALID, a
request's own refusals), and the API answers it so. A page in another language says the same in its own words: what
was expected through the catalogue (context "expected": the engine's phrases, and a pattern for each phrase the
engine fills in with numbers or names), what was found by its kind. A phrase the catalogue does not have leaves the
line as the engine wrote it, marked as English unless it holds Chinese (a studio refusal its view translated).
`tests/web/test_refusal_lines.py` scans the engine's importers so that each phrase they write has its Chinese words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import get_language, pgettext

_TRANSLATED = re.compile("[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")  # the page's own script: Chinese
# a JSON path (no spaces) or the whole input; a line that only quotes such a line is left as written
_LINE = re.compile(r"(?P<where>the input|\S+?): expected (?P<rest>.*)\Z", re.S)
_GOT = ", got "

# The phrases the engine fills in: a pattern over the English, and the catalogue's words with its groups.
_FILLED_IN = (
    (r"an integer from (?P<low>-?\d+) to (?P<high>-?\d+)", "an integer from %(low)s to %(high)s"),
    (r"an integer >= (?P<low>-?\d+)", "an integer >= %(low)s"),
    (r"a whole number from (?P<low>-?\d+) to (?P<high>-?\d+)", "a whole number from %(low)s to %(high)s"),
    (r"the same value as (?P<other>.+) \(both are given\)", "the same value as %(other)s (both are given)"),
    (r"one of the fields (?P<fields>.+)", "one of the fields %(fields)s"),
    (r"the opposite of enabled \((?P<value>.+)\)", "the opposite of enabled (%(value)s)"),
    (r"one of (?P<choices>[^()]+)", "one of %(choices)s"),  # a studio form's choices (after "one of the fields")
    (r"at most (?P<limit>\d+) bytes", "at most %(limit)s bytes"),
    (r"a chat file of at most (?P<limit>\d+) bytes", "a chat file of at most %(limit)s bytes"),
    (r"a file of at most 5 MiB \((?P<limit>\d+) bytes\), got (?P<size>\d+) bytes",
     "a file of at most 5 MiB (%(limit)s bytes), got %(size)s bytes"),
    (r"an archive of at most (?P<limit>\d+) entries \((?P<found>\d+) found\)",
     "an archive of at most %(limit)s entries (%(found)s found)"),
    (r"an image of at most (?P<side>\d+) x \d+ pixels, got (?P<width>\d+) x (?P<height>\d+)",
     "an image of at most %(side)s x %(side)s pixels, got %(width)s x %(height)s"),
    (r"at most (?P<limit>\d+) effects", "at most %(limit)s effects"),
    (r"at most (?P<limit>\d+) bytes uncompressed in all \((?P<total>\d+) declared\)",
     "at most %(limit)s bytes uncompressed in all (%(total)s declared)"),
    (r"compressed text inflating to at most (?P<limit>\d+) bytes \(the upload cap\)",
     "compressed text inflating to at most %(limit)s bytes (the upload cap)"),
    (r"the key it is listed under \((?P<key>.+)\)", "the key it is listed under (%(key)s)"),
    (r"valid zlib-compressed text \((?P<error>.+)\)", "valid zlib-compressed text (%(error)s)"),
    (r"a readable entry \((?P<error>.+)\)", "a readable entry (%(error)s)"),
    (r"a correct CRC for the (?P<chunk>.+) chunk", "a correct CRC for the %(chunk)s chunk"),
    (r"(?P<length>\d+) bytes of chunk data and a CRC \(the PNG is truncated\)",
     "%(length)s bytes of chunk data and a CRC (the PNG is truncated)"),
    (r"text without lone surrogates \((?P<code>\\u[0-9a-f]{4}); send the character itself\)",
     "text without lone surrogates (%(code)s; send the character itself)"),
    (r"JSON nested at most (?P<depth>\d+) levels deep", "JSON nested at most %(depth)s levels deep"),
)
_PATTERNS = tuple((re.compile(pattern + r"\Z", re.S), words) for pattern, words in _FILLED_IN)

# What was found, as `assembly.reading.describe` writes it.
_FOUND = re.compile(r"(?P<kind>boolean|integer|number|string) (?P<value>.*)\Z", re.S)
_FOUND_ITEMS = re.compile(r"(?P<kind>list|object) of (?P<count>\d+) item\(s\)\Z")


@dataclass(frozen=True)
class RefusalLine:
    text: str
    lang: str | None  # "en" where the page shows the engine's English line as written


def refusal_line(error: Mapping[str, Any]) -> RefusalLine:
    """The refusal's line (`error` as `CodedError.to_json` gives it) in the page's language where the catalogue
    has its words."""
    message = str(error.get("error") or "")
    language = get_language() or "en"
    if language.split("-")[0] == "en":
        return RefusalLine(message, None)
    line = _LINE.match(message)
    detail = error.get("detail")
    stated = detail.get("expected") if isinstance(detail, Mapping) else None
    read = _read(line["rest"], stated if isinstance(stated, str) else None) if line else None
    if line is None or read is None:
        # as written: the engine's line, or a studio refusal its view may have translated already
        return RefusalLine(message, None if _TRANSLATED.search(message) else "en")
    expected, found = read
    where = line["where"]
    where = pgettext("expected", "the input") if where == "the input" else where
    if found is None:
        return RefusalLine(pgettext("expected", "%(where)s: expected%(expected)s") % {
            "where": where, "expected": _spaced(expected)}, None)
    return RefusalLine(pgettext("expected", "%(where)s: expected%(expected)s, got%(found)s") % {
        "where": where, "expected": _spaced(expected), "found": _spaced(_found_words(found))}, None)


def _spaced(words: str) -> str:
    """The words as they follow a verb: after a space where they start with Latin text (`true`, `null`, a field
    name), joined to it where they start in the page's own script, as Chinese writes them."""
    return f" {words}" if words[:1].isascii() else words


def _read(rest: str, stated: str | None) -> tuple[str, str | None] | None:
    """(what was expected in the page's words, what was found as written or None), or None without words: the
    expected phrase is the one the error states, else the whole rest when it is a phrase of its own (it may hold
    ", got "), else what stands before the last ", got "."""
    if stated is not None:
        if rest == stated:
            found = None
        elif rest.startswith(stated + _GOT):
            found = rest[len(stated) + len(_GOT):]
        else:
            return None
        words = _expected_words(stated)
        return (words, found) if words is not None else None
    words = _expected_words(rest)
    if words is not None or _GOT not in rest:
        return (words, None) if words is not None else None
    head, _, found = rest.rpartition(_GOT)
    words = _expected_words(head)
    return (words, found) if words is not None else None


def _expected_words(phrase: str) -> str | None:
    words = pgettext("expected", phrase)
    if words != phrase:
        return words
    for pattern, msgid in _PATTERNS:
        match = pattern.match(phrase)
        if match:
            words = pgettext("expected", msgid)
            return words % match.groupdict() if words != msgid else None
    return None


def _found_words(found: str) -> str:
    """What was found in the page's words: its kind translated, its value as written."""
    match = _FOUND.match(found)
    if match:
        kind = {"boolean": pgettext("expected", "boolean"), "integer": pgettext("expected", "integer"),
                "number": pgettext("expected", "number"), "string": pgettext("expected", "string")}[match["kind"]]
        return f"{kind} {match['value']}"
    match = _FOUND_ITEMS.match(found)
    if match:
        words = (pgettext("expected", "a list of %(count)s item(s)") if match["kind"] == "list"
                 else pgettext("expected", "an object of %(count)s item(s)"))
        return words % {"count": match["count"]}
    return found
