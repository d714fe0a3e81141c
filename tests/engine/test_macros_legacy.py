"""SillyTavern's legacy macro engine: each group of its fixed patterns is skipped only when no pattern of it can match."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assembly.sillytavern.macro_clock import MacroClock
from assembly.sillytavern.macro_environment import MacroEnvironment
from assembly.sillytavern.macros_legacy import (
    _POST_COVERED,
    _POST_OPENER,
    _POST_STEPS,
    _PRE_COVERED,
    _PRE_OPENER,
    _PRE_STEPS,
    LegacyCall,
    _post_env,
    _pre_env,
)

# one use of every macro the steps before and after the environment's values replace (macros.js evaluateMacros)
PRE_MACROS = ["{{roll 1d6}}", "{{roll:d6}}", "{{setvar::a::1}}", "{{addvar::a::1}}", "{{incvar::a}}", "{{decvar::a}}",
              "{{getvar::a}}", "{{setglobalvar::a::1}}", "{{addglobalvar::a::1}}", "{{incglobalvar::a}}",
              "{{decglobalvar::a}}", "{{getglobalvar::a}}", "{{newline}}", "{{trim}}", "{{noop}}", "{{input}}"]
POST_MACROS = ["{{maxPrompt}}", "{{lastMessage}}", "{{lastMessageId}}", "{{lastUserMessage}}", "{{lastCharMessage}}",
               "{{firstIncludedMessageId}}", "{{reverse:abc}}", "{{// a note}}", "{{timeDiff::a::b}}",
               "{{outlet::x}}", "{{random::a::b}}", "{{pick::a,b}}", '{{banned "x"}}', "{{time}}", "{{date}}",
               "{{weekday}}", "{{isotime}}", "{{isodate}}", "{{datetimeformat YYYY}}", "{{idle_duration}}",
               "{{time_UTC+2}}"]


def test_every_step_of_a_group_is_covered_by_its_openers():
    call = LegacyCall(MacroEnvironment(clock=MacroClock(now=datetime(2024, 5, 6, 7, 8, tzinfo=UTC))))
    assert len(_pre_env(call)) == _PRE_STEPS
    assert len(_post_env(call)) == _POST_STEPS
    assert _PRE_COVERED and _POST_COVERED


@pytest.mark.parametrize("text", PRE_MACROS)
def test_a_macro_before_the_environment_is_found_in_any_case(text):
    assert _PRE_OPENER.search(text) and _PRE_OPENER.search(text.upper())
    assert _POST_OPENER.search(text) is None


@pytest.mark.parametrize("text", POST_MACROS)
def test_a_macro_after_the_environment_is_found_in_any_case(text):
    assert _POST_OPENER.search(text) and _POST_OPENER.search(text.upper())


def test_a_time_macro_alone_still_runs_with_a_clock():
    env = MacroEnvironment(clock=MacroClock(now=datetime(2024, 5, 6, 7, 8, tzinfo=UTC)))
    assert env.evaluate("{{ISODATE}} {{isotime}}") == "2024-05-06 07:08"
    assert MacroEnvironment().evaluate("{{isodate}}") == "{{isodate}}"


def test_macros_written_in_capitals_still_run():
    env = MacroEnvironment(user="Ann", char="Bo")
    assert env.evaluate("{{SETVAR::x::5}}{{GetVar::x}} {{USER}} and {{Char}}{{NEWLINE}}{{LASTMESSAGEID}}") == \
        "5 Ann and Bo\n"


def test_a_text_whose_macros_are_all_unknown_stays_as_written():
    env = MacroEnvironment(user="Ann", char="Bo")
    assert env.evaluate("{{nothing}} here") == "{{nothing}} here"
    assert env.unsupported == ["nothing"]
