"""The work users make, beside fast-tavern on the same inputs: a chat growing turn by turn, requests from many sessions,
and the first request of a fresh process.

Every request is a new dict built from JSON text, as `/api/assemble` and the studio's pages hand the engine one, so
nothing an earlier request left in memory is found by identity. The shared input is what fast-tavern understands:
SillyTavern's default-shaped preset, a character card, a persona, a chat and ten constant world book entries
(bench.peers). Targets: growing chat at most x1.0 fast-tavern's total, 200 sessions at most x1.25, the first request
of a fresh process (imports included) at most 400 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.fixtures import chat_history
from bench.peers import _peer_params, _shared_request
from bench.report import Table
from bench.timing import CPU

TITLE = "users"
REPO = Path(__file__).resolve().parent.parent
TURNS = 200
SESSIONS = 200
SESSION_HISTORY = 20
WORLDBOOK = 10
GROWING_TARGET, SESSIONS_TARGET, FIRST_TARGET_MS = 1.0, 1.25, 400.0
FIRST_RUNS = 3
CHAT_SEED = 3  # the growing chat's first run: the shared request's own chat
SERIES_RUNS = 2  # each series timed twice: the table gives both ratios, their spread is the machine's noise


def _growing_chat(run: int) -> list[str]:
    """The JSON text of each turn's request: the chat's first `turn` messages as history, the next as input. Each
    run has a chat of its own: a run that repeated an earlier one would find every message's count made."""
    base = _shared_request(TURNS, WORLDBOOK)
    messages = chat_history(TURNS, seed=CHAT_SEED + run)
    texts = []
    for turn in range(TURNS):
        request = dict(base, conversation={"history": messages[:turn], "input": [messages[turn]]})
        texts.append(json.dumps(request))
    return texts


def _sessions(run: int) -> list[str]:
    """One request of each of `SESSIONS` sessions: other names, another main prompt and author's wording each time.
    Each run has sessions of its own (numbered on from the last run's): their texts are new to the process."""
    base = _shared_request(SESSION_HISTORY, WORLDBOOK)
    texts = []
    for number in range(run * SESSIONS, (run + 1) * SESSIONS):
        request = json.loads(json.dumps(base))
        request["names"] = {"user": f"Traveller {number}", "char": "Seraphina"}
        for prompt in request["resources"]["preset"]["prompts"]:
            if prompt["identifier"] == "main":
                prompt["content"] += f" Session {number}: keep the tone of chapter {number % 17}."
        request["resources"]["persona"]["description"] += f" Visitor number {number}."
        request["resources"]["preset"]["openai_max_tokens"] = 300 + number
        texts.append(json.dumps(request))
    return texts


def _time_series(texts: list[str]) -> tuple[float, float]:
    """CPU seconds of assemble() and of fast-tavern over the series, each request a new dict, the two alternating."""
    from fast_tavern import build_prompt_from_silly_tavern

    from assembly import assemble, count_tokens

    # What a process pays once, its tokenizer's files (about 0.2-0.3 s of o200k_base), is the first-request row's:
    # loaded here, untimed, by counting a text no request of the series holds (their own counts stay to be made).
    count_tokens("the process is warm", "o200k_base")
    ours = theirs = 0.0
    for index, text in enumerate(texts):
        request, params = json.loads(text), _peer_params(json.loads(text))
        for side in ((0, 1) if index % 2 == 0 else (1, 0)):
            start = CPU()
            if side == 0:
                assemble(request)
                ours += CPU() - start
            else:
                build_prompt_from_silly_tavern(params)
                theirs += CPU() - start
    return ours, theirs


_FIRST_OURS = """
import json, sys, time
request = json.loads(sys.stdin.read())
start = time.perf_counter()
from assembly import assemble
assemble(request)
print((time.perf_counter() - start) * 1000)
"""

_FIRST_THEIRS = """
import json, sys, time
sys.path.insert(0, {repo!r})
from bench.peers import _peer_params
params = _peer_params(json.loads(sys.stdin.read()))
start = time.perf_counter()
from fast_tavern import build_prompt_from_silly_tavern
build_prompt_from_silly_tavern(params)
print((time.perf_counter() - start) * 1000)
"""


def _first_request(code: str, text: str) -> float:
    """Wall milliseconds from the first import to the first answer in a new interpreter, the modules' bytecode
    cached beforehand as an installed or running server has it (an untimed run writes it, even where the
    environment says PYTHONDONTWRITEBYTECODE)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, cwd=REPO, env=env,
                   timeout=120, check=True)
    done = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=120, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def _series_table() -> Table:
    table = Table("the work users make: every request a new dict (builtin-st, default preset, card, persona, "
                  f"{WORLDBOOK} constant world book entries)",
                  ["work", "requests", "fast-tavern ms", "assemble ms", "ratio", "runs' ratios", "target",
                   "verdict"])
    try:
        import fast_tavern  # noqa: F401
    except ImportError:
        table.notes.append("fast-tavern is not installed: pip install -e '.[bench]' (make bench does).")
        return table
    for label, series, target in (("growing chat, turn by turn", _growing_chat, GROWING_TARGET),
                                  (f"{SESSIONS} sessions, settings differ", _sessions, SESSIONS_TARGET)):
        runs = [_time_series(series(run)) for run in range(SERIES_RUNS)]
        ours, theirs = statistics.median([o for o, _ in runs]), statistics.median([t for _, t in runs])
        ratios = [o / t for o, t in runs]
        ratio = statistics.median(ratios)
        table.add(label, TURNS if series is _growing_chat else SESSIONS, f"{theirs * 1000:.1f}",
                  f"{ours * 1000:.1f}", f"x{ratio:.2f}",
                  " / ".join(f"x{r:.2f}" for r in ratios), f"<= x{target:g}", "met" if ratio <= target else "NOT MET")
    table.notes.append(f"CPU time summed over the series, the two engines alternating request by request; the JSON "
                       f"text is decoded outside the timing; {SERIES_RUNS} runs, the median shown and each run's "
                       "ratio beside it. The tokenizer is loaded before the first series, untimed: what a process "
                       "pays once is the first-request table's.")
    table.notes.append(f"growing chat: turn n sends the chat's first n messages and the next as input (0..{TURNS - 1}"
                       f" history messages); sessions: {SESSION_HISTORY} history messages, each session with its own "
                       "names, main prompt, persona and reply length. Each run has a chat and sessions of its own, so "
                       "no run finds the token counts of an earlier one (the card, world book and history the "
                       "sessions share are counted once, as a warm server has them).")
    return table


def _first_table() -> Table:
    table = Table("the first request of a fresh process (wall time from the first import to the answer)",
                  ["engine", "runs", "median ms", "spread ms", "target", "verdict"])
    text = json.dumps(_shared_request(SESSION_HISTORY, WORLDBOOK))
    ours = [_first_request(_FIRST_OURS, text) for _ in range(FIRST_RUNS)]
    median = statistics.median(ours)
    table.add("assemble()", FIRST_RUNS, f"{median:.0f}", f"{min(ours):.0f}-{max(ours):.0f}",
              f"<= {FIRST_TARGET_MS:g} ms", "met" if median <= FIRST_TARGET_MS else "NOT MET")
    try:
        theirs = [_first_request(_FIRST_THEIRS.format(repo=str(REPO)), text) for _ in range(FIRST_RUNS)]
    except subprocess.CalledProcessError:
        table.notes.append("fast-tavern is not installed: its first request is not timed.")
    else:
        table.add("fast-tavern", FIRST_RUNS, f"{statistics.median(theirs):.0f}",
                  f"{min(theirs):.0f}-{max(theirs):.0f}", "-", "-")
    table.notes.append(f"a new interpreter per run; {SESSION_HISTORY} history messages; imports, tokenizer files and "
                       "patterns loaded on the way are part of the figure. The modules' bytecode is cached first (an "
                       "untimed run), as a deployed server has it: a checkout run with PYTHONDONTWRITEBYTECODE and no "
                       "__pycache__ compiles the engine's modules at every start (about 85 ms more).")
    return table


def run() -> list[Table]:
    started = time.perf_counter()
    tables = [_series_table(), _first_table()]
    tables[-1].notes.append(f"section wall time {time.perf_counter() - started:.1f} s")
    return tables
