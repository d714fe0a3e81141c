"""Limits on every pattern the engine runs (world info regex keys, regex scripts): hostile or pathological patterns
finish fast, are skipped for the request and are reported as ST_PATTERN_LIMIT naming the entry or script."""

from __future__ import annotations

import time

from assembly.macros import MacroContext
from assembly.sillytavern.js_regex import compile_js
from assembly.sillytavern.models import RegexScript, WorldBook, WorldBookEntry
from assembly.sillytavern.pattern_matcher import PatternLimits, PatternRuns, compile_limited
from assembly.sillytavern.regex import AI_OUTPUT, USER_INPUT, regexed_chat_steps, run_regex_script
from assembly.sillytavern.worldinfo import activate_world_info

MACROS = MacroContext(user="Aria", char="Seraphina")
FAST = PatternLimits(time_s=0.05)  # a short limit keeps the tests quick; the behaviour is the default's
OZONE = r"/\s*[^.!?]*\bozone\b[^.!?]*[.!?]\s*/gi"


def scan(*entries: WorldBookEntry, chat: str):
    book = WorldBook(entries=entries, activation="keywords")
    return activate_world_info(book, chat=[{"role": "user", "content": chat}], names={"user": "Aria"},
                               max_context=1_000_000)


def timed(work):
    """The result and the CPU seconds it took (the machine may be shared: wall time would measure the others)."""
    started = time.process_time()
    result = work()
    return result, time.process_time() - started


def test_nested_quantifier_key_finishes_with_javascripts_answer():
    # /(a+)+$/ on "aaa...!" backtracks exponentially in a naive engine; the answer is "no match"
    result, seconds = timed(lambda: scan(WorldBookEntry(uid=1, keys=("/(a+)+$/",)), chat="a" * 34 + "!"))
    assert result.active == ()
    assert seconds < 2


def test_a_key_that_runs_out_of_time_is_skipped_and_reported():
    result, seconds = timed(lambda: scan(WorldBookEntry(uid=7, keys=("/(a|aa)+$/",)), chat="a" * 40 + "!"))
    assert result.active == ()
    assert seconds < 3  # the default quarter second, overshot at most by the regex package's check interval
    [limit] = result.pattern_limits
    assert limit["code"] == "ST_PATTERN_LIMIT" and limit["owner"] == "world info entry 7"
    assert limit["limit"] == "time"


def test_an_oversized_key_is_not_compiled():
    keys = tuple("/" + "\\b" * 20_000 + f"{i}/" for i in range(4))
    result, seconds = timed(lambda: scan(WorldBookEntry(uid=3, keys=keys), chat="0 1 2 3"))
    assert result.active == ()
    assert seconds < 2
    assert {d["limit"] for d in result.pattern_limits} == {"size"}
    assert all(d["owner"] == "world info entry 3" for d in result.pattern_limits)


def test_a_translation_over_the_limit_is_refused_before_compiling():
    answer = compile_limited("\\b" * 4000, "", PatternLimits())  # 8,000 characters, but a long translation
    assert answer.kind == "limit"
    assert compile_js("\\b" * 10, "").search("ab") is not None


def test_a_replacement_that_grows_past_the_output_cap_is_refused():
    script = RegexScript(script_name="echo", find_regex="/./g", replace_string="$0" * 1000, placement=(USER_INPUT,))
    text = "x" * 1_000_000
    runs = PatternRuns()  # the defaults: the time or the growth cap stops it, whichever comes first
    out, seconds = timed(lambda: run_regex_script(script, text, MACROS, runs))
    assert out is text  # the script changes nothing
    assert seconds < 5
    [limit] = runs.diagnostics()
    assert limit["owner"] == "regex script 'echo'" and limit["limit"] in ("output", "time")
    runs = PatternRuns(limits=PatternLimits(output_length=100_000, time_s=60))
    assert run_regex_script(script, text, MACROS, runs) is text
    assert [d["limit"] for d in runs.diagnostics()] == ["output"]


def test_a_script_is_held_to_its_time_over_the_whole_chat():
    script = RegexScript(script_name="ozone", find_regex=OZONE, placement=(USER_INPUT, AI_OUTPUT), prompt_only=True)
    message = "the air smelled of ozone and rain, " * 400  # no sentence end: every start scans to the end
    chat = [("user" if i % 2 == 0 else "assistant", message + str(i)) for i in range(20)]
    runs = PatternRuns(limits=FAST)
    out, seconds = timed(lambda: regexed_chat_steps(chat, [script], MACROS, generation_type="normal", runs=runs))
    assert seconds < 2
    assert [text for text, _steps in out] == [text for _role, text in chat]
    assert [d["limit"] for d in runs.diagnostics()] == ["time"]


def test_a_script_that_finishes_is_unchanged_by_the_limits():
    script = RegexScript(script_name="ozone", find_regex=OZONE, placement=(USER_INPUT,), prompt_only=True)
    [(text, _steps)] = regexed_chat_steps([("user", "Hi. It smelled of ozone today! Bye.")], [script], MACROS,
                                         generation_type="normal", runs=PatternRuns())
    assert text == "Hi.Bye."


def test_a_prompt_only_script_changes_every_chat_message_of_its_placements():
    script = RegexScript(script_name="swap", find_regex="/dragon/g", replace_string="wyrm",
                         placement=(USER_INPUT, AI_OUTPUT), prompt_only=True)
    chat = [("user", "a dragon flies over the once-only test"), ("assistant", "the dragon lands")]
    first = regexed_chat_steps(chat, [script], MACROS, generation_type="normal")
    assert regexed_chat_steps(chat, [script], MACROS, generation_type="normal") == first
    assert [text for text, _steps in first] == ["a wyrm flies over the once-only test", "the wyrm lands"]


def test_the_limits_are_a_parameter_of_the_scan():
    book = WorldBook(entries=[WorldBookEntry(uid=1, keys=("/dra+gon/",))], activation="keywords")
    chat = [{"role": "user", "content": "a draaagon"}]
    tight = activate_world_info(book, chat=chat, names={}, max_context=1_000_000,
                                pattern_limits=PatternLimits(pattern_length=5))
    assert tight.active == () and [d["limit"] for d in tight.pattern_limits] == ["size"]
    assert [a.uid for a in activate_world_info(book, chat=chat, names={}, max_context=1_000_000).active] == [1]


def test_a_long_text_may_still_be_replaced_within_the_growth_cap():
    script = RegexScript(script_name="shout", find_regex="/a/g", replace_string="A", placement=(USER_INPUT,))
    runs = PatternRuns(limits=PatternLimits(output_length=10, time_s=60))
    assert run_regex_script(script, "ab" * 1000, MACROS, runs) == "Ab" * 1000
    assert runs.diagnostics() == []
