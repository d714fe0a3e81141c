"""Placement primitive (engine.md §2): `place_context_blocks` at 100 / 1,000 / 10,000 messages and as many blocks.

quality.md's target is linear growth: the cost per item (message or block) should stay flat as sizes grow tenfold.
"""

from __future__ import annotations

from bench.fixtures import placement_case
from bench.report import Table
from bench.timing import measure

TITLE = "placement"
SIZES = (100, 1_000, 10_000)
# Per-item cost may grow by this factor per tenfold size before we call the growth more than linear.
LINEAR_SLACK = 2.0


def run() -> list[Table]:
    from assembly.placement import place_context_blocks

    table = Table(
        "place_context_blocks (median of runs; an item is one message or one block)",
        ["messages", "blocks", "runs", "median ms", "us/item", "time vs previous", "growth", "target"],
    )
    previous: tuple[int, float] | None = None
    for size in SIZES:
        messages, layout, blocks = placement_case(size)
        result = place_context_blocks(messages, layout, blocks)
        # A broken primitive must not produce a fast-looking figure: every block is placed exactly once.
        if len(result.placements) != len(blocks):
            raise AssertionError(f"placement at {size}: {len(result.placements)} records for {len(blocks)} blocks")
        timing = measure(lambda m=messages, la=layout, b=blocks: place_context_blocks(m, la, b), budget_s=1.5)
        items = len(messages) + len(blocks)
        per_item_us = timing.median_s / items * 1e6
        if previous is None:
            step, growth = "-", "-"
        else:
            previous_size, previous_s = previous
            factor = size / previous_size
            step = f"x{timing.median_s / previous_s:.1f} for x{factor:.0f} size"
            per_item_ratio = (timing.median_s / size) / (previous_s / previous_size)
            growth = "linear" if per_item_ratio <= LINEAR_SLACK else f"ABOVE LINEAR (per item x{per_item_ratio:.1f})"
        table.add(f"{len(messages):,}", f"{len(blocks):,}", timing.runs, f"{timing.median_ms:.2f}",
                  f"{per_item_us:.2f}", step, growth, "linear")
        previous = (size, timing.median_s)
    table.notes.append("blocks: half at_depth (some deeper than the history), the rest spread over the other seven "
                       "positions; default hooks (message dicts, str content).")
    table.notes.append(f"growth is 'linear' while the per-item cost grows at most x{LINEAR_SLACK:g} per tenfold size.")
    return [table]
