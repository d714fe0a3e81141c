"""Median timing of a callable: a few runs, bounded by a per-measurement time budget.

The development machine is shared (several processes on 2 cores), so the engine's sections time on the process's CPU
clock (`CPU`): another process's work does not count, as it does on the wall clock. A comparison of two callables
(`measure_pair`) alternates their runs, so a change in the machine's load falls on both sides alike.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CPU = time.process_time
WALL = time.perf_counter


@dataclass(frozen=True)
class Timing:
    median_s: float
    runs: int
    low_s: float = 0.0  # the fastest and slowest run: the spread behind the median
    high_s: float = 0.0
    gc_s: float = 0.0  # median time the collector ran inside one run (measure_pair only; 0 elsewhere)

    @property
    def median_ms(self) -> float:
        return self.median_s * 1000

    @property
    def spread(self) -> str:
        return f"{self.low_s * 1000:.2f}-{self.high_s * 1000:.2f}"


def _timing(samples: list[float], gc_samples: list[float] | None = None) -> Timing:
    return Timing(median_s=statistics.median(samples), runs=len(samples), low_s=min(samples), high_s=max(samples),
                  gc_s=statistics.median(gc_samples) if gc_samples else 0.0)


def measure(fn: Callable[[], Any], *, setup: Callable[[], Any] | None = None, min_runs: int = 3,
            max_runs: int = 15, budget_s: float = 1.0, clock: Callable[[], float] = WALL) -> Timing:
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
        start = clock()
        fn()
        elapsed = clock() - start
        samples.append(elapsed)
        spent += elapsed
    return _timing(samples)


class _CollectorClock:
    """Time the collector spends while a run is timed (gc.callbacks; the collector's settings stay as they are)."""

    def __init__(self, clock: Callable[[], float]):
        self.clock, self.total, self._started = clock, 0.0, 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self.clock()
        else:
            self.total += self.clock() - self._started


def measure_pair(first: Callable[[], Any], second: Callable[[], Any], *, min_runs: int = 5, max_runs: int = 50,
                 budget_s: float = 1.0, clock: Callable[[], float] = CPU) -> tuple[Timing, Timing]:
    """Time two callables in alternating runs (first, second, second, first, ...), each run after a collection, until
    both have `min_runs` and the budget is spent (or `max_runs`). Each Timing carries the collector's share."""
    samples: tuple[list[float], list[float]] = ([], [])
    collected: tuple[list[float], list[float]] = ([], [])
    spent = 0.0
    collector = _CollectorClock(clock)
    gc.callbacks.append(collector)
    try:
        while len(samples[0]) < max_runs and (len(samples[0]) < min_runs or spent < budget_s):
            order = (0, 1) if len(samples[0]) % 2 == 0 else (1, 0)
            for side in order:
                fn = first if side == 0 else second
                gc.collect()
                collector.total = 0.0
                start = clock()
                fn()
                elapsed = clock() - start
                samples[side].append(elapsed)
                collected[side].append(collector.total)
                spent += elapsed
    finally:
        gc.callbacks.remove(collector)
    return _timing(samples[0], collected[0]), _timing(samples[1], collected[1])
