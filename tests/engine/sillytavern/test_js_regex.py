"""JavaScript regular expressions run with Python's re (assembly.sillytavern.js_regex).

Each expected answer is what `new RegExp(source, flags).exec(text)` gives in JavaScript (ECMAScript with Annex B,
as browsers run it): the matched text, None for no match, or the refusal kind.
"""

from __future__ import annotations

import pytest

from assembly.sillytavern.js_regex import JsRegex, Uncompilable, compile_js
from assembly.sillytavern.pattern_matcher import regex_from_string

NO_MATCH = None

MATCHES = [
    # (source, flags, text, first match)
    # flags
    ("cat", "", "Cat cat", "cat"),
    ("CAT", "i", "a Cat", "Cat"),
    ("^b", "", "a\nb", NO_MATCH),
    ("^b", "m", "a\nb", "b"),
    ("^b", "m", "a\rb", "b"),  # every line terminator starts a line, not only \n
    ("a$", "", "a\n", NO_MATCH),  # Python's $ would match before the final newline
    ("a$", "m", "a\u2028b", "a"),
    ("a.c", "", "a\nc a\u2029c", NO_MATCH),
    ("a.c", "", "a\tc", "a\tc"),
    ("a.c", "s", "a\nc", "a\nc"),
    ("b", "y", "ab", NO_MATCH),  # sticky: only at lastIndex 0
    ("a", "y", "ab", "a"),
    ("\\u{1F600}", "u", "x\U0001F600", "\U0001F600"),
    ("x", "d", "x", "x"),
    # ASCII classes and boundaries
    ("\\d+", "", "٣4", "4"),  # an Arabic-Indic digit is no \d in JavaScript
    ("\\w+", "", "café", "caf"),
    ("\\bfé", "", "café fé", "fé"),  # é is no word character: the boundary sits before f of "fé" only
    ("\\Bar", "", "bar ar", "ar"),
    ("a\\sb", "", "a\ufeffb", "a\ufeffb"),  # U+FEFF is JavaScript whitespace
    ("a\\sb", "", "a\x1cb", NO_MATCH),  # U+001C is Python whitespace only
    ("[\\W\\d]+", "", "ab-12c", "-12"),
    ("[^\\W]+", "", "--ab--", "ab"),
    ("[^\\D\\s]+", "", "ab 12", "12"),
    # named groups and references
    ("(?<year>\\d{4})-\\k<year>", "", "2024-2024", "2024-2024"),
    ("(?<q>['\"]).*?\\k<q>", "", "say \"hi\" 'x'", "\"hi\""),
    ("(a)|b\\1", "", "b", "b"),  # group 1 did not take part: \1 matches ""
    ("\\1(a)", "", "a", "a"),  # a forward reference matches ""
    ("(a\\1)", "", "a", "a"),  # so does a reference inside its own group
    ("(?<$x>a)\\k<$x>", "", "aa", "aa"),  # a name Python could not take
    # Annex B literals
    ("\\q", "", "q", "q"),
    ("a{,2}", "", "a{,2}", "a{,2}"),
    ("a{2}", "", "aaa", "aa"),
    ("x{", "", "x{", "x{"),
    ("}]", "", "}]", "}]"),
    ("[]a", "", "a", NO_MATCH),  # [] matches nothing
    ("[^]", "", "\n", "\n"),
    ("[]]", "", "]", NO_MATCH),  # [] then a literal "]": nothing can match
    ("\\8", "", "8", "8"),
    ("\\101", "", "A", "A"),  # octal
    ("\\0", "", "a\0", "\0"),
    ("\\cJ", "", "\n", "\n"),
    ("\\c", "", "\\c", "\\c"),
    ("\\x4", "", "x4", "x4"),
    ("\\u00e9", "", "é", "é"),
    ("\\ud83d\\ude00", "", "\U0001F600", "\U0001F600"),
    ("\\k", "", "k", "k"),  # without named groups \k is "k"
    ("\\A\\Z", "", "AZ", "AZ"),  # Python's anchors are plain letters in JavaScript
    ("[\\b]", "", "\b", "\b"),
    ("[a-c-e]+", "", "-eab", "-eab"),
    ("[\\w-]+", "", "a-b c", "a-b"),
    ("[[]", "", "[", "["),
    ("[&&a]+", "", "a&&", "a&&"),
    ("a??b", "", "ab", "ab"),
    ("a+?", "", "aaa", "a"),
    ("(?=a)*a", "", "a", "a"),  # Annex B: a lookahead may take a quantifier
    ("a|", "", "b", ""),
]


@pytest.mark.parametrize(("source", "flags", "text", "expected"), MATCHES)
def test_first_match(source, flags, text, expected):
    regex = compile_js(source, flags)
    assert isinstance(regex, JsRegex), regex
    found = regex.search(text)
    assert (found.group() if found else None) == expected


REFUSALS = [
    # (source, flags, kind)
    ("a", "gg", "syntax"),
    ("a", "x", "syntax"),
    ("a", "uv", "syntax"),
    ("(?P<n>a)", "", "syntax"),  # Python's spelling
    ("(?i)a", "", "syntax"),
    ("(?#note)a", "", "syntax"),
    ("(?>a)", "", "syntax"),
    ("a++", "", "syntax"),  # Python's possessive quantifier
    ("a{2}{3}", "", "syntax"),
    ("*a", "", "syntax"),
    ("\\b+", "", "syntax"),
    ("a{3,1}", "", "syntax"),
    ("(a", "", "syntax"),
    ("a)", "", "syntax"),
    ("[a", "", "syntax"),
    ("a\\", "", "syntax"),
    ("[z-a]", "", "syntax"),
    ("(?<n>a)(?<n>b)", "", "syntax"),
    ("(?<n>a)\\k<m>", "", "syntax"),
    ("\\q", "u", "syntax"),
    ("{", "u", "syntax"),
    ("\\1", "u", "syntax"),
    ("[\\w-z]", "u", "syntax"),
    ("(?<=a)*", "", "syntax"),
    ("\\p{L}", "u", "unsupported"),
    ("a", "v", "unsupported"),
]


@pytest.mark.parametrize(("source", "flags", "kind"), REFUSALS)
def test_refusals_are_typed_answers(source, flags, kind):
    answer = compile_js(source, flags)
    assert isinstance(answer, Uncompilable)
    assert (answer.kind, answer.source, answer.flags) == (kind, source, flags)
    assert answer.reason


def test_p_without_u_is_a_letter():
    regex = compile_js("\\p{L}", "")
    assert isinstance(regex, JsRegex) and regex.test("p{L}")


@pytest.mark.parametrize(("source", "flags", "text", "every"), [
    ("a", "", "aXa", ["a"]),  # without g, the first only
    ("a", "g", "aXa", ["a", "a"]),
    ("x*", "g", "ab", ["", "", ""]),  # an empty match moves the search on by one
    ("a*", "g", "baaac", ["", "aaa", "", ""]),
    ("a", "gy", "aaXa", ["a", "a"]),  # sticky: every match starts where the last ended
    ("^a", "gm", "a\na", ["a", "a"]),
])
def test_the_matches_a_replace_visits(source, flags, text, every):
    regex = compile_js(source, flags)
    assert isinstance(regex, JsRegex)
    assert [m.group() for m in regex.matches(text)] == every


def test_groups_by_number_and_name():
    regex = compile_js("(?<word>\\w+)(?:-(\\d+))?", "")
    assert isinstance(regex, JsRegex)
    found = regex.search("lamp")
    assert found is not None
    assert (regex.group(found, "word"), regex.group(found, 1), regex.group(found, 2)) == ("lamp", "lamp", None)
    assert regex.group(found, "missing") is None and regex.group(found, 7) is None
    named = compile_js("(?<$d>\\d)", "")
    assert isinstance(named, JsRegex)
    digit = named.search("a5")
    assert digit is not None and named.group(digit, "$d") == "5"


@pytest.mark.parametrize(("source", "flags", "text", "template", "expected"), [
    # String.prototype.replace with a template string
    ("(\\w+) (\\w+)", "", "tide pool", "$2 $1", "pool tide"),
    ("o", "g", "foo", "[$&]", "f[o][o]"),
    ("b", "", "abc", "$`|$'", "aa|cc"),
    ("b", "", "abc", "$$", "a$c"),
    ("(a)", "", "a", "$2$0$", "$2$0$"),  # no such group, $0 is no reference, a lone $ stays
    ("(a)(b)?", "", "a", "[$2]", "[]"),  # a group that did not take part
    ("(?<port>\\w+)", "", "bay", "<$<port>|$<none>>", "<bay|>"),
    ("(\\w)", "", "bay", "$<port>", "$<port>ay"),  # without named groups $<...> is text
    ("(a)", "", "a", "$10", "a0"),  # one group: $10 is $1 then "0"
])
def test_replace_templates(source, flags, text, template, expected):
    regex = compile_js(source, flags)
    assert isinstance(regex, JsRegex)
    assert regex.replace(text, template) == expected


@pytest.mark.parametrize(("find", "source", "flags"), [
    # SillyTavern's regexFromString (utils.js), which reads a regex script's find
    ("/(ruins|storm)/gi", "(ruins|storm)", "gi"),
    ("storm", "storm", ""),  # a plain find: a pattern without flags
    ("/a/b/i", "a/b", "i"),
    ("/storm/GI", "/storm/GI", ""),  # upper-case flags fail its flag check: the whole text is the pattern
    ("/storm/gg", "/storm/gg", ""),  # so does a flag given twice
    ("/storm", "/storm", ""),
    ("first\nsecond", "first", ""),  # its parser's .+ stops at the line break
])
def test_regex_from_string(find, source, flags):
    regex = regex_from_string(find)
    assert isinstance(regex, JsRegex)
    assert (regex.source, regex.flags) == (source, flags)


@pytest.mark.parametrize("find", ["", "/storm/x", "/(/g"])
def test_a_find_that_leaves_no_regex(find):
    # "" has no parts; x passes SillyTavern's flag check but not new RegExp; "(" does not compile
    assert isinstance(regex_from_string(find), Uncompilable)


def test_a_lookbehind_of_any_width_matches_as_in_javascript():
    # ECMAScript matches a lookbehind right to left: in /(?<=(\d+)(\d+))$/ on "1053" the second group is greedy
    # first, so it takes "053" and the first "1" (the proposal's own example)
    regex = compile_js("(?<=(\\d+)(\\d+))$")
    assert isinstance(regex, JsRegex)
    found = regex.search("1053")
    assert (found.start(), regex.group(found, 1), regex.group(found, 2)) == (4, "1", "053")
    price = compile_js("(?<=\\$\\d+(\\.\\d+)?) dollars")
    assert price.search("cost $10.53 dollars").start() == 11
    assert price.search("cost 10.53 dollars") is None
