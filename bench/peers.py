"""The engine against its floor: warm `assemble()` vs a bare tiktoken encode of its own output; and the inputs
`bench.users` gives `assemble()` and the Python peer fast-tavern alike.

fast-tavern does less (no placement, positions, layout or result models), so the shared input is what it understands:
SillyTavern's default-shaped preset, a character card, a chat history and a world book whose entries are all constant
(both engines activate them, no keyword scan); `bench.users` times the two on it. Target here: warm assemble at most
x1.5 a bare encode at 200 / 2,000 / 10,000 messages; linear growth. Both sides of a ratio are timed in alternating
runs on the process's CPU clock (bench.timing.measure_pair), so the load of a shared machine neither favours nor hurts
one side; the spread is the fastest and slowest run.
"""

from __future__ import annotations

from bench.fixtures import DEFAULT_PRESET_PROMPTS, assemble_request
from bench.report import Table
from bench.timing import Timing, measure_pair

TITLE = "peers"
STRATEGY = "builtin-st"
FLOOR_SIZES = (200, 2_000, 10_000)
FLOOR_WORLDBOOK = 10
FLOOR_TARGET = 1.5  # warm assemble / bare encode of its output
LINEAR_SLACK = 2.0  # as bench.assemble: per-message cost may grow this much per step
# fast-tavern's world book positions for ours (0 before the card, 1 after it, 4 at depth).
_PEER_POSITIONS = {"before": 0, "after": 1, "at_depth": 4}


def _shared_request(history: int, worldbook: int) -> dict:
    """Our request with every world book entry constant, activated by the engine itself (no `activation: all`)."""
    request = assemble_request(STRATEGY, history=history, worldbook=worldbook, prompts=DEFAULT_PRESET_PROMPTS)
    book = request["resources"]["worldbook"]
    book.pop("activation", None)
    for entry in book["entries"]:
        entry.update(constant=True, key=[])
    return request


def _peer_params(request: dict) -> dict:
    """The same request in fast-tavern's SillyTavern-shaped input."""
    resources, conversation = request["resources"], request["conversation"]
    entries = [{**entry, "position": _PEER_POSITIONS[entry["position"]]} for entry in resources["worldbook"]["entries"]]
    history = [{"role": m["role"], "content": m["content"]} for m in conversation["history"] + conversation["input"]]
    return {"preset": resources["preset"], "character": resources["character"], "globals": {"worldBooks": entries},
            "history": history, "view": "model", "outputFormat": "openai",
            "macros": {"user": request["names"]["user"], "char": request["names"]["char"]}}


def _time_pair(first, second, items: int) -> tuple[Timing, Timing]:
    large = items >= 2_000
    return measure_pair(first, second, min_runs=5 if large else 15, max_runs=7 if large else 101,
                        budget_s=1.5 if large else 0.5)


def _verdict(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "NOT MET"


def _floor_table() -> Table:
    from assembly import assemble
    from assembly.tokens import get_encoding

    table = Table(f"warm assemble() vs a bare tiktoken encode of its output ({STRATEGY}, world book "
                  f"{FLOOR_WORLDBOOK}, default preset)",
                  ["history", "runs", "assemble ms", "assemble spread", "of which GC ms", "bare encode ms", "ratio",
                   "us/message", "growth", "target", "verdict"])
    previous: tuple[int, float] | None = None
    for history in FLOOR_SIZES:
        request = assemble_request(STRATEGY, history=history, worldbook=FLOOR_WORLDBOOK)
        result = assemble(request)  # fills the token cache: the rows are warm
        contents = [m.content for m in result.request.messages]
        encoder = get_encoding(result.tokens.tokenizer)
        bare, own = _time_pair(lambda c=contents, e=encoder: [e.encode(t, disallowed_special=()) for t in c],
                               lambda r=request: assemble(r), history)
        ratio = own.median_s / bare.median_s
        growth = "-"
        if previous is not None:
            per_item = (own.median_s / history) / (previous[1] / previous[0])
            growth = f"{'linear' if per_item <= LINEAR_SLACK else 'not linear'} (x{per_item:.1f}/message)"
        previous = (history, own.median_s)
        table.add(f"{history:,}", own.runs, f"{own.median_ms:.2f}", own.spread, f"{own.gc_s * 1000:.2f}",
                  f"{bare.median_ms:.2f}", f"x{ratio:.2f}",
                  f"{own.median_s / history * 1e6:.1f}", growth, f"<= x{FLOOR_TARGET:g}, linear",
                  _verdict(ratio, FLOOR_TARGET) if growth.startswith(("-", "linear")) else "NOT MET")
    table.notes.append("bare encode: tiktoken o200k_base over the request messages' contents, nothing cached.")
    table.notes.append("of which GC ms: the median time Python's cyclic collector ran inside one assemble() run "
                       "(gc.callbacks); the engine leaves the collector's settings alone, so a long request pays "
                       "for the objects it keeps while it runs.")
    return table


def run() -> list[Table]:
    from assembly.tokens import clear_token_cache

    tables = [_floor_table()]
    clear_token_cache()
    return tables
