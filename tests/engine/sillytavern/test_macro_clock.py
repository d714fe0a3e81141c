"""SillyTavern's time and date macros (assembly/sillytavern/macro_clock.py) in both macro engines: the request's
clock (`generation.now`) read with moment.js's en formats; no clock leaves them as written. Every expected value is
worked out by hand from moment's format tokens for the clock Sunday 6 December 2026, 15:05:09.042 at UTC+08:00
(07:05:09 UTC)."""

from datetime import datetime

import pytest

from assembly import assemble
from assembly.errors import AssemblyError
from assembly.sillytavern.macro_clock import format_moment, idle_duration, request_clock
from assembly.sillytavern.macro_environment import MacroEnvironment

NOW = "2026-12-06T15:05:09.042+08:00"
CLOCK = request_clock(datetime.fromisoformat(NOW), [])
ENGINES = ("legacy", "v2")


def run(text: str, engine: str, clock=CLOCK) -> tuple[str, list[str]]:
    env = MacroEnvironment(user="Ann", char="Bo", engine=engine, clock=clock)
    return env.evaluate(text), env.unsupported


# the same macro, the same value in both engines
BOTH = [
    ("{{time}}", "3:05 PM"),  # LT = h:mm A; 15 % 12 = 3
    ("{{TIME}}", "3:05 PM"),  # names are read case-insensitively
    ("{{date}}", "December 6, 2026"),  # LL = MMMM D, YYYY
    ("{{weekday}}", "Sunday"),  # dddd
    ("{{isotime}}", "15:05"),  # HH:mm
    ("{{isodate}}", "2026-12-06"),  # YYYY-MM-DD
    ("{{datetimeformat YYYY-MM-DD HH:mm:ss}}", "2026-12-06 15:05:09"),
    ("{{datetimeformat Do MMM YY}}", "6th Dec 26"),
    ("{{datetimeformat dddd [the] Do}}", "Sunday the 6th"),  # [text] is written as it is
    ("{{datetimeformat hh:mm a}}", "03:05 pm"),
    ("{{datetimeformat H:m:s}}", "15:5:9"),
    ("{{datetimeformat ddd D/M}}", "Sun 6/12"),
    ("{{datetimeformat LTS}}", "3:05:09 PM"),  # h:mm:ss A
    ("{{datetimeformat L}}", "12/06/2026"),  # MM/DD/YYYY
    ("{{datetimeformat LLL}}", "December 6, 2026 3:05 PM"),
    ("{{datetimeformat LLLL}}", "Sunday, December 6, 2026 3:05 PM"),
    ("{{datetimeformat \\YYYY}}", "YYYY"),  # a backslash escapes the token after it
    ("{{time_UTC-5}}", "2:05 AM"),  # 07:05 UTC - 5 hours
    ("{{time_UTC+2}}", "9:05 AM"),  # 07:05 UTC + 2 hours
    ("{{time_UTC+0}}", "7:05 AM"),
    ("{{time_UTC+30}}", "7:35 AM"),  # moment reads |N| >= 16 as minutes
    ("{{idle_duration}}", "just now"),  # no chat: SillyTavern's words for no message
    ("at {{time}} on {{weekday}}", "at 3:05 PM on Sunday"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "expected"), BOTH)
def test_a_time_macro_reads_the_clock_in_both_engines(engine, text, expected):
    out, unsupported = run(text, engine)
    assert out == expected
    assert unsupported == []


@pytest.mark.parametrize(("text", "expected"), [
    ("{{datetimeformat }}", "2026-12-06T15:05:09+08:00"),  # an empty format: moment's default format
    ("{{datetimeformat   YYYY}}", "2026"),  # the spaces after the name are the pattern's (" +")
])
def test_the_legacy_engine_reads_its_datetimeformat_pattern(text, expected):
    assert run(text, "legacy") == (expected, [])


@pytest.mark.parametrize(("text", "expected"), [
    ("{{time::UTC+2}}", "9:05 AM"),  # Macros 2.0's own spelling of time_UTC
    ("{{ time::UTC-5 }}", "2:05 AM"),  # whitespace inside the braces
    ("{{datetimeformat::YYYY}}", "2026"),
    ("{{idleDuration}}", "just now"),
    ("{{datetimeformat {{isodate}}}}", "2026-12-06"),  # the nested macro first: its value is the format (digits, -)
    ("{{if {{weekday}}}}open{{/if}}", "open"),
])
def test_macros_2_reads_its_own_spellings(text, expected):
    assert run(text, "v2") == (expected, [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "name"), [
    ("{{datetimeformat ww}}", "datetimeformat"),  # a locale week: not modelled, left as written
    ("{{datetimeformat N}}", "datetimeformat"),  # an era
])
def test_a_format_with_a_token_not_modelled_stays_as_written(engine, text, name):
    assert run(text, engine) == (text, [name])


@pytest.mark.parametrize("engine", ENGINES)
def test_without_a_clock_the_time_macros_stay_as_written_and_are_named(engine):
    text = "{{time}} {{date}} {{weekday}} {{isotime}} {{isodate}} {{datetimeformat YYYY}} {{idle_duration}}"
    out, unsupported = run(text + " {{time_UTC+2}}", engine, clock=None)
    assert out == text + " {{time_UTC+2}}"
    assert unsupported == ["time", "date", "weekday", "isotime", "isodate", "datetimeformat", "idle_duration",
                           "time_UTC"]


@pytest.mark.parametrize(("moment", "fmt", "expected"), [
    ("2026-01-01T00:30:00-05:00", "LT", "12:30 AM"),  # h: 0 % 12 || 12
    ("2026-03-22T12:00:00+00:00", "LT", "12:00 PM"),  # 12 > 11: PM
    ("2026-03-22T12:00:00+00:00", "Do", "22nd"),
    ("2026-03-23T12:00:00+00:00", "Do", "23rd"),
    ("2026-03-11T12:00:00+00:00", "Do", "11th"),  # the teens take "th"
    ("2026-03-01T12:00:00+00:00", "Do", "1st"),
    ("2026-01-01T00:30:00-05:00", "k:mm", "24:30"),  # k: 0 || 24
    ("2026-12-06T15:05:09.042+08:00", "SSS", "042"),
    ("2026-12-06T15:05:09.042+08:00", "Z ZZ", "+08:00 +0800"),
    ("2026-01-01T00:30:00-05:30", "Z", "-05:30"),
    ("2026-12-06T15:05:09.042+08:00", "X", "1796540709"),  # 07:05:09 UTC on 2026-12-06, in seconds since 1970
    ("2026-12-06T15:05:09.042+08:00", "DDDD Q E", "340 4 7"),  # day of year, quarter, ISO weekday (Sunday 7)
    ("2026-12-06T15:05:09.042+08:00", "l ll", "12/6/2026 Dec 6, 2026"),
    ("2026-12-06T15:05:09.042+08:00", "[YYYY", "[2026"),  # an unclosed [ is a character
])
def test_moment_format_tokens(moment, fmt, expected):
    assert format_moment(datetime.fromisoformat(moment), fmt) == expected


def _msg(role, sent=None, **more):
    return {"role": role, "content": "x", **({"send_date": sent} if sent is not None else {}), **more}


@pytest.mark.parametrize(("chat", "expected"), [
    ([], "just now"),
    ([_msg("user", "2026-12-06T13:00:00+08:00")], "just now"),  # the newest message is never the one read
    ([_msg("user", "2026-12-06T13:00:00+08:00"), _msg("assistant"), _msg("user")], "2 hours"),  # 2h05m
    ([_msg("user", "2026-12-06T15:04:59+08:00"), _msg("assistant")], "a few seconds"),  # 10 s
    ([_msg("user", "2026-12-03T15:05:09+08:00"), _msg("assistant")], "3 days"),
    ([_msg("user", 1796540709042 - 5 * 3_600_000), _msg("assistant")], "5 hours"),  # epoch milliseconds
    ([_msg("user", "2026-12-6@14h35m09s"), _msg("assistant")], "30 minutes"),  # SillyTavern's spelling, local
    ([_msg("user", "December 6, 2026 3:00pm"), _msg("assistant")], "5 minutes"),  # 5 min 9 s
    ([_msg("user", "2026-12-06T14:05:09+08:00"), _msg("assistant"), _msg("system")], "an hour"),  # system skipped
    ([_msg("user"), _msg("assistant")], "just now"),  # no send date
    ([_msg("user", "not a date"), _msg("assistant")], "Invalid date"),
    ([_msg("user", source={"kind": "user", "line": {"send_date": "2026-12-06T14:05:09+08:00"}}),
      _msg("assistant")], "an hour"),  # a message imported from a SillyTavern chat: its line's send date
])
def test_idle_duration_reads_the_last_user_message_before_the_newest(chat, expected):
    assert idle_duration(datetime.fromisoformat(NOW), chat) == expected


ST_BODY = {
    "strategy": "builtin-st", "host": {"core_available": True}, "names": {"user": "Ann"},
    "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system",
                                           "content": "{{date}} {{time}}, idle {{idle_duration}}"}],
                             "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main",
                                                                                  "enabled": True}]}]},
                  "character": {"name": "Bo"}},
    "conversation": {"history": [{"role": "user", "content": "hi", "send_date": "2026-12-06T12:05:09+08:00"},
                                 {"role": "assistant", "content": "hello"}],
                     "input": [{"role": "user", "content": "and now?"}]},
}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_chat_completion_request_with_generation_now_expands_the_time_macros(engine):
    body = {**ST_BODY, "macro_engine": engine, "generation": {"now": NOW}}
    result = assemble(body).model_dump(mode="json")
    assert result["request"]["messages"][0]["content"] == "December 6, 2026 3:05 PM, idle 3 hours"
    assert not [d for d in result["diagnostics"] if d["code"] == "UNSUPPORTED_MACRO"]


def test_a_request_without_generation_now_leaves_them_and_says_so():
    result = assemble(ST_BODY).model_dump(mode="json")
    assert result["request"]["messages"][0]["content"] == "{{date}} {{time}}, idle {{idle_duration}}"
    assert [d["macro"] for d in result["diagnostics"] if d["code"] == "UNSUPPORTED_MACRO"] == \
        ["date", "time", "idle_duration"]


def test_a_text_completion_request_reads_the_clock_too():
    body = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate", "names": {"user": "Ann", "char": "Bo"},
            "generation": {"now": NOW},
            "resources": {"character": {"name": "Bo", "description": "It is {{weekday}}, {{isotime}}."},
                          "context_template": {"story_string": "{{description}}\n", "chat_start": "",
                                               "example_separator": ""},
                          "text_settings": {"instruct_enabled": False}},
            "conversation": {"history": [], "input": [{"role": "user", "content": "hi"}]}}
    assert assemble(body).model_dump(mode="json")["request"]["prompt"].startswith("It is Sunday, 15:05.")


@pytest.mark.parametrize("now", ["2026-12-06T15:05:00", "tomorrow", 1796540709])
def test_generation_now_needs_a_date_and_time_with_its_offset(now):
    with pytest.raises(AssemblyError) as refused:
        assemble({**ST_BODY, "generation": {"now": now}})
    assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
    assert str(refused.value).startswith("generation.now:")
