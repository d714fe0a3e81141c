"""Whole-request assembly (engine.md §1): `assemble(request)` on generated chat turns at growing sizes.

quality.md asks for the median assemble time as history (10 / 100 / 1,000 / 10,000 messages), world book (10 / 100 /
1,000 entries) and preset (10 / 100 prompts) grow, tokens counted per second, and the ratio of assemble time (counting
included) to a bare tiktoken encode of the same output text. Targets: cost grows linearly, and the realistic request
(200 history messages, 300 world book entries, the default preset) assembles in under 20 ms with warm token caches.

Each series grows one input and holds the others; a last series grows history beside a large world book, so a cost
that multiplies the two (depth entries x history) shows up. Rows are warm (the token cache filled by one untimed run)
except the realistic table's cold rows.
"""

from __future__ import annotations

from bench.fixtures import DEFAULT_PRESET_PROMPTS, assemble_request, character_card, chat_history
from bench.report import Table, format_rate
from bench.timing import CPU, Timing, measure, measure_pair

TITLE = "assemble"
STRATEGIES = ("builtin-st", "builtin-native-slots")
HISTORY_SIZES = (10, 100, 1_000, 10_000)
WORLDBOOK_SIZES = (10, 100, 1_000)
PRESET_SIZES = (10, 100)
# Held fixed while another input grows.
BASE_HISTORY, BASE_WORLDBOOK = 100, 10
PRESET_SERIES_WORLDBOOK = 100
CROSS_WORLDBOOK, CROSS_HISTORY_SIZES = 1_000, (1_000, 10_000)
REALISTIC = {"history": 200, "worldbook": 300, "prompts": DEFAULT_PRESET_PROMPTS}
REALISTIC_TARGET_MS = 20.0
# Per-item cost may grow by this factor per step before we call the growth not linear (as bench.placement does).
LINEAR_SLACK = 2.0
# Requests with this many items or more get fewer timed runs (two, then one), to keep the section under a minute on
# 2 cores; the runs column shows how many each median took.
LARGE_ITEMS, HUGE_ITEMS = 2_000, 10_000

GROWTH_COLUMNS = ["strategy", "history", "world book", "prompts", "runs", "median ms", "us/item", "tokens", "tokens/s",
                  "vs bare encode", "growth", "target"]


class _Case:
    """One request, assembled once untimed (checked, and the token cache filled), then timed."""

    def __init__(self, strategy: str, *, history: int, worldbook: int, prompts: int):
        from assembly import assemble
        from assembly.tokens import get_encoding

        self.strategy, self.history, self.worldbook, self.prompts = strategy, history, worldbook, prompts
        self.items = history + worldbook + prompts
        self.request = assemble_request(strategy, history=history, worldbook=worldbook, prompts=prompts)
        result = assemble(self.request)
        self.contents = [message.content for message in result.request.messages]
        self.encoder = get_encoding(result.tokens.tokenizer)
        self.tokens = result.tokens.total
        self._check(result)

    def _check(self, result) -> None:
        # A request that lost messages or entries would time fast and mean nothing.
        label = f"{self.strategy} history {self.history} world book {self.worldbook} prompts {self.prompts}"
        delivered = sum(1 for m in result.request.messages if m.delivery == "history")
        if delivered != self.history:
            raise AssertionError(f"{label}: {delivered} history messages in the request, expected {self.history}")
        # Every entry's text reaches a world book node (one node each, or merged ones).
        lore = "\n".join(n.text for n in result.nodes if n.module == "worldbook")
        missing = [e["uid"] for e in self.request["resources"]["worldbook"]["entries"] if e["content"] not in lore]
        if missing:
            raise AssertionError(f"{label}: world book entries {missing[:5]} are not in the result")
        bare_tokens = sum(len(self.encoder.encode(text, disallowed_special=())) for text in self.contents)
        if bare_tokens != self.tokens:
            raise AssertionError(f"{label}: result counts {self.tokens} tokens, a bare encode gives {bare_tokens}")

    def assemble(self) -> None:
        from assembly import assemble

        assemble(self.request)

    def bare_encode(self) -> None:
        for text in self.contents:
            self.encoder.encode(text, disallowed_special=())

    def time(self, *, cold: bool = False) -> tuple[Timing, Timing]:
        from assembly.tokens import clear_token_cache

        large = self.items >= LARGE_ITEMS
        runs = 1 if self.items >= HUGE_ITEMS else 2 if large else 3
        if not cold:  # CPU time, assemble and the bare encode in alternating runs (bench.timing)
            bare, timing = measure_pair(self.bare_encode, self.assemble, min_runs=runs,
                                        max_runs=runs if large else 15, budget_s=0.6)
            return timing, bare
        bare = measure(self.bare_encode, min_runs=1 if large else 3, max_runs=2 if large else 15, budget_s=0.3,
                       clock=CPU)
        timing = measure(self.assemble, setup=clear_token_cache, min_runs=runs, max_runs=runs if large else 15,
                         budget_s=0.6, clock=CPU)
        self.assemble()  # leave the cache warm for whatever runs next
        return timing, bare


def _figures(case: _Case, timing: Timing, bare: Timing) -> list[str]:
    return [str(timing.runs), f"{timing.median_ms:.2f}", f"{timing.median_s / case.items * 1e6:.1f}",
            f"{case.tokens:,}", format_rate(case.tokens, timing.median_s), f"x{timing.median_s / bare.median_s:.1f}"]


def _growth(previous: tuple[int, float] | None, items: int, seconds: float) -> str:
    if previous is None:
        return "-"
    previous_items, previous_s = previous
    per_item_ratio = (seconds / items) / (previous_s / previous_items)
    verdict = "linear" if per_item_ratio <= LINEAR_SLACK else "not linear"
    return f"{verdict} (x{seconds / previous_s:.1f} time, x{per_item_ratio:.1f}/item)"


def _series(title: str, sizes: list[dict[str, int]], timings: dict[tuple, Timing]) -> Table:
    """One row per size and strategy; every timing is also kept in `timings` by (strategy, history, world book,
    prompts) for the marginal-cost table."""
    table = Table(title, list(GROWTH_COLUMNS))
    for strategy in STRATEGIES:
        previous: tuple[int, float] | None = None
        for size in sizes:
            case = _Case(strategy, **size)
            timing, bare = case.time()
            timings[(strategy, case.history, case.worldbook, case.prompts)] = timing
            table.add(strategy, f"{case.history:,}", f"{case.worldbook:,}", case.prompts, *_figures(case, timing, bare),
                      _growth(previous, case.items, timing.median_s), "linear")
            previous = (case.items, timing.median_s)
    return table


def _marginal(timings: dict[tuple, Timing]) -> Table:
    """What each added history message costs beside a small and a large world book. With linear (additive) cost it
    does not depend on the world book's size; work that pairs every depth entry with every message makes it grow."""
    small, large = CROSS_HISTORY_SIZES
    added = large - small
    table = Table(
        f"cost of {added:,} more history messages ({small:,} -> {large:,}) beside {BASE_WORLDBOOK} and "
        f"{CROSS_WORLDBOOK:,} world book entries (warm token cache)",
        ["strategy", "world book", f"ms at {small:,}", f"ms at {large:,}", "us per added message",
         f"vs world book {BASE_WORLDBOOK}", "growth", "target"],
    )
    for strategy in STRATEGIES:
        baseline_us: float | None = None
        for worldbook in (BASE_WORLDBOOK, CROSS_WORLDBOOK):
            at_small = timings[(strategy, small, worldbook, DEFAULT_PRESET_PROMPTS)]
            at_large = timings[(strategy, large, worldbook, DEFAULT_PRESET_PROMPTS)]
            per_message_us = (at_large.median_s - at_small.median_s) / added * 1e6
            if baseline_us is None:
                baseline_us = per_message_us
                ratio_cell, growth = "-", "-"
            else:
                ratio = per_message_us / baseline_us if baseline_us > 0 else float("inf")
                ratio_cell = f"x{ratio:.1f}"
                growth = "linear" if ratio <= LINEAR_SLACK else "not linear"
            table.add(strategy, f"{worldbook:,}", f"{at_small.median_ms:.2f}", f"{at_large.median_ms:.2f}",
                      f"{per_message_us:.1f}", ratio_cell, growth, "linear (same cost per message)")
    return table


def _realistic() -> Table:
    table = Table(
        f"realistic request: {REALISTIC['history']} history messages, {REALISTIC['worldbook']} world book entries, "
        f"the default preset ({REALISTIC['prompts']} prompts)",
        ["strategy", "token cache", "runs", "median ms", "tokens", "tokens/s", "vs bare encode", "target", "verdict"],
    )
    for strategy in STRATEGIES:
        case = _Case(strategy, **REALISTIC)
        for cold in (False, True):
            timing, bare = case.time(cold=cold)
            figures = _figures(case, timing, bare)
            if cold:
                target, verdict = "-", "-"
            else:
                target = f"< {REALISTIC_TARGET_MS:g} ms warm"
                verdict = "met" if timing.median_ms < REALISTIC_TARGET_MS else "NOT MET"
            table.add(strategy, "cold" if cold else "warm", figures[0], figures[1], *figures[3:], target, verdict)
    return table


TEXT_HISTORY_SIZES = (100, 1_000, 10_000)


def _text_completion() -> Table:
    """Text completion (`"api": "text"`, text-completion.md) as its history grows: the chat is formatted and filled
    newest first into one prompt under a context roomy enough for all of it, so every message is kept."""
    from assembly import assemble

    table = Table("text completion: history growth (a context that holds the whole chat)",
                  ["history", "runs", "median ms", "us/message", "prompt chars", "growth", "target"])
    previous: tuple[int, float] | None = None
    for size in TEXT_HISTORY_SIZES:
        request = {"api": "text", "strategy": "builtin-st", "names": {"user": "Dana", "char": "Seraphina"},
                   "resources": {"character": character_card(), "text_settings": {"max_context": 50_000_000}},
                   "conversation": {"history": chat_history(size),
                                    "input": [{"role": "user", "content": "And what waits past the north gate?"}]}}
        prompt = assemble(request).request.prompt or ""
        missing = [m["content"] for m in request["conversation"]["history"][:1] if m["content"] not in prompt]
        if missing:  # a fill that dropped the oldest message would time fast and mean nothing
            raise AssertionError(f"text completion, history {size}: the oldest message is not in the prompt")
        timing = measure(lambda request=request: assemble(request), min_runs=1 if size >= HUGE_ITEMS else 3,
                         max_runs=2 if size >= HUGE_ITEMS else 10, budget_s=0.6, clock=CPU)
        table.add(f"{size:,}", str(timing.runs), f"{timing.median_ms:.2f}", f"{timing.median_s / size * 1e6:.1f}",
                  f"{len(prompt):,}", _growth(previous, size, timing.median_s), "linear")
        previous = (size, timing.median_s)
    table.notes.append("CPU time; the default text settings and templates, a card, no world book.")
    return table


BUDGET_ENTRIES = (150, 300)


def _world_info_budget() -> Table:
    """The world info budget where it binds late: constant entries whose bytes pass a 25% budget of a 128k context
    long before their tokens reach it, so each pass checks the budget past the byte ceiling (engine.md §5,
    sillytavern.md §7.4), in every family."""
    from assembly import assemble
    from assembly.tokens import ENCODINGS, clear_token_cache

    table = Table("world info budget past the byte ceiling (constant entries, 128k context, 25% budget, cold)",
                  ["tokenizer", "entries", "runs", "median ms", "active", "growth", "target"])
    line = "the harbour wall holds the tide back at night " * 10
    for encoding in ENCODINGS:
        previous: tuple[int, float] | None = None
        for size in BUDGET_ENTRIES:
            entries = {str(i): {"uid": i, "key": [f"kw{i}"], "constant": True, "content": f"Entry {i}: {line}",
                                "position": 0, "order": i} for i in range(size)}
            request = {"strategy": "builtin-st", "tokenizer": encoding, "host": {"core_available": True},
                       "resources": {"preset": {"prompts": [{"identifier": "worldInfoBefore", "marker": True},
                                                            {"identifier": "chatHistory", "marker": True}],
                                                "openai_max_context": 128_000},
                                     "worldbook": {"entries": entries, "activation": "keywords",
                                                   "world_info_budget": 25}},
                       "conversation": {"history": [], "input": [{"role": "user", "content": "Hello."}]}}
            active = len(assemble(request).world_info.active)
            timing = measure(lambda request=request: assemble(request), setup=clear_token_cache, min_runs=2,
                             max_runs=5, budget_s=0.6, clock=CPU)
            table.add(encoding, str(size), str(timing.runs), f"{timing.median_ms:.1f}", str(active),
                      _growth(previous, size, timing.median_s), "linear")
            previous = (size, timing.median_s)
    table.notes.append("CPU time with the token cache emptied before each run (every entry's text counted anew); "
                       "the entries' bytes pass the budget at about 70 entries, their tokens near 300 (Mistral v3's at 296).")
    return table


def run() -> list[Table]:
    from assembly.tokens import clear_token_cache

    timings: dict[tuple, Timing] = {}
    history = _series(f"history growth (world book {BASE_WORLDBOOK}, default preset; warm token cache)",
                      [{"history": n, "worldbook": BASE_WORLDBOOK, "prompts": DEFAULT_PRESET_PROMPTS}
                       for n in HISTORY_SIZES], timings)
    worldbook = _series(f"world book growth (history {BASE_HISTORY}, default preset; warm token cache)",
                        [{"history": BASE_HISTORY, "worldbook": n, "prompts": DEFAULT_PRESET_PROMPTS}
                         for n in WORLDBOOK_SIZES], timings)
    cross = _series(f"history growth beside {CROSS_WORLDBOOK:,} world book entries (warm token cache)",
                    [{"history": n, "worldbook": CROSS_WORLDBOOK, "prompts": DEFAULT_PRESET_PROMPTS}
                     for n in CROSS_HISTORY_SIZES], timings)
    marginal = _marginal(timings)
    preset = _series(f"preset growth (history {BASE_HISTORY}, world book {PRESET_SERIES_WORLDBOOK}; warm token cache)",
                     [{"history": BASE_HISTORY, "worldbook": PRESET_SERIES_WORLDBOOK, "prompts": n}
                      for n in PRESET_SIZES], timings)
    realistic = _realistic()
    text = _text_completion()
    budget = _world_info_budget()
    clear_token_cache()

    history.notes.append("CPU time of this process (the machine is shared); warm rows alternate assemble and the bare "
                         "encode run by run.")
    history.notes.append("an item is one history message, world book entry or preset prompt; us/item = median / items.")
    history.notes.append(f"growth compares each row with the one above (same strategy): 'linear' while the per-item "
                         f"cost grows at most x{LINEAR_SLACK:g}.")
    history.notes.append("tokens: the request's token total (o200k_base); tokens/s = tokens / median assemble time.")
    history.notes.append("vs bare encode: median assemble time / a bare tiktoken encode of the request messages' "
                         "contents; quality.md asks for the ratio and sets no target for it.")
    worldbook.notes.append("entries cycle before / after / at_depth (depths 0..4), all active (activation 'all').")
    cross.notes.append(f"{CROSS_WORLDBOOK:,} entries ({CROSS_WORLDBOOK // 3:,} at depth) while history grows "
                       "tenfold; the per-item growth column cannot see a cross term here (the table below can).")
    marginal.notes.append(f"us per added message = (ms at {CROSS_HISTORY_SIZES[1]:,} - ms at "
                          f"{CROSS_HISTORY_SIZES[0]:,}) / messages added; 'linear' while it stays within "
                          f"x{LINEAR_SLACK:g} of the cost beside {BASE_WORLDBOOK} entries.")
    preset.notes.append("10 prompts: the default's markers, main and jailbreak; 100: the default plus 88 custom "
                        "prompts, every fourth in-chat (depths 0..4).")
    realistic.notes.append("preset shaped like SillyTavern's default (main, nsfw, jailbreak, enhanceDefinitions off, "
                           "eight markers), a card with description/personality/scenario/examples, a persona.")
    realistic.notes.append("cold: the token cache emptied before every run; warm: filled by an earlier run.")
    return [history, worldbook, cross, marginal, preset, realistic, text, budget]
