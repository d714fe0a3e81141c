"""The one door through which the engine runs a JavaScript pattern (world info regex keys, regex scripts' finds):
each pattern is held to `PatternLimits`, so no key or script can hold a request.

* size: a pattern longer than `pattern_length` characters, or whose translation (`js_regex`) is longer than
  `translated_length`, is not compiled (compiling takes time in proportion to it);
* time: each pattern may spend `time_s` seconds matching over one request (`PatternRuns`, made per request), the
  `regex` package's timeout enforcing it inside a search; once spent, the pattern is skipped for the rest of it;
* output: a replacement that would make its text more than `output_length` characters longer is refused.

A pattern refused by a limit is skipped (a key then matches nothing, a script changes nothing) and reported once
per owner as an `ST_PATTERN_LIMIT` diagnostic naming the world info entry or regex script and the limit.
SillyTavern itself has no such limits: on text where it finishes, the preview gives the same answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from assembly.sillytavern.js_regex import JsRegex, OutputTooLarge, Uncompilable, compile_js

T = TypeVar("T")
LIMIT_CODE = "ST_PATTERN_LIMIT"


@dataclass(frozen=True)
class PatternLimits:
    """Defaults: a quarter second of matching per pattern and request (a real key or script takes well under a
    millisecond per message); 10,000 characters of pattern (the longest community key lists are a few hundred);
    a translation of 50,000 characters (about 0.2 s to compile); a replacement may add 1,000,000 characters to its
    text."""

    time_s: float = 0.25
    pattern_length: int = 10_000
    translated_length: int = 50_000
    output_length: int = 1_000_000


DEFAULT_LIMITS = PatternLimits()


def _too_long(source: str, flags: str, limits: PatternLimits) -> Uncompilable | None:
    if len(source) > limits.pattern_length:
        return Uncompilable(source, flags, "limit", f"{len(source)} characters, over the limit of "
                                                    f"{limits.pattern_length}")
    return None


def compile_limited(source: str, flags: str, limits: PatternLimits = DEFAULT_LIMITS) -> JsRegex | Uncompilable:
    """`new RegExp(source, flags)` held to the size limits (`kind="limit"` when refused for size)."""
    return _too_long(source, flags, limits) or compile_js(source, flags, limits.translated_length)


def find_limited(find: str, limits: PatternLimits = DEFAULT_LIMITS) -> JsRegex | Uncompilable:
    """A regex script's find read as `regexFromString` does, held to the size limits."""
    return _too_long(find, "", limits) or regex_from_string(find, limits.translated_length)


@dataclass
class PatternRuns:
    """One request's pattern runs: the time each pattern has spent, and the patterns refused (one diagnostic per
    owner and pattern). Made fresh per request; never shared between requests."""

    limits: PatternLimits = DEFAULT_LIMITS
    spent: dict[str, float] = field(default_factory=dict)
    refusals: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def refuse(self, owner: str, source: str, limit: str, reason: str) -> None:
        self.refusals.setdefault((owner, source), {
            "code": LIMIT_CODE, "owner": owner, "pattern": source[:200], "limit": limit, "reason": reason})

    def refused(self, owner: str, source: str) -> bool:
        return (owner, source) in self.refusals

    def run(self, owner: str, regex: JsRegex, work: Callable[[float], T]) -> T | None:
        """`work(deadline)` within this pattern's time left; None (and a diagnostic) when the time runs out or the
        output is too large, or when this owner's pattern was refused before in this request."""
        source = regex.source
        if self.refused(owner, source):
            return None
        spent = self.spent.get(source, 0.0)
        if spent >= self.limits.time_s:
            self.refuse(owner, source, "time", f"matching took over {self.limits.time_s} s in this request")
            return None
        started = time.monotonic()
        try:
            return work(started + max(self.limits.time_s - spent, 0.0))
        except TimeoutError:
            self.refuse(owner, source, "time", f"matching took over {self.limits.time_s} s in this request")
        except OutputTooLarge:
            self.refuse(owner, source, "output", f"the replacement would add over {self.limits.output_length} "
                                                 "characters")
        finally:
            self.spent[source] = spent + time.monotonic() - started
        return None

    def diagnostics(self) -> list[dict[str, Any]]:
        return list(self.refusals.values())

    def notes(self) -> tuple[str, ...]:
        return tuple(f"{LIMIT_CODE}: {d['owner']}: pattern {d['pattern']!r} skipped ({d['limit']} limit: "
                     f"{d['reason']})" for d in self.refusals.values())


def regex_from_string(text: str, max_length: int | None = None) -> JsRegex | Uncompilable:
    """SillyTavern's `regexFromString` (utils.js), which reads a regex script's find: "/pattern/flags" is the
    pattern with those flags, other text a pattern without flags (only up to a line break: its parser's `.+`
    stops there). Flags outside gmixXsuUAJ or given twice make the whole text the pattern; flags JavaScript does
    not know (x X U A J) leave no regex."""
    parts = _parser(_FIND_PARTS, "i").search(text)
    if parts is None:
        return Uncompilable(text, "", "syntax", "an empty find")
    pattern, flags = parts.group(2), parts.group(3)
    if flags and not _parser(_FIND_FLAGS).test(flags):
        return compile_js(text, "", max_length)
    return compile_js(pattern, flags, max_length)


# regexFromString's own parsers, read as the JavaScript they are; compiled at first use (kept in PATTERNS like any
# pattern), so that a process whose requests carry no regex script never loads the regex package
_FIND_PARTS = "(\\/?)(.+)\\1([a-z]*)"
_FIND_FLAGS = "^(?!.*?(.).*?\\1)[gmixXsuUAJ]+$"


def _parser(source: str, flags: str = "") -> JsRegex:
    regex = compile_js(source, flags)
    if not isinstance(regex, JsRegex):
        raise RuntimeError(f"js_regex cannot read its own parser /{source}/{flags}: {regex.reason}")
    return regex

