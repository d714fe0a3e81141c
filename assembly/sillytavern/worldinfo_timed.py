"""World info timed effects: SillyTavern 1.18's `WorldInfoTimedEffects` (sticky, cooldown, delay), carried between
the generations of one chat in `chat_metadata.timedWorldInfo` (sillytavern.md §7.3).

The state is `{"sticky": {key: effect}, "cooldown": {key: effect}}`, key `"<world>.<uid>"`, effect
`{start, end, protected}` counted in scanned chat messages. SillyTavern also stores a hash of the entry and finds
the entry by it; the book's entries are found here by key, and the hash is read past (so an edited entry keeps its
effect, where SillyTavern would lose track of it until the effect ends). Before a scan, for sticky then cooldown, each effect:

* is dropped when the chat has not grown past its start and it is not protected (a swipe re-scans the same length);
* is dropped when its entry is gone or no longer has that effect, or when the chat reached its end; a sticky effect
  that ends starts the entry's cooldown at once (protected, so it survives a swipe);
* otherwise applies: a sticky entry activates without a key match (and wins its inclusion group, and passes its
  probability roll); an entry in cooldown does not activate unless it is also sticky.

Delay keeps no state: an entry waits while the chat has fewer messages than its `delay`. After the scan every
activated entry with `sticky` or `cooldown` starts that effect unless the state already holds one for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from assembly.reading import ImportInvalid

if TYPE_CHECKING:
    from assembly.sillytavern.models import WorldBookEntry

EFFECT_TYPES = ("sticky", "cooldown")
# The world a book without a name is keyed under (SillyTavern keys effects by the book's file name).
DEFAULT_WORLD_NAME = "harness-world"
MAX_EFFECTS = 10_000  # per type: a bound on what a carried state may hold


class TimedEffect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int  # scanned chat length when the effect began
    end: int  # start + the entry's sticky or cooldown
    protected: bool = False  # a cooldown that followed a sticky: a swipe keeps it


class WorldState(BaseModel):
    """SillyTavern's `chat_metadata.timedWorldInfo`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sticky: dict[str, TimedEffect] = Field(default_factory=dict)
    cooldown: dict[str, TimedEffect] = Field(default_factory=dict)


def _number(value: Any, where: str) -> int:
    # SillyTavern reads start / end with Number(); a value it cannot read as a number is refused here
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    digits = value.strip() if isinstance(value, str) else ""
    if digits.isascii() and digits.lstrip("-").isdigit():
        if len(digits.lstrip("-")) <= 15:  # a message count: more digits than a double holds is no count
            return int(digits)
        raise ImportInvalid(where, "a whole number of at most 15 digits", got=value, has_got=True)
    raise ImportInvalid(where, "a whole number", got=value, has_got=True)


def parse_world_state(value: Any, path: str = "world_state") -> WorldState | None:
    """The carried state as SillyTavern reads it: a missing type is empty, an effect that is not an object is
    dropped (its `ensureChatMetadata`), fields it never reads are ignored."""
    if value is None or isinstance(value, WorldState):
        return value
    if not isinstance(value, Mapping):
        raise ImportInvalid(path, "an object with sticky and cooldown", got=value, has_got=True)
    kinds: dict[str, dict[str, TimedEffect]] = {}
    for kind in EFFECT_TYPES:
        effects = value.get(kind)
        kinds[kind] = {}
        if not isinstance(effects, Mapping):
            continue
        if len(effects) > MAX_EFFECTS:
            raise ImportInvalid(f"{path}.{kind}", f"at most {MAX_EFFECTS} effects")
        for key, effect in effects.items():
            if not isinstance(effect, Mapping):
                continue
            where = f"{path}.{kind}.{key}"
            kinds[kind][str(key)] = TimedEffect(
                start=_number(effect.get("start", 0), f"{where}.start"),
                end=_number(effect.get("end", 0), f"{where}.end"), protected=bool(effect.get("protected")))
    return WorldState(**kinds)


def entry_key(world: str, entry: WorldBookEntry) -> str:
    return f"{world}.{entry.uid}"


@dataclass
class TimedEffects:
    """One scan's view of the timed effects: `check()` before the scan, `start(activated)` after it, `state()`
    the state SillyTavern keeps for the next generation."""

    entries: list[WorldBookEntry]
    world: str
    chat_length: int  # the chat world info scans (a swipe's reply left out)
    delay_length: int  # the chat entry delays count
    carried: WorldState | None = None
    sticky: dict[str, TimedEffect] = field(default_factory=dict)
    cooldown: dict[str, TimedEffect] = field(default_factory=dict)
    applied: dict[str, set[str]] = field(default_factory=lambda: {"sticky": set(), "cooldown": set()})

    def check(self) -> None:
        carried = self.carried or WorldState()
        self.sticky, self.cooldown = dict(carried.sticky), dict(carried.cooldown)
        by_key = {entry_key(self.world, e): e for e in self.entries}
        for kind in EFFECT_TYPES:
            effects = self.sticky if kind == "sticky" else self.cooldown
            for key, effect in list(effects.items()):
                entry = by_key.get(key)
                if self.chat_length <= effect.start and not effect.protected:
                    del effects[key]
                elif entry is None:
                    if self.chat_length >= effect.end:
                        del effects[key]
                elif not getattr(entry, kind):
                    del effects[key]
                elif self.chat_length >= effect.end:
                    del effects[key]
                    if kind == "sticky" and entry.cooldown:
                        self.cooldown[key] = self._effect("cooldown", entry, protected=True)
                        self.applied["cooldown"].add(key)
                else:
                    self.applied[kind].add(key)

    def _effect(self, kind: str, entry: WorldBookEntry, *, protected: bool) -> TimedEffect:
        return TimedEffect(start=self.chat_length, end=self.chat_length + int(getattr(entry, kind)),
                           protected=protected)

    def is_sticky(self, entry: WorldBookEntry) -> bool:
        return entry_key(self.world, entry) in self.applied["sticky"]

    def is_cooling(self, entry: WorldBookEntry) -> bool:
        return entry_key(self.world, entry) in self.applied["cooldown"]

    def effect(self, kind: str, entry: WorldBookEntry) -> TimedEffect | None:
        return (self.sticky if kind == "sticky" else self.cooldown).get(entry_key(self.world, entry))

    def start(self, activated: Iterable[WorldBookEntry]) -> None:
        for entry in activated:
            for kind in EFFECT_TYPES:
                effects = self.sticky if kind == "sticky" else self.cooldown
                key = entry_key(self.world, entry)
                if getattr(entry, kind) and key not in effects:
                    effects[key] = self._effect(kind, entry, protected=False)

    def state(self) -> WorldState:
        return WorldState(sticky=dict(self.sticky), cooldown=dict(self.cooldown))


def timed_skip_message(timed: TimedEffects, entry: WorldBookEntry) -> str:
    effect = timed.effect("cooldown", entry)
    if effect is None:
        return "in cooldown"
    return f"in cooldown until the chat has {effect.end} messages (it has {timed.chat_length})"
