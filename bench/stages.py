"""Where a request's time goes: the CPU time of each stage of `assemble()` (docs/architecture.md §2), for a session
request and for the growing chat's late turns of the `users` section, the collector off.

Each stage function of `assembly.api` is wrapped with a timer for the section's run, and `assemble()` itself runs:
the figures are the pipeline's own, stage by stage. Each pass decodes its requests anew; a row gives the least of
`PASSES` passes per stage (the first pass makes the token counts the later ones find, as a warm server has them).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

from bench.report import Table
from bench.timing import CPU
from bench.users import _growing_chat, _sessions

TITLE = "stages"
STAGES = ("_parse", "_resolve", "_logical", "_order", "_build", "_count", "_budget", "_result")
PASSES = 5
REQUESTS = 40


def _timed(spent: dict[str, float], name: str, stage: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = CPU()
        try:
            return stage(*args, **kwargs)
        finally:
            spent[name] += CPU() - start

    return timed


def _least_per_stage(texts: list[str]) -> dict[str, float]:
    """Each stage's least CPU seconds per request over the passes."""
    from assembly import api

    least = dict.fromkeys(STAGES, float("inf"))
    spent = dict.fromkeys(STAGES, 0.0)
    originals = {name: getattr(api, name) for name in STAGES}
    enabled = gc.isenabled()
    try:
        for name, stage in originals.items():
            setattr(api, name, _timed(spent, name, stage))
        gc.disable()
        for _ in range(PASSES):
            requests = [json.loads(text) for text in texts]
            spent.update(dict.fromkeys(STAGES, 0.0))
            for request in requests:
                api.assemble(request)
            for name in STAGES:
                least[name] = min(least[name], spent[name] / len(texts))
    finally:
        for name, stage in originals.items():
            setattr(api, name, stage)
        if enabled:
            gc.enable()
    return least


def run() -> list[Table]:
    from assembly import count_tokens

    count_tokens("the process is warm", "o200k_base")  # the tokenizer's files: the first request's, not a stage's
    table = Table("CPU time of each stage of assemble() per request (us), the collector off",
                  ["request", *(name.lstrip("_") for name in STAGES), "total"])
    for label, texts in ((f"a session ({REQUESTS} of the users sessions)", _sessions(0)[:REQUESTS]),
                         (f"the growing chat's turns {200 - REQUESTS}-199", _growing_chat(0)[-REQUESTS:])):
        least = _least_per_stage(texts)
        table.add(label, *(f"{least[name] * 1e6:.0f}" for name in STAGES), f"{sum(least.values()) * 1e6:.0f}")
    table.notes.append(f"least of {PASSES} passes over {REQUESTS} requests, each pass decoding them anew; a stage's "
                       "time holds what it calls (budget: a second build when its eviction plan is applied).")
    return [table]
