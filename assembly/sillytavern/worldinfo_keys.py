"""World info keys: how SillyTavern 1.18 finds an entry's key in a scan buffer (sillytavern.md §7.3).

A key written `/pattern/flags` is a JavaScript regular expression, run through `js_regex`; any other key is a
substring, lower-cased unless case-sensitive, and with whole words a single-word key must sit between non-word
characters (JavaScript's ASCII `\\w`, so a CJK or accented neighbour counts as a boundary). Regex keys run
through `pattern_matcher`: one over its size or time limit matches nothing, reported to the request's runs.
"""

from __future__ import annotations

import re

from assembly.sillytavern.js_regex import JsRegex, Uncompilable
from assembly.sillytavern.pattern_matcher import DEFAULT_LIMITS, PatternLimits, PatternRuns, compile_limited

_REGEX_KEY = re.compile(r"\A/([\s\S]+?)/([gimsuy]*)\Z")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")


def split_regex_key(key: str) -> tuple[str, str] | None:
    """SillyTavern's `parseRegexFromString` up to `new RegExp`: a key written `/pattern/flags` (flags among
    gimsuy) with no unescaped "/" inside -> (pattern, flags); None for a plain key."""
    found = _REGEX_KEY.match(key)
    if not found or _UNESCAPED_SLASH.search(found.group(1)):
        return None
    return found.group(1), found.group(2)


def compile_regex_key(key: str, limits: PatternLimits = DEFAULT_LIMITS) -> JsRegex | Uncompilable | None:
    """A key written as a regex -> the regex, or why it cannot run (`kind="limit"`: over the size limits); None for
    a plain key."""
    written = split_regex_key(key)
    return None if written is None else compile_limited(*written, limits)


def parse_regex_key(key: str) -> JsRegex | None:
    """The regex of a key, or None. As in SillyTavern, a key whose regex does not compile is a plain key."""
    regex = compile_regex_key(key)
    return regex if isinstance(regex, JsRegex) else None


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


def find_key(haystack: str, key: str, *, case_sensitive: bool, match_whole_words: bool,
             runs: PatternRuns | None = None, owner: str = "a world info entry") -> int | None:
    """Offset of the first match of `key` in `haystack`, or None. `key` is already macro-expanded and trimmed.
    Without case sensitivity the caller passes the lower-cased haystack (offsets are those of that text). A regex
    key runs within `runs` (a fresh one by default): over a limit it matches nothing, reported for `owner`."""
    runs = runs if runs is not None else PatternRuns()
    regex = compile_regex_key(key, runs.limits)
    if isinstance(regex, Uncompilable) and regex.kind == "limit":
        runs.refuse(owner, regex.source, "size", regex.reason)
        return None
    if isinstance(regex, JsRegex):
        # a fresh RegExp's test(): lastIndex 0, so `y` anchors at the start
        found = runs.run(owner, regex, lambda deadline: regex.search(haystack, deadline=deadline))
        return found.start() if found else None
    needle = key if case_sensitive else key.lower()
    # A key of several words is a plain substring even with whole words (SillyTavern splits it on whitespace).
    if match_whole_words and len(needle.split()) <= 1:
        return _find_whole_word(haystack, needle)
    offset = haystack.find(needle)
    return offset if offset >= 0 else None


def regex_key_refusal(key: str) -> Uncompilable | None:
    """Why a key written as a regex is matched as text instead: JavaScript rejects it too (`syntax`, SillyTavern
    does the same), or only the translation to Python fails (`unsupported`). None for regex and plain keys, and
    for a key over the size limits (the scan reports those). `key` is trimmed."""
    regex = compile_regex_key(key)
    return regex if isinstance(regex, Uncompilable) and regex.kind != "limit" else None
