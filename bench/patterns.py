"""Hostile and pathological patterns against their limits (assembly.sillytavern.pattern_matcher): each figure beside
its target. The limits are the defaults: 0.25 s of matching per pattern and request, 10,000 characters of pattern
(50,000 of translation), 1,000,000 characters added by a replacement. A timed-out search may overrun by the `regex`
package's check interval, so "bounded" means within twice the limit. The world info recursion chain (10,000 entries
of 20 keys, each entry's content naming a key of the next; an 8,192-token context, so the budget ends it after some
300 passes) must finish under 2 s. All on the process's CPU clock, as the engine's other sections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assembly.caches import clear_caches
from assembly.macros import MacroContext
from assembly.sillytavern.models import RegexScript, WorldBook, WorldBookEntry
from assembly.sillytavern.pattern_matcher import DEFAULT_LIMITS, PatternRuns
from assembly.sillytavern.regex import AI_OUTPUT, USER_INPUT, regexed_chat_steps
from assembly.sillytavern.worldinfo import activate_world_info
from bench.report import Table
from bench.timing import CPU, measure

TITLE = "patterns"
LIMIT_S = DEFAULT_LIMITS.time_s
BOUND_S = 2 * LIMIT_S
CHAIN_TARGET_S = 2.0
MACROS = MacroContext(user="User", char="Char")


def _scan(book: WorldBook, chat: str, max_context: int = 1_000_000) -> Any:
    return activate_world_info(book, chat=[{"role": "user", "content": chat}], names={"user": "User"},
                               max_context=max_context)


def _keys(*keys: str) -> WorldBook:
    return WorldBook(entries=[WorldBookEntry(uid=i, keys=(k,)) for i, k in enumerate(keys)], activation="keywords")


def _chain(length: int = 10_000, keys: int = 20) -> WorldBook:
    return WorldBook(activation="keywords", recursive=True, entries=[
        WorldBookEntry(uid=i, keys=tuple(f"beacon{i}x{j}" for j in range(keys)),
                       content=f"the road leads on to beacon{i + 1}x{(i * 7) % keys}") for i in range(length)])


def _script_run(script: RegexScript, chat: list[tuple[str, str]]) -> Callable[[], Any]:
    def run() -> Any:
        runs = PatternRuns()
        regexed_chat_steps(chat, [script], MACROS, generation_type="normal", runs=runs)
        return runs.diagnostics()
    return run


def run() -> list[Table]:
    table = Table("Patterns held to their limits", ["case", "median s", "target", "met", "diagnostic"])
    redos = _keys("/(a+)+$/", "/(a|aa)+$/")
    oversized = _keys(*("/" + "\\b" * 20_000 + f"{i}/" for i in range(4)))
    ozone = RegexScript(script_name="ozone", find_regex=r"/\s*[^.!?]*\bozone\b[^.!?]*[.!?]\s*/gi",
                        placement=(USER_INPUT, AI_OUTPUT), prompt_only=True)
    long_chat = [("user" if i % 2 == 0 else "assistant", "the air smelled of ozone and rain, " * 2_000 + str(i))
                 for i in range(40)]
    echo = RegexScript(script_name="echo", find_regex="/./g", replace_string="$0" * 1000, placement=(USER_INPUT,),
                        prompt_only=True)
    chain = _chain()
    cases: list[tuple[str, Callable[[], Any], float, Callable[[], float]]] = [
        ("world info keys /(a+)+$/ and /(a|aa)+$/ on 34 a's and '!'",
         lambda: _scan(redos, "a" * 34 + "!").pattern_limits, BOUND_S, CPU),
        ("4 world info keys of \\b x 20,000", lambda: _scan(oversized, "0 1 2 3").pattern_limits, BOUND_S, CPU),
        ("prompt-only 'ozone' script, 40 messages of 70,000 chars", _script_run(ozone, long_chat), BOUND_S, CPU),
        ("/./g with $0 x 1000 over a 1 MB message", _script_run(echo, [("user", "x" * 1_000_000)]), BOUND_S, CPU),
        ("recursion chain, 10,000 entries x 20 keys", lambda: _scan(chain, "start at beacon0x3", 8_192).notes,
         CHAIN_TARGET_S, CPU),
    ]
    for label, work, target, clock in cases:
        found = work()  # warm: the tokenizer, the compiled patterns
        timing = measure(work, setup=clear_caches, min_runs=3, max_runs=3, clock=clock)
        limits = sorted({d["limit"] for d in found if isinstance(d, dict)})
        table.add(label, f"{timing.median_s:.3f}", f"<= {target:g} s", "yes" if timing.median_s <= target else "NO",
                  ", ".join(limits) or "-")
    table.notes.append(f"limits: {LIMIT_S} s per pattern and request, {DEFAULT_LIMITS.pattern_length} pattern "
                       f"characters, {DEFAULT_LIMITS.output_length} characters added by a replacement")
    table.notes.append("times on the process's CPU clock; the limit counts wall time, so a loaded machine stops a "
                       "pattern sooner")
    return [table]
