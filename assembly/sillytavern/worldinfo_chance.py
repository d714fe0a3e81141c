"""World info chance: the probability roll and the weighted inclusion-group pick (sillytavern.md §7.3).

SillyTavern draws both from `Math.random()`. Without a seed the preview is deterministic and shows the more likely
outcome: every probability roll is taken at its middle (`PREVIEW_ROLL`, like `random() = 0.5`) and a group goes to
its member of highest weight (ties to the earlier candidate); this is what the oracle runs expect. With a seed
(`generation.seed`), the draws come from a generator seeded by the seed and the generation's turn, so one chat
session replays the same rolls and each generation of it rolls anew, with SillyTavern's rules:

* probability: `roll = random() * 100`; an entry with `use_probability` fails when `roll > probability`;
* group: `roll = random() * total weight`; the first member whose running weight reaches the roll wins.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

PREVIEW_ROLL = 50  # the probability roll at its middle (random() = 0.5 in the preview)


@dataclass
class Chance:
    seed: int | None = None
    turn: int = 0
    _draws: random.Random | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.seed is not None:
            self._draws = random.Random(f"world-info:{self.seed}:{self.turn}")

    @property
    def seeded(self) -> bool:
        return self._draws is not None

    def probability_roll(self) -> float:
        """A roll in [0, 100): the entry passes when the roll is not above its probability."""
        if self._draws is None:
            return float(PREVIEW_ROLL)
        return self._draws.random() * 100

    def group_pick(self, weights: Sequence[int]) -> tuple[int, float | None]:
        """The index of the member that wins a weighted group, and the roll (None: the preview's most likely one)."""
        if self._draws is None:
            best = max(weights)
            return weights.index(best), None
        total = sum(max(w, 0) for w in weights)
        roll = self._draws.random() * total
        running = 0
        for index, weight in enumerate(weights):
            running += max(weight, 0)
            if roll <= running:
                return index, roll
        return len(weights) - 1, roll
