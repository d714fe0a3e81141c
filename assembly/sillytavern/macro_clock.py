"""SillyTavern's time and date macros, read from the request's clock (`generation.now`), for both macro engines.

The engine never reads the real clock: a request that gives no `generation.now` leaves these macros as written
(UNSUPPORTED_MACRO, as before). With a clock, each macro is what SillyTavern 1.18 makes of `moment()` (the
browser's local time: here the moment `generation.now` names, in its own UTC offset), en locale:

- `{{time}}` 'LT' ("3:05 PM"), `{{date}}` 'LL' ("December 6, 2026"), `{{weekday}}` 'dddd' ("Sunday"),
  `{{isotime}}` 'HH:mm', `{{isodate}}` 'YYYY-MM-DD';
- `{{datetimeformat <format>}}` `moment().format(format)` (an empty format: moment's default
  'YYYY-MM-DDTHH:mm:ssZ');
- `{{time_UTC+N}}` / `{{time_UTC-N}}` `moment().utc().utcOffset(N).format('LT')` (moment reads |N| < 16 as hours,
  anything else as minutes); Macros 2.0 also reads `{{time::UTC+N}}` and rewrites the legacy spelling to it;
- `{{idle_duration}}` (Macros 2.0: `{{idleDuration}}` too) `getTimeSinceLastMessage()`: newest first, skipping
  system messages, the first user message after the newest message; moment's `duration(now - its send_date)
  .humanize()` ("2 hours") when it has a send date, else "just now"; an unreadable send date "Invalid date". It is
  worked out once from the request's chat (history and input), the chat as Generate() sees it: the typed message's
  own macros, which SillyTavern runs before that message joins the chat, read the same value.

Where these come from: the reference material (../shared/reference/) is silent on these macros (the st-macros
oracle leaves them out as host-dependent), so the rules here are written from moment.js's documented behaviour
(`format` tokens, `[escaped text]`, `\\` escapes, the en locale's long date formats and ordinals, `humanize`
thresholds) and SillyTavern 1.18's macro definitions as its source gives them.

`format` supports moment's tokens M Mo MM MMM MMMM, Y YY YYYY YYYYY YYYYYY, D Do DD DDD DDDo DDDD, d do dd ddd
dddd e E, Q Qo, W Wo WW GG GGGG GGGGG (ISO weeks), H HH h hh k kk hmm hmmss Hmm Hmmss, a A, m mm s ss, S to
SSSSSSSSS, Z ZZ, z zz (empty: a local moment has no zone name), X x, the en long formats LT LTS L LL LLL LLLL l ll
lll llll, `[text]` and `\\x`. A format with one of moment's other tokens (locale weeks w ww gg..., eras N y) is not
modelled: the macro stays as written. A message's send date is its `send_date` (or, for a message imported from a
SillyTavern chat, `source.line.send_date`): an ISO 8601 date, epoch milliseconds, or SillyTavern's own
"2024-7-12@01h31m37s" / "June 19, 2023 2:20pm" spellings (the ones without an offset in the clock's offset).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from assembly.sillytavern.relative_time import humanize

_I = re.IGNORECASE
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_LONG_FORMATS = {"LTS": "h:mm:ss A", "LT": "h:mm A", "L": "MM/DD/YYYY", "LL": "MMMM D, YYYY",
                 "LLL": "MMMM D, YYYY h:mm A", "LLLL": "dddd, MMMM D, YYYY h:mm A", "l": "M/D/YYYY",
                 "ll": "MMM D, YYYY", "lll": "MMM D, YYYY h:mm A", "llll": "ddd, MMM D, YYYY h:mm A"}
_DEFAULT_FORMAT = "YYYY-MM-DDTHH:mm:ssZ"  # moment's defaultFormat, for format('')
# moment's localFormattingTokens and formattingTokens (the `.` alternative: any other character)
_LOCAL_TOKENS = re.compile(r"(\[[^\[]*\])|(\\)?(LTS|LT|LL?L?L?|l{1,4})")
_TOKENS = re.compile(r"(\[[^\[]*\])|(\\)?([Hh]mm(ss)?|Mo|MM?M?M?|Do|DDDo|DD?D?D?|ddd?d?|do?|w[o|w]?|W[o|W]?|Qo?|"
                     r"N{1,5}|YYYYYY|YYYYY|YYYY|YY|y{2,4}|yo?|gg(ggg?)?|GG(GGG?)?|e|E|a|A|hh?|HH?|kk?|mm?|ss?|"
                     r"S{1,9}|x|X|zz?|ZZ?|.)", re.DOTALL)
# tokens moment formats that this module does not model (a format with one stays as written)
_UNMODELLED = frozenset({"w", "wo", "ww", "gg", "gggg", "ggggg", "N", "NN", "NNN", "NNNN", "NNNNN", "y", "yy", "yyy",
                         "yyyy", "yo"})
_MAX_FORMAT = 1000  # characters of a datetimeformat's format read (moment has no bound; this keeps the work small)


@dataclass(frozen=True, slots=True)
class MacroClock:
    """The moment of the generation (aware) and `{{idle_duration}}`'s words, worked out once from the chat."""

    now: datetime
    idle: str = "just now"


def request_clock(now: datetime | None, chat: Sequence[Mapping[str, Any]]) -> MacroClock | None:
    """The clock of a request: None without `generation.now` (the macros stay as written)."""
    if now is None:
        return None
    return MacroClock(now=now, idle=idle_duration(now, chat))


def conversation_clock(req: Any) -> MacroClock | None:
    """The clock of a request model whose chat is in `req.conversation` (text completion's)."""
    if req.generation.now is None:
        return None
    conversation = req.conversation
    return request_clock(req.generation.now, [m.model_dump() for m in (*conversation.history, *conversation.input)])


# formatting ---------------------------------------------------------------------------------------------------


def _fill(number: int, width: int, sign: bool = False) -> str:
    """moment's zeroFill."""
    text = str(abs(number)).rjust(width, "0")
    return ("+" if number >= 0 else "-") + text if sign else ("-" + text if number < 0 else text)


def _ordinal(number: int) -> str:
    """The en locale's ordinal ("1st", "12th", "22nd")."""
    last = number % 10
    suffix = "th" if number % 100 // 10 == 1 else {1: "st", 2: "nd", 3: "rd"}.get(last, "th")
    return f"{number}{suffix}"


def _offset(moment: datetime, separator: str) -> str:
    minutes = int((moment.utcoffset() or timedelta()).total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{separator}{minutes % 60:02d}"


def _epoch_ms(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def _hour12(moment: datetime) -> int:
    return moment.hour % 12 or 12


def _fraction(moment: datetime, digits: int) -> str:
    ms = moment.microsecond // 1000  # moment keeps milliseconds
    return str(ms * 10 ** (digits - 3)).rjust(digits, "0") if digits >= 3 else str(ms // 10 ** (3 - digits)).rjust(
        digits, "0")


def _weekday(moment: datetime) -> int:
    return (moment.weekday() + 1) % 7  # 0 = Sunday, as moment's day()


_FORMATTERS: dict[str, Callable[[datetime], str]] = {
    "M": lambda t: str(t.month), "Mo": lambda t: _ordinal(t.month), "MM": lambda t: f"{t.month:02d}",
    "MMM": lambda t: _MONTHS[t.month - 1][:3], "MMMM": lambda t: _MONTHS[t.month - 1],
    "Y": lambda t: _fill(t.year, 4), "YY": lambda t: _fill(t.year % 100, 2), "YYYY": lambda t: _fill(t.year, 4),
    "YYYYY": lambda t: _fill(t.year, 5), "YYYYYY": lambda t: _fill(t.year, 6, sign=True),
    "D": lambda t: str(t.day), "Do": lambda t: _ordinal(t.day), "DD": lambda t: f"{t.day:02d}",
    "DDD": lambda t: str(t.timetuple().tm_yday), "DDDo": lambda t: _ordinal(t.timetuple().tm_yday),
    "DDDD": lambda t: f"{t.timetuple().tm_yday:03d}",
    "d": lambda t: str(_weekday(t)), "do": lambda t: _ordinal(_weekday(t)), "dd": lambda t: _DAYS[_weekday(t)][:2],
    "ddd": lambda t: _DAYS[_weekday(t)][:3], "dddd": lambda t: _DAYS[_weekday(t)],
    "e": lambda t: str(_weekday(t)), "E": lambda t: str(t.isoweekday()),
    "Q": lambda t: str((t.month - 1) // 3 + 1), "Qo": lambda t: _ordinal((t.month - 1) // 3 + 1),
    "W": lambda t: str(t.isocalendar()[1]), "Wo": lambda t: _ordinal(t.isocalendar()[1]),
    "WW": lambda t: f"{t.isocalendar()[1]:02d}", "GG": lambda t: _fill(t.isocalendar()[0] % 100, 2),
    "GGGG": lambda t: _fill(t.isocalendar()[0], 4), "GGGGG": lambda t: _fill(t.isocalendar()[0], 5),
    "H": lambda t: str(t.hour), "HH": lambda t: f"{t.hour:02d}", "h": lambda t: str(_hour12(t)),
    "hh": lambda t: f"{_hour12(t):02d}", "k": lambda t: str(t.hour or 24), "kk": lambda t: f"{t.hour or 24:02d}",
    "hmm": lambda t: f"{_hour12(t)}{t.minute:02d}", "hmmss": lambda t: f"{_hour12(t)}{t.minute:02d}{t.second:02d}",
    "Hmm": lambda t: f"{t.hour}{t.minute:02d}", "Hmmss": lambda t: f"{t.hour}{t.minute:02d}{t.second:02d}",
    "a": lambda t: "pm" if t.hour > 11 else "am", "A": lambda t: "PM" if t.hour > 11 else "AM",
    "m": lambda t: str(t.minute), "mm": lambda t: f"{t.minute:02d}",
    "s": lambda t: str(t.second), "ss": lambda t: f"{t.second:02d}",
    **{"S" * n: (lambda t, n=n: _fraction(t, n)) for n in range(1, 10)},
    "Z": lambda t: _offset(t, ":"), "ZZ": lambda t: _offset(t, ""), "z": lambda t: "", "zz": lambda t: "",
    "X": lambda t: str(_epoch_ms(t) // 1000), "x": lambda t: str(_epoch_ms(t)),
}


def _expand(fmt: str) -> str:
    """moment's expandFormat for the en locale: the long formats (LT, LL, ...) written out (their expansions hold no
    long format, so one pass is moment's result)."""
    return _LOCAL_TOKENS.sub(lambda m: _LONG_FORMATS.get(m.group(0), m.group(0)), fmt)


def format_moment(moment: datetime, fmt: str) -> str | None:
    """`moment.format(fmt)` in the en locale; None for a format with a token this module does not model."""
    fmt = _expand(fmt or _DEFAULT_FORMAT)
    out: list[str] = []
    for match in _TOKENS.finditer(fmt):
        piece = match.group(0)
        formatter = _FORMATTERS.get(piece)
        if formatter is not None:
            out.append(formatter(moment))
        elif piece in _UNMODELLED:
            return None
        elif re.match(r"\[[\s\S]", piece):  # removeFormattingTokens: [text] -> text, else backslashes dropped
            out.append(re.sub(r"^\[|\]$", "", piece))
        else:
            out.append(piece.replace("\\", ""))
    return "".join(out)


def time_in_utc(clock: MacroClock, offset: str) -> str:
    """`moment().utc().utcOffset(N).format('LT')` for `offset` "+N" / "-N" (|N| < 16: hours, else minutes)."""
    number = int(offset)
    minutes = number * 60 if abs(number) < 16 else number
    now = clock.now
    local = int((now.utcoffset() or timedelta()).total_seconds() // 60)
    of_day = (now.hour * 60 + now.minute - local + minutes) % 1440  # 'LT' reads only the hour and minute
    return format_moment(now.replace(hour=of_day // 60, minute=of_day % 60), "LT") or ""


# idle duration ------------------------------------------------------------------------------------------------

_HUMANIZED = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})\s*@\s*(\d{1,2})h\s*(\d{1,2})m\s*(\d{1,2})s(?:\s*(\d{1,3})ms)?$")
_SPELLED = re.compile(r"^([A-Za-z]+) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2}) ?([ap]m)$", _I)


def send_date(message: Mapping[str, Any]) -> Any:
    """A chat message's SillyTavern send date: its `send_date`, or the one of the chat line it was imported from."""
    if message.get("send_date") is not None:
        return message.get("send_date")
    source = message.get("source")
    line = source.get("line") if isinstance(source, Mapping) else None
    return line.get("send_date") if isinstance(line, Mapping) else None


def read_send_date(value: Any, zone: Any) -> datetime | None:
    """SillyTavern's timestampToMoment: epoch milliseconds, ISO 8601, "2024-7-12@01h31m37s[123ms]" or
    "June 19, 2023 2:20pm" (the last two, and an ISO date without offset, in `zone`); None when unreadable."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)
        if not isinstance(value, str) or not value.strip() or len(value) > 100:
            return None
        text = value.strip()
        humanized = _HUMANIZED.match(text)
        if humanized is not None:
            year, month, day, hour, minute, second = (int(g) for g in humanized.groups()[:6])
            ms = int(humanized.group(7) or 0)
            return datetime(year, month, day, hour, minute, second, ms * 1000, tzinfo=zone)
        spelled = _SPELLED.match(text)
        if spelled is not None:
            names = [m.lower() for m in _MONTHS]
            month = names.index(spelled.group(1).lower()) + 1 if spelled.group(1).lower() in names else 0
            hour = int(spelled.group(4)) % 12 + (12 if spelled.group(6).lower() == "pm" else 0)
            return datetime(int(spelled.group(3)), month, int(spelled.group(2)), hour, int(spelled.group(5)),
                            tzinfo=zone)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
    except (ValueError, OverflowError):
        return None


def idle_duration(now: datetime, chat: Sequence[Mapping[str, Any]]) -> str:
    """getTimeSinceLastMessage(): newest first, system messages skipped, the first user message after the newest
    message; its send date's distance from `now` humanized, or "just now" (no such message, no send date)."""
    take_next = False
    for message in reversed(chat):
        if message.get("role") not in ("user", "assistant"):
            continue  # SillyTavern's system messages (and tool records, which its chats do not have)
        if message.get("role") == "user" and take_next:
            raw = send_date(message)
            if raw is None or raw == "":
                return "just now"
            sent = read_send_date(raw, now.tzinfo)
            if sent is None:
                return "Invalid date"
            return humanize((now - sent).total_seconds())
        take_next = True
    return "just now"


# the engines' hooks -------------------------------------------------------------------------------------------

# a pattern's source (matched ignoring case, compiled by the legacy engine at its first use) and its replacement
Pattern = tuple[str, Callable[[re.Match[str]], str]]


def _datetimeformat(clock: MacroClock, fmt: str) -> str | None:
    return format_moment(clock.now, fmt) if len(fmt) <= _MAX_FORMAT else None


def legacy_patterns(clock: MacroClock | None) -> list[Pattern]:
    """The legacy engine's time macros in `evaluateMacros`' order (after the comments, before `{{timeDiff}}`);
    none without a clock. A replacement that cannot be made gives the macro back as written."""
    if clock is None:
        return []
    now = clock.now
    return [
        (r"\{\{time\}\}", lambda _m: format_moment(now, "LT") or ""),
        (r"\{\{date\}\}", lambda _m: format_moment(now, "LL") or ""),
        (r"\{\{weekday\}\}", lambda _m: format_moment(now, "dddd") or ""),
        (r"\{\{isotime\}\}", lambda _m: format_moment(now, "HH:mm") or ""),
        (r"\{\{isodate\}\}", lambda _m: format_moment(now, "YYYY-MM-DD") or ""),
        (r"\{\{datetimeformat +([^}]*)\}\}", lambda m: _or_same(_datetimeformat(clock, m.group(1)), m)),
        (r"\{\{idle_duration\}\}", lambda _m: clock.idle),
        (r"\{\{time_UTC([-+]\d{1,15})\}\}", lambda m: time_in_utc(clock, m.group(1))),
    ]


def _or_same(value: str | None, match: re.Match[str]) -> str:
    return match.group(0) if value is None else value


_V2_UTC = re.compile(r"^UTC([-+]\d{1,15})$")
_V2_LEGACY_UTC = re.compile(r"\{\{time_(UTC[-+]\d{1,15})\}\}", _I)


def v2_legacy_spelling(text: str) -> str:
    """Macros 2.0's rewrite of the legacy `{{time_UTC+2}}` to `{{time::UTC+2}}` before it parses a text."""
    return _V2_LEGACY_UTC.sub(lambda m: "{{time::" + m.group(1) + "}}", text) if "time_" in text.lower() else text


def _v2_time(clock: MacroClock, args: list[str]) -> str | None:
    if not args:
        return format_moment(clock.now, "LT")
    if len(args) == 1:
        offset = _V2_UTC.match(args[0].strip())
        return time_in_utc(clock, offset.group(1)) if offset is not None else None
    return None


def _v2_fixed(fmt: str) -> Callable[[MacroClock, list[str]], str | None]:
    return lambda clock, args: format_moment(clock.now, fmt) if not args else None


_V2_MACROS: dict[str, Callable[[MacroClock, list[str]], str | None]] = {
    "time": _v2_time, "date": _v2_fixed("LL"), "weekday": _v2_fixed("dddd"), "isotime": _v2_fixed("HH:mm"),
    "isodate": _v2_fixed("YYYY-MM-DD"),
    "datetimeformat": lambda clock, args: _datetimeformat(clock, args[0]) if len(args) == 1 else None,
    "idle_duration": lambda clock, args: clock.idle if not args else None,
    "idleduration": lambda clock, args: clock.idle if not args else None,
}


def v2_macro(clock: MacroClock | None, name: str) -> Callable[[Any, list[str]], str | None] | None:
    """Macros 2.0's handler of the time macro `name` (lower case) with this clock: (call, args) -> its value, or
    None (the macro stays as written); None when there is no clock or `name` is not a time macro."""
    if clock is None:
        return None
    handler = _V2_MACROS.get(name)
    return (lambda _call, args: handler(clock, args)) if handler is not None else None
