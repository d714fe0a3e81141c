"""JavaScript regular expressions run with the `regex` package (Python's syntax plus variable-width lookbehind and
a timeout): SillyTavern runs its regex keys and scripts with the browser's `RegExp`, so each pattern is translated.

`compile_js(source, flags, max_length)` answers a `JsRegex` or an `Uncompilable` (`kind`: `syntax` when JavaScript
rejects it too, `unsupported` when only the translation fails: `\\p{...}`, the `v` flag; `limit` when the
translation is longer than `max_length`), never an exception. Runs take a `deadline` (`time.monotonic()`): past it
TimeoutError; `replace_each` raises OutputTooLarge past `max_output`. The limits live in `pattern_matcher`.

A `JsRegex` runs as a fresh JavaScript regex would: `search` / `test` (`y` anchored), `matches` (what
String.prototype.replace visits), `replace` and `substitute` (`$$`, `$&`, `` $` ``, `$'`, `$1`, `$<name>`), `group`
(None for undefined). A script's find is read as SillyTavern's `regexFromString` does in `pattern_matcher`.

The translation (JavaScript without `u` follows ECMAScript's Annex B, as browsers do):

* flags `d g i m s u y`; `g` and `y` are kept (`global`, `sticky`); `.` stops at every line terminator unless `s`;
  `^` and `$` are input edges, or line edges under `m`, never "before a final newline" as Python's `$` is;
* `\\d \\w \\b` are ASCII, `\\s` is JavaScript's whitespace set;
* named groups and `\\k<name>`; a reference to a group that has not captured matches the empty string;
* Annex B literals: `\\q` is "q", a lone `{`, `}` or `]` is itself, `\\8` is "8", `\\101` is octal, `\\c` without a
  letter is "\\c", `[]` matches nothing and `[^]` anything; `a{,3}` is literal text;
* Python-only syntax is refused as JavaScript refuses it: `(?P<n>`, `(?i)`, `(?#...)`, `(?>...)`, `a++`.

Known to differ still: without `u` JavaScript never case-folds a non-ASCII letter to an ASCII one ("ſ" and `/s/i`),
captures in a repeated group are not reset per iteration, and a character outside the BMP is two code units there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from assembly.caches import PATTERNS
from assembly.errors import CodedError

JS_FLAGS = "dgimsuyv"
LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"
_WHITESPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_WORD = "A-Za-z0-9_"
_DIGIT = "0-9"
_CLASS_ESCAPES = {"d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True),
                  "s": (_WHITESPACE, False), "S": (_WHITESPACE, True)}
_SYNTAX_CHARACTERS = set("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_QUANTIFIER = re.compile(r"\{(\d+)(,(\d*))?\}")
# a group name's pattern, compiled by the first named group translated (re keeps it): its ranges up to U+10FFFF cost a
# fresh process about 5 ms at import
_GROUP_NAME = r"[A-Za-z_$\u00aa-\U0010ffff][\w$\u200c\u200d\u00aa-\U0010ffff]*"


def _group_name_at(text: str, at: int) -> re.Match[str] | None:
    return re.compile(_GROUP_NAME).match(text, at)  # re keeps the compiled pattern after the first call
_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"


@dataclass(frozen=True)
class Uncompilable:
    """A pattern the preview cannot run: `syntax` when JavaScript rejects it too, `unsupported` when only the
    translation fails."""

    source: str
    flags: str
    kind: Literal["syntax", "unsupported", "limit"]
    reason: str


class OutputTooLarge(CodedError):
    """A replacement would produce more than the allowed number of characters."""

    def __init__(self, limit: int) -> None:
        super().__init__("ST_PATTERN_LIMIT", f"the replacement output exceeds {limit} characters",
                         detail={"limit": limit})
        self.limit = limit


def _timeout(deadline: float | None) -> float | None:
    # the regex package's timeout is relative; a spent deadline still needs a positive one to raise at once
    return None if deadline is None else max(deadline - time.monotonic(), 1e-6)


@dataclass(frozen=True)
class JsRegex:
    source: str
    flags: str
    pattern: Any  # a compiled pattern of the `regex` package
    group_names: dict[str, int] = field(default_factory=dict)  # JavaScript group name -> group number

    @property
    def is_global(self) -> bool:
        return "g" in self.flags

    @property
    def sticky(self) -> bool:
        return "y" in self.flags

    def search(self, text: str, start: int = 0, *, deadline: float | None = None) -> Any:
        """The first match from `start` (RegExp.exec with lastIndex = start); sticky: only one starting there."""
        run = self.pattern.match if self.sticky else self.pattern.search
        return run(text, start, timeout=_timeout(deadline))

    def test(self, text: str, *, deadline: float | None = None) -> bool:
        """RegExp.prototype.test on a fresh regex (lastIndex 0), as SillyTavern's world info keys run."""
        return self.search(text, deadline=deadline) is not None

    def matches(self, text: str, *, deadline: float | None = None) -> Iterator[Any]:
        """The matches String.prototype.replace visits, one at a time: the first one, or with `g` every one (after
        an empty match the search moves on by one character; with `y` each must start where the last ended)."""
        position = 0
        while position <= len(text):
            match = self.search(text, position, deadline=deadline)
            if match is None:
                return
            yield match
            if not self.is_global:
                return
            position = match.end() if match.end() > match.start() else match.end() + 1

    def replace(self, text: str, template: str, *, deadline: float | None = None,
                max_output: int | None = None) -> str:
        """String.prototype.replace(regex, template): the first match, or with `g` every one, replaced by
        `substitute(template, ...)`."""
        return self.replace_each(text, lambda match: self.substitute(template, match), deadline=deadline,
                                 max_output=max_output)

    def replace_each(self, text: str, replacement: Callable[[Any], str], *, deadline: float | None = None,
                     max_output: int | None = None) -> str:
        """String.prototype.replace(regex, fn): each match `replace` visits becomes `replacement(match)`; more
        than `max_output` characters raise OutputTooLarge (checked as the output grows)."""
        out, last, size = [], 0, 0
        for match in self.matches(text, deadline=deadline):
            piece = replacement(match)
            out += [text[last:match.start()], piece]
            size += match.start() - last + len(piece)
            if max_output is not None and size + len(text) - match.end() > max_output:
                raise OutputTooLarge(max_output)
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the replacements ran past the deadline")
            last = match.end()
        return "".join(out) + text[last:]

    def substitute(self, template: str, match: Any) -> str:
        """JavaScript's GetSubstitution: `$$` is "$", `$&` the match, `` $` `` and `$'` the text before and after,
        `$1`..`$99` a group (two digits when that group exists, else one), `$<name>` a named group (only when the
        regex has named groups); a group that did not take part gives "", anything else stays as written."""
        text, groups = match.string, self.pattern.groups
        out, i = [], 0
        while i < len(template):
            char = template[i]
            following = template[i + 1] if i + 1 < len(template) else ""
            if char != "$" or not following:
                out.append(char)
                i += 1
                continue
            if following == "$":
                out.append("$")
            elif following == "&":
                out.append(match.group())
            elif following == "`":
                out.append(text[:match.start()])
            elif following == "'":
                out.append(text[match.end():])
            elif following.isascii() and following.isdigit():
                two = template[i + 1:i + 3]
                if len(two) == 2 and two.isascii() and two.isdigit() and 1 <= int(two) <= groups:
                    out.append(match.group(int(two)) or "")
                    i += 3
                    continue
                if 1 <= int(following) <= groups:
                    out.append(match.group(int(following)) or "")
                else:
                    out.append("$" + following)
            elif following == "<" and self.group_names:
                end = template.find(">", i + 2)
                if end < 0:
                    out.append("$<")
                else:
                    out.append(self.group(match, template[i + 2:end]) or "")
                    i = end + 1
                    continue
            else:
                out.append("$" + following)
            i += 2
        return "".join(out)

    def group(self, match: Any, reference: int | str) -> str | None:
        """A group's text by number or JavaScript name; None when the group did not take part or does not exist
        (JavaScript's undefined)."""
        number = self.group_names.get(reference) if isinstance(reference, str) else reference
        if number is None or not 0 <= number <= self.pattern.groups:
            return None
        return match.group(number)


class _Refused(CodedError):
    """Why the translator stops; `compile_js` turns it into an `Uncompilable` answer, so it never leaves this module."""

    def __init__(self, kind: Literal["syntax", "unsupported"], reason: str) -> None:
        super().__init__("ST_REGEX_FIND_INVALID", reason, detail={"kind": kind})
        self.kind = kind
        self.reason = reason


def _flags_problem(flags: str) -> str | None:
    for flag in flags:
        if flag not in JS_FLAGS:
            return f"invalid flag {flag!r}"
    if len(set(flags)) != len(flags):
        return "a flag is given twice"
    if "u" in flags and "v" in flags:
        return "the flags u and v exclude each other"
    return None


def compile_js(source: str, flags: str = "", max_length: int | None = None) -> JsRegex | Uncompilable:
    """`new RegExp(source, flags)` as Python: a `JsRegex`, or why it cannot be (see the module doc).
    `max_length`: the longest translation compiled (compiling takes time in proportion to it). The answer is kept
    by its three arguments (assembly.caches.PATTERNS): a chat's keys and scripts are compiled once per process."""
    return PATTERNS.computed((source, flags, max_length), lambda: _compiled(source, flags, max_length))


def _compiled(source: str, flags: str, max_length: int | None) -> JsRegex | Uncompilable:
    problem = _flags_problem(flags)
    if problem:
        return Uncompilable(source, flags, "syntax", problem)
    if "v" in flags:
        return Uncompilable(source, flags, "unsupported", "the v flag (unicode sets) is not translated")
    try:
        translated, names = _Translator(source, flags).translate()
    except _Refused as refused:
        return Uncompilable(source, flags, refused.kind, refused.reason)
    if max_length is not None and len(translated) > max_length:
        return Uncompilable(source, flags, "limit", f"its translation has {len(translated)} characters, over the "
                                                    f"limit of {max_length}")
    import regex as engine  # the regex package is loaded by the first pattern compiled, not by every request

    options = engine.VERSION0 | (engine.IGNORECASE if "i" in flags else 0)
    if "s" in flags:
        options |= engine.DOTALL
    try:
        compiled = engine.compile(translated, options)
    except (engine.error, OverflowError, RecursionError) as error:
        return Uncompilable(source, flags, "unsupported", f"the regex package refuses the translation: {error}")
    return JsRegex(source, flags, compiled, names)


def _literal(char: str) -> str:
    if char.isalnum() or char == "_":
        return char
    if char.isprintable() and char.isascii():
        return "\\" + char
    return f"\\U{ord(char):08x}" if ord(char) > 0xFFFF else f"\\u{ord(char):04x}"


class _Translator:
    """One pass over a JavaScript pattern, writing the Python pattern (and counting groups first)."""

    def __init__(self, source: str, flags: str) -> None:
        self.source = source
        self.unicode = "u" in flags
        self.multiline = "m" in flags
        self.dotall = "s" in flags
        self.i = 0
        self.names: dict[str, int] = {}
        self.total_groups = self._count_groups()
        self.named = bool(self.names) or self.unicode  # \k is a group reference, not "k"
        self.closed: set[int] = set()

    def fail(self, reason: str) -> _Refused:
        return _Refused("syntax", f"{reason} (at {self.i})")

    def _count_groups(self) -> int:
        s, i, count, in_class = self.source, 0, 0, False
        while i < len(s):
            char = s[i]
            if char == "\\":
                i += 2
                continue
            if in_class:
                in_class = char != "]"
            elif char == "[":
                in_class = True
                if s.startswith("]", i + 1) or s.startswith("^]", i + 1):
                    i += 2 if s[i + 1] == "]" else 3  # [] and [^] are whole classes
                    in_class = False
                    continue
            elif char == "(":
                if not s.startswith("?", i + 1):
                    count += 1
                elif s.startswith("?<", i + 1) and not s.startswith(("?<=", "?<!"), i + 1):
                    count += 1
                    name = _group_name_at(s, i + 3)
                    if name is None or not s.startswith(">", name.end()):
                        self.i = i
                        raise self.fail("invalid group name")
                    if name.group() in self.names:
                        self.i = i
                        raise self.fail(f"duplicate group name {name.group()!r}")
                    self.names[name.group()] = count
            i += 1
        return count

    def translate(self) -> tuple[str, dict[str, int]]:
        out: list[str] = []
        stack: list[tuple[str, int | None]] = []  # (kind, group number)
        group_number = 0
        quantifiable = False  # the previous token can take a quantifier
        after_quantifier = False
        s = self.source
        while self.i < len(s):
            char = s[self.i]
            if char in "*+?" or (char == "{" and _QUANTIFIER.match(s, self.i)):
                out.append(self.quantifier(char, quantifiable, after_quantifier))
                quantifiable, after_quantifier = False, not (after_quantifier and char == "?")
                continue
            after_quantifier = False
            quantifiable = True
            if char == "\\":
                piece, quantifiable = self.escape()
                out.append(piece)
                continue
            if char == "[":
                out.append(self.character_class())
                continue
            self.i += 1
            if char == "(":
                kind, number, text = self.group_opening(group_number)
                group_number = number or group_number
                stack.append((kind, number))
                out.append(text)
                quantifiable = False
                continue
            if char == ")":
                if not stack:
                    raise self.fail("unmatched ')'")
                kind, number = stack.pop()
                if number is not None:
                    self.closed.add(number)
                out.append(")")
                # Annex B lets a lookahead take a quantifier; a lookbehind never can
                quantifiable = kind in ("group", "capture") or (kind == "lookahead" and not self.unicode)
                continue
            if char == "|":
                out.append("|")
                quantifiable = False
            elif char == ".":
                out.append("." if self.dotall else f"[^{LINE_TERMINATORS}]")
            elif char == "^":
                out.append(f"(?<![^{LINE_TERMINATORS}])" if self.multiline else "(?<![\\s\\S])")
                quantifiable = False
            elif char == "$":
                out.append(f"(?![^{LINE_TERMINATORS}])" if self.multiline else "(?![\\s\\S])")
                quantifiable = False
            elif char in "{}]":
                if self.unicode:
                    raise self.fail(f"lone {char!r}")
                out.append(_literal(char))
            else:
                out.append(_literal(char))
        if stack:
            raise self.fail("unterminated group")
        return "".join(out), dict(self.names)

    def quantifier(self, char: str, quantifiable: bool, after_quantifier: bool) -> str:
        """`*`, `+`, `?` or `{n,m}` at `self.i`; a `?` right after a quantifier makes it lazy."""
        s = self.source
        if after_quantifier and char == "?":
            self.i += 1
            return "?"  # lazy
        if not quantifiable:
            raise self.fail("nothing to repeat")
        if char != "{":
            self.i += 1
            return char
        found = _QUANTIFIER.match(s, self.i)
        assert found is not None
        low, high = int(found.group(1)), found.group(3)
        if high and int(high) < low:
            raise self.fail("numbers out of order in a {} quantifier")
        self.i = found.end()
        return found.group()

    def group_opening(self, groups: int) -> tuple[str, int | None, str]:
        """The group opened just before `self.i` (`groups`: the capturing groups opened so far): its kind, its
        number when it captures, and its Python text."""
        s = self.source
        if not s.startswith("?", self.i):
            return "capture", groups + 1, "("
        rest = s[self.i + 1:self.i + 3]
        if rest.startswith(":"):
            self.i += 2
            return "group", None, "(?:"
        if rest[:1] in ("=", "!"):
            self.i += 2
            return "lookahead", None, f"(?{rest[0]}"
        if rest in ("<=", "<!"):
            self.i += 3
            return "lookbehind", None, f"(?{rest}"
        if not rest.startswith("<"):
            raise self.fail("invalid group")
        name = _group_name_at(s, self.i + 2)
        assert name is not None  # checked by the pre-scan
        number = groups + 1
        python_name = name.group() if name.group().isidentifier() else f"js_group_{number}"
        self.i = name.end() + 1
        return "capture", number, f"(?P<{python_name}>"

    def reference(self, number: int) -> str:
        # JavaScript: a group that has not captured matches "". Only a closed group can have captured.
        return f"(?({number})\\{number})" if number in self.closed else "(?:)"

    def escape(self) -> tuple[str, bool]:
        """The escape at self.i (outside a class) -> (Python text, can take a quantifier)."""
        s = self.source
        if self.i + 1 >= len(s):
            raise self.fail("\\ at the end of the pattern")
        char = s[self.i + 1]
        self.i += 2
        if char in _CLASS_ESCAPES:
            chars, negated = _CLASS_ESCAPES[char]
            return f"[{'^' if negated else ''}{chars}]", True
        if char == "b":
            return _WORD_BOUNDARY, False
        if char == "B":
            return _NOT_WORD_BOUNDARY, False
        if char in "123456789":
            digits = re.match(r"[0-9]+", s[self.i - 1:]).group()  # type: ignore[union-attr]
            if int(digits) <= self.total_groups:
                self.i += len(digits) - 1
                return self.reference(int(digits)), True
            if self.unicode:
                raise self.fail("invalid group reference")
            if char in "89":
                return char, True
            self.i -= 1
            return _literal(self.legacy_octal()), True
        if char == "k" and self.named:
            name = _group_name_at(s, self.i + 1) if s.startswith("<", self.i) else None
            if name is None or not s.startswith(">", name.end()) or name.group() not in self.names:
                raise self.fail("invalid named reference")
            self.i = name.end() + 1
            return self.reference(self.names[name.group()]), True
        if char in ("p", "P") and self.unicode:
            raise _Refused("unsupported", "Unicode property escapes (\\p{...}) are not translated")
        return _literal(self.character_escape(char)), True

    def legacy_octal(self) -> str:
        found = re.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", self.source[self.i:])
        assert found is not None
        self.i += len(found.group())
        return chr(int(found.group(), 8))

    def character_escape(self, char: str) -> str:
        """A character escape whose letter is `char` (self.i just past it) -> the character it stands for."""
        s = self.source
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "0" and not (self.i < len(s) and s[self.i] in "0123456789"):
            return "\0"
        if char == "0":
            if self.unicode:
                raise self.fail("invalid decimal escape")
            self.i -= 1
            return self.legacy_octal()
        if char == "c":
            if self.i < len(s) and s[self.i].isascii() and s[self.i].isalpha():
                self.i += 1
                return chr(ord(s[self.i - 1]) % 32)
            if self.unicode:
                raise self.fail("invalid unicode escape")
            self.i -= 1  # "\c" stands for itself: a backslash, then the c read next
            return "\\"
        if char == "x":
            found = re.match(r"[0-9A-Fa-f]{2}", s[self.i:])
            if found:
                self.i += 2
                return chr(int(found.group(), 16))
        elif char == "u":
            code = self.unicode_escape()
            if code is not None:
                return code
        if self.unicode and char not in _SYNTAX_CHARACTERS and char != "-":
            raise self.fail(f"invalid escape \\{char}")
        return char  # Annex B: an identity escape

    def unicode_escape(self) -> str | None:
        s = self.source
        if self.unicode and s.startswith("{", self.i):
            found = re.match(r"\{([0-9A-Fa-f]+)\}", s[self.i:])
            if not found or int(found.group(1), 16) > 0x10FFFF:
                raise self.fail("invalid unicode escape")
            self.i += len(found.group())
            return chr(int(found.group(1), 16))
        found = re.match(r"[0-9A-Fa-f]{4}", s[self.i:])
        if not found:
            return None
        self.i += 4
        code = int(found.group(), 16)
        pair = re.match(r"\\u(d[c-f][0-9a-f]{2})", s[self.i:], re.IGNORECASE)
        if 0xD800 <= code <= 0xDBFF and pair:  # a surrogate pair is one character to Python
            self.i += 6
            return chr(0x10000 + ((code - 0xD800) << 10) + (int(pair.group(1), 16) - 0xDC00))
        return chr(code)

    def character_class(self) -> str:
        """The class at self.i ("[") -> Python text."""
        s = self.source
        self.i += 1
        negated = s.startswith("^", self.i)
        if negated:
            self.i += 1
        items: list[str] = []  # Python class items
        negatives: list[str] = []  # the sets of \D \W \S met inside the class
        while True:
            if self.i >= len(s):
                raise self.fail("unterminated character class")
            if s[self.i] == "]":
                self.i += 1
                break
            low = self.class_atom()
            if s.startswith("-", self.i) and self.i + 1 < len(s) and s[self.i + 1] != "]":
                self.i += 1
                high = self.class_atom()
                if isinstance(low, tuple) or isinstance(high, tuple):
                    if self.unicode:
                        raise self.fail("a class escape cannot bound a range")
                    for atom in (low, "-", high):
                        self.add_atom(atom, items, negatives)
                    continue
                if ord(low) > ord(high):
                    raise self.fail("range out of order in character class")
                items.append(f"{_literal(low)}-{_literal(high)}")
                continue
            self.add_atom(low, items, negatives)
        body = "".join(items)
        if not negatives:
            if not body:
                return "[\\s\\S]" if negated else "(?!)"
            return f"[{'^' if negated else ''}{body}]"
        alternatives = ([f"[{body}]"] if body else []) + [f"[^{chars}]" for chars in negatives]
        either = "(?:" + "|".join(alternatives) + ")"
        return f"(?:(?!{either})[\\s\\S])" if negated else either

    @staticmethod
    def add_atom(atom: str | tuple[str, bool], items: list[str], negatives: list[str]) -> None:
        if isinstance(atom, tuple):
            chars, negated = atom
            (negatives if negated else items).append(chars)
        else:
            items.append(_literal(atom))

    def class_atom(self) -> str | tuple[str, bool]:
        """One class member: a character, or the (characters, negated) of a class escape."""
        s = self.source
        char = s[self.i]
        if char != "\\":
            self.i += 1
            return char
        if self.i + 1 >= len(s):
            raise self.fail("\\ at the end of the pattern")
        char = s[self.i + 1]
        self.i += 2
        if char in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[char]
        if char == "b":
            return "\b"
        if char == "-":
            return "-"
        if char in "123456789":
            if self.unicode:
                raise self.fail("invalid class escape")
            if char in "89":
                return char
            self.i -= 1
            return self.legacy_octal()
        if char == "c" and not self.unicode and self.i < len(s) and (s[self.i] in "0123456789_"):
            self.i += 1
            return chr(ord(s[self.i - 1]) % 32)  # Annex B: \c0 .. \c9 and \c_ inside a class
        if char in ("p", "P") and self.unicode:
            raise _Refused("unsupported", "Unicode property escapes (\\p{...}) are not translated")
        if char == "k" and self.named:
            raise self.fail("invalid escape \\k in a class")
        return self.character_escape(char)
