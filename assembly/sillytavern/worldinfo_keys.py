"""World info keys: how SillyTavern 1.18 finds an entry's key in a scan buffer (sillytavern.md §7.3).

A key written `/pattern/flags` is a JavaScript regular expression, translated here to Python's; any other key is a
substring, lower-cased unless case-sensitive, and with whole words a single-word key must sit between non-word
characters (JavaScript's ASCII `\\w`, so a CJK or accented neighbour counts as a boundary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_REGEX_KEY = re.compile(r"\A/([\s\S]+?)/([gimsuy]*)\Z")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_JS_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}


@dataclass(frozen=True)
class RegexKey:
    pattern: re.Pattern[str]
    sticky: bool  # JavaScript's `y`: the match must start at the beginning of the buffer


@lru_cache(maxsize=4096)
def parse_regex_key(key: str) -> RegexKey | None:
    """A key written `/pattern/flags` -> its compiled regex; None for a plain key. As in SillyTavern, an unescaped
    "/" inside the pattern or a pattern that does not compile makes it a plain key."""
    found = _REGEX_KEY.match(key)
    if not found:
        return None
    pattern, flags = found.groups()
    if _UNESCAPED_SLASH.search(pattern):
        return None
    # JavaScript spells named groups (?<name>...) and \k<name>; Python wants (?P<name>...) and (?P=name).
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    pattern = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", pattern)
    compiled_flags = 0
    for flag in flags:
        compiled_flags |= _JS_FLAGS.get(flag, 0)
    try:
        return RegexKey(re.compile(pattern, compiled_flags), "y" in flags)
    except (re.error, OverflowError, RecursionError):
        return None


_JS_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _find_whole_word(haystack: str, needle: str) -> int | None:
    r"""SillyTavern's `(?:^|\W)(key)(?:$|\W)`: the first occurrence with a non-word character (or the buffer's
    edge) on both sides. JavaScript's \W (no u flag) is every character but [A-Za-z0-9_]."""
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or haystack[start - 1] not in _JS_WORD_CHARACTERS) and (
                end == len(haystack) or haystack[end] not in _JS_WORD_CHARACTERS):
            return start
        start = haystack.find(needle, start + 1)
    return None


def find_key(haystack: str, key: str, *, case_sensitive: bool, match_whole_words: bool) -> int | None:
    """Offset of the first match of `key` in `haystack`, or None. `key` is already macro-expanded and trimmed.
    Without case sensitivity the caller passes the lower-cased haystack (offsets are those of that text)."""
    regex = parse_regex_key(key)
    if regex is not None:
        found = regex.pattern.match(haystack) if regex.sticky else regex.pattern.search(haystack)
        return found.start() if found else None
    needle = key if case_sensitive else key.lower()
    # A key of several words is a plain substring even with whole words (SillyTavern splits it on whitespace).
    if match_whole_words and len(needle.split()) <= 1:
        return _find_whole_word(haystack, needle)
    offset = haystack.find(needle)
    return offset if offset >= 0 else None


def is_untranslatable_regex_key(key: str) -> bool:
    """A key written as a regex (no unescaped "/" inside) that Python cannot compile: matched as plain text, and
    named in the activation's notes. `key` is trimmed."""
    written = _REGEX_KEY.match(key)
    return bool(written) and not _UNESCAPED_SLASH.search(written.group(1)) and parse_regex_key(key) is None
