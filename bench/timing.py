"""Median wall-clock timing of a callable: a few runs, bounded by a per-measurement time budget."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    median_s: float
    runs: int

    @property
    def median_ms(self) -> float:
        return self.median_s * 1000


def measure(fn: Callable[[], Any], *, setup: Callable[[], Any] | None = None, min_runs: int = 3,
            max_runs: int = 15, budget_s: float = 1.0) -> Timing:
    """Run `fn` at least `min_runs` times and stop after `max_runs` or once `budget_s` is spent; report the median.

    `setup` runs untimed before every run (e.g. to empty a cache for a cold measurement). Garbage is collected before
    each run so one run's leftovers are not charged to the next; the collector stays on, as in real use.
    """
    samples: list[float] = []
    spent = 0.0
    while len(samples) < max_runs and (len(samples) < min_runs or spent < budget_s):
        if setup is not None:
            setup()
        gc.collect()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        samples.append(elapsed)
        spent += elapsed
    return Timing(median_s=statistics.median(samples), runs=len(samples))
