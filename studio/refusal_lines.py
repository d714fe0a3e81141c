"""An engine refusal's line in the page's language.

The engine refuses bad input with a line in English, in one of two shapes, and the API answers it so:
- `<path>: expected <what>[, got <value>]`: IMPORT_INVALID, a request's own refusals;
- `<headline>: <path> must be <what>[, got <value>]`: the strategy validator (`assembly.strategy._fail`), whose
  headline is one of the reference's texts (context "strategy") and whose path may be "the strategy" itself.
A page in another language says the same in its own words: the headline and what was expected through the catalogue
(context "expected": the engine's phrases, and a pattern for each phrase the engine fills in with numbers or names;
a phrase that is only a code value, `1` or `'native'`, reads the same everywhere), what was found by its kind as the
engine describes it. A line the catalogue has not every word of is left as the engine wrote it, marked as English
unless it holds Chinese (a studio refusal its view translated): never half of it translated.
`tests/web/test_refusal_lines.py` scans the engine's importers and the strategy validator so that each phrase they
write has its Chinese words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import get_language, pgettext

_TRANSLATED = re.compile("[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")  # the page's own script: Chinese
# a JSON path (no spaces) or the whole input; a line that only quotes such a line is left as written
_EXPECTED_LINE = re.compile(r"(?P<where>the input|line \d+|\S+?): expected (?P<rest>.*)\Z", re.S)
# the strategy validator's: a headline without a colon, then a path (no spaces) or the whole document
_MUST_BE_LINE = re.compile(r"(?P<headline>[^:]+): (?P<where>the strategy|\S+) must be (?P<rest>.*)\Z", re.S)
# the studio's 404: `<what> <key> does not exist` (studio.errors.not_found), the key as Python writes it
_NOT_FOUND_LINE = re.compile(r"(?P<what>.+?) (?P<key>-?\d+|'[^']*'|\"[^\"]*\") does not exist\Z", re.S)
_NOT_FOUND_OF = (  # the things a 404 names with another thing's key in them
    (re.compile(r"revision of (?P<strategy>'[^']*')\Z"), "revision of %(strategy)s"),
    (re.compile(r"message of session (?P<session>\d+)\Z"), "message of session %(session)s"),
    (re.compile(r"event of session (?P<session>\d+)\Z"), "event of session %(session)s"),
)
# the studio's refusal of a body or file that is not JSON (studio.http.parse_json): the decoder's reason and place
_NOT_JSON_LINE = re.compile(r"(?P<where>\S+): not JSON \((?P<reason>.+?): line (?P<line>\d+), column "
                            r"(?P<column>\d+)\)\Z")
_GOT = ", got "
# A phrase that is only a code value (the strategy's `version` 1, its quoted format): the same in every language.
_CODE_VALUE = re.compile(r"-?\d+|'[^'\\]*'")

# The phrases the engine fills in: a pattern over the English, and the catalogue's words with its groups.
_FILLED_IN = (
    (r"an integer from (?P<low>-?\d+) to (?P<high>-?\d+)", "an integer from %(low)s to %(high)s"),
    (r"an integer >= (?P<low>-?\d+)", "an integer >= %(low)s"),
    (r"a whole number of tokens from (?P<low>\d+) to (?P<high>\d+)", "a whole number of tokens from %(low)s to %(high)s"),
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
    (r"a text of at most (?P<limit>\d+) characters from the macros",
     "a text of at most %(limit)s characters from the macros"),
    # the strategy validator's (assembly/strategy.py)
    (r"a JSON object with format (?P<format>'[^']*') and version (?P<version>\d+)",
     "a JSON object with format %(format)s and version %(version)s"),
    (r"a non-blank string of at most (?P<limit>\d+) characters", "a non-blank string of at most %(limit)s characters"),
    (r"a list of at most (?P<limit>\d+) rules", "a list of at most %(limit)s rules"),
    (r"given in one spelling only \((?P<first>\S+) and (?P<second>\S+) were both given\)",
     "given in one spelling only (%(first)s and %(second)s were both given)"),
    (r"unique, but (?P<id>.+) is already used by an earlier rule", "unique, but %(id)s is already used by an earlier rule"),
    (r"null or an integer from (?P<low>-?\d+) to (?P<high>-?\d+)", "null or an integer from %(low)s to %(high)s"),
    (r"a string of at most (?P<limit>\d+) characters", "a string of at most %(limit)s characters"),
    (r"at most (?P<limit>\d+) characters long", "at most %(limit)s characters long"),
    (r"a list of at most (?P<limit>\d+) overrides", "a list of at most %(limit)s overrides"),
    (r"a block id of 1 to (?P<limit>\d+) characters", "a block id of 1 to %(limit)s characters"),
    (r"'user', 'preset' or a list of (?P<low>\d+) to (?P<high>\d+) stage ids",
     "'user', 'preset' or a list of %(low)s to %(high)s stage ids"),
    (r"listed once, but (?P<stage>.+) repeats", "listed once, but %(stage)s repeats"),
    (r"a list containing preset, resource and default \(missing (?P<missing>.+)\)",
     "a list containing preset, resource and default (missing %(missing)s)"),
    (r"a list of at most (?P<limit>\d+) position rows", "a list of at most %(limit)s position rows"),
    (r"the only row for (?P<key>.+)", "the only row for %(key)s"),
    (r"another position than the row itself \((?P<key>.+)\)", "another position than the row itself (%(key)s)"),
)
_FIELD_LISTS = ("fields", "choices")  # the groups of a filled-in phrase that list field names or codes
_PATTERNS = tuple((re.compile(pattern + r"\Z", re.S), words) for pattern, words in _FILLED_IN)

# What was found, as `assembly.reading.describe` writes it.
_FOUND = re.compile(r"(?P<kind>boolean|integer|number|string) (?P<value>.*)\Z", re.S)
_FOUND_ITEMS = re.compile(r"(?P<kind>list|object) of (?P<count>\d+) item\(s\)\Z")
# What was found, as `assembly.strategy.describe_value` writes it (null, true and false are JSON's own words).
_DESCRIBED = re.compile(r"the (?P<kind>number|string) (?P<value>.*)\Z", re.S)
_DESCRIBED_LIST = re.compile(r"a list of (?P<count>\d+) items\Z")
_DESCRIBED_TYPE = re.compile(r"an? (?P<type>\w+)\Z")  # a value JSON does not have: its Python type's name


@dataclass(frozen=True)
class RefusalLine:
    text: str
    lang: str | None  # "en" where the page shows the engine's English line as written
    codes: tuple[str, ...] = ()  # parts of a translated text that are field names, shown as code


def refusal_line(error: Mapping[str, Any]) -> RefusalLine:
    """The refusal's line (`error` as `CodedError.to_json` gives it) in the page's language where the catalogue
    has its words."""
    message = str(error.get("error") or "")
    language = get_language() or "en"
    if language.split("-")[0] == "en":
        return RefusalLine(message, None)
    detail = error.get("detail")
    detail = detail if isinstance(detail, Mapping) else {}
    stated = detail.get("expected")
    stated = stated if isinstance(stated, str) else None
    codes: list[str] = []
    reason = detail.get("reason")
    if isinstance(reason, Mapping) and isinstance(detail.get("detected"), str) and isinstance(detail.get("chosen"), str):
        text = _kind_mismatch_line(detail["detected"], detail["chosen"], reason, codes)
    else:
        text = _expected_line(message, stated, codes)
    if text is None:
        text = _must_be_line(message, stated, detail.get("path"), codes)
    if text is None and error.get("code") == "NOT_FOUND":
        text = _not_found_line(message)
    if text is None and error.get("code") == "INPUT_NOT_JSON":
        text = _not_json_line(message)
    if text is None:  # a fixed sentence of the engine's (the standard backend's refusals, reference A.6)
        words = pgettext("engine refusal", message)
        text = words if words != message else None
    if text is None:
        # as written: the engine's line, or a studio refusal its view may have translated already
        return RefusalLine(message, None if _TRANSLATED.search(message) else "en")
    return RefusalLine(text, None, tuple(codes))


def _kind_mismatch_line(detected: str, chosen: str, reason: Mapping[str, Any], codes: list[str]) -> str | None:
    """The import page's refusal of a file read as another kind than it looks like, with the reader's own refusal
    in the page's words; None when that refusal has no words here (the line stays English whole)."""
    from studio.wording import engine_word  # studio.wording builds on this module

    nested = refusal_line(reason)
    if nested.lang is not None:
        return None
    codes += nested.codes
    return pgettext("expected", "kind: the file looks like a %(detected)s, not a %(chosen)s (%(reason)s)") % {
        "detected": engine_word("resource_kind", detected), "chosen": engine_word("resource_kind", chosen),
        "reason": nested.text}


def _not_json_line(message: str) -> str | None:
    """`<field>: not JSON (<the decoder's reason>: line L, column C)` in the page's words, or None for a reason
    the catalogue has no words for."""
    line = _NOT_JSON_LINE.match(message)
    if line is None:
        return None
    reason = pgettext("json decoder", line["reason"])
    if reason == line["reason"]:
        return None
    return pgettext("json decoder", "%(where)s: not JSON (%(reason)s: line %(line)s, column %(column)s)") % {
        "where": line["where"], "reason": reason, "line": line["line"], "column": line["column"]}


def _not_found_line(message: str) -> str | None:
    """`<what> <key> does not exist` in the page's words, or None for a thing the catalogue has no word for."""
    line = _NOT_FOUND_LINE.match(message)
    if line is None:
        return None
    what = line["what"]
    words = pgettext("not found", what)
    if words == what:
        for pattern, msgid in _NOT_FOUND_OF:
            match = pattern.match(what)
            if match:
                words = pgettext("not found", msgid)
                words = words % match.groupdict() if words != msgid else what
                break
    if words == what:
        return None
    return pgettext("not found", "%(what)s %(key)s does not exist") % {"what": words, "key": line["key"]}


def _expected_line(message: str, stated: str | None, codes: list[str]) -> str | None:
    """`<path>: expected <what>[, got <found>]` in the page's words, or None."""
    line = _EXPECTED_LINE.match(message)
    read = _read(line["rest"], stated, codes) if line else None
    if read is None:
        return None
    expected, found = read
    where = line["where"]
    if where == "the input":
        where = pgettext("expected", "the input")
    elif where.startswith("line "):  # a line of a JSON-lines file (a chat)
        where = pgettext("expected", "line %(number)s") % {"number": where[5:]}
    if found is None:
        return pgettext("expected", "%(where)s: expected%(expected)s") % {
            "where": where, "expected": _spaced(expected)}
    return pgettext("expected", "%(where)s: expected%(expected)s, got%(found)s") % {
        "where": where, "expected": _spaced(expected), "found": _spaced(_found_words(found))}


def _must_be_line(message: str, stated: str | None, path: Any, codes: list[str]) -> str | None:
    """`<headline>: <path> must be <what>[, got <value>]` in the page's words, or None. The error states its
    expected phrase and its path ("" for the whole document), so a line that only looks like one is left alone."""
    line = _MUST_BE_LINE.match(message)
    if line is None or stated is None or line["where"] != (path or "the strategy"):
        return None
    headline = pgettext("strategy", line["headline"])
    read = _read(line["rest"], stated, codes)
    if headline == line["headline"] or read is None:
        return None
    expected, found = read
    found_words = _described_words(found) if found is not None else None
    if found is not None and found_words is None:
        return None
    where = line["where"]
    where = pgettext("strategy", "the strategy") if where == "the strategy" else where
    values = {"headline": headline, "where": _spaced_before(where), "expected": _spaced(expected)}
    if found_words is None:
        return pgettext("strategy", "%(headline)s: %(where)smust be%(expected)s") % values
    return pgettext("strategy", "%(headline)s: %(where)smust be%(expected)s, got%(found)s") % {
        **values, "found": _spaced(found_words)}


def _spaced(words: str) -> str:
    """The words as they follow a verb: after a space where they start with Latin text (`true`, `null`, a field
    name), joined to it where they start in the page's own script, as Chinese writes them."""
    return f" {words}" if words[:1].isascii() else words


def _spaced_before(words: str) -> str:
    """The words as they come before a verb: `_spaced` the other way round (`rules[0].role 应为`, `策略应为`)."""
    return f"{words} " if words[-1:].isascii() else words


def _read(rest: str, stated: str | None, codes: list[str]) -> tuple[str, str | None] | None:
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
        words = _expected_words(stated, codes)
        return (words, found) if words is not None else None
    words = _expected_words(rest, codes)
    if words is not None or _GOT not in rest:
        return (words, None) if words is not None else None
    head, _, found = rest.rpartition(_GOT)
    words = _expected_words(head, codes)
    return (words, found) if words is not None else None


def _expected_words(phrase: str, codes: list[str]) -> str | None:
    """The expected phrase in the page's words; the field names a filled-in phrase lists go to `codes`."""
    if _CODE_VALUE.fullmatch(phrase):
        return phrase
    words = pgettext("expected", phrase)
    if words != phrase:
        return words
    for pattern, msgid in _PATTERNS:
        match = pattern.match(phrase)
        if match:
            words = pgettext("expected", msgid)
            if words == msgid:
                return None
            codes += [match[name] for name in _FIELD_LISTS if name in match.groupdict()]
            return words % match.groupdict()
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


def _described_words(found: str) -> str | None:
    """What was found, as `assembly.strategy.describe_value` writes it, in the page's words (its kind translated,
    its value as written), or None for a description this does not know."""
    if found in ("null", "true", "false"):
        return found
    if found == "an object":
        return pgettext("expected", "an object")
    if found == "a very large number":
        return pgettext("strategy", "a very large number")
    match = _DESCRIBED.match(found)
    if match:
        kind = {"number": pgettext("expected", "number"), "string": pgettext("expected", "string")}[match["kind"]]
        return f"{kind} {match['value']}"
    match = _DESCRIBED_LIST.match(found)
    if match:
        return pgettext("expected", "a list of %(count)s item(s)") % {"count": match["count"]}
    match = _DESCRIBED_TYPE.match(found)
    if match:
        return pgettext("strategy", "a %(type)s") % {"type": match["type"]}
    return None
