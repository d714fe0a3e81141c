"""World info results: what the scan answers for every entry of a book, active (and why) or skipped (and why).

Every model is frozen and JSON-ready; `WorldInfoActivation` is what `worldinfo.activate_world_info` returns.
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assembly.reading import Role
from assembly.sillytavern.vocabulary import SelectiveLogic, WorldPosition
from assembly.sillytavern.worldinfo_timed import WorldState


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MatchSource(_Model):
    """Where a key was found in the scan buffer (the newest occurrence when several)."""

    kind: Literal["message", "recursion", "scan_data", "injection"]
    index: int | None = None  # message: index in `chat` (oldest = 0); injection: index in `scan_injections`
    uid: int | str | None = None  # recursion: the active entry whose content holds the key
    field: str | None = None  # scan_data: persona_description, character_description, ...
    # message: the scanned message's `id` when the chat gave one (the request's conversation message), so a reader
    # can name it as the request does; left out of the JSON when absent (older JSON as it was)
    message_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


class ActivationReason(_Model):
    kind: Literal["all", "constant", "decorator", "key", "secondary", "recursion", "sticky"]
    message: str
    scan_pass: int = 1  # 1 = the first scan; later passes are recursion, delay levels or min-activation passes
    key: str | None = None  # the primary key that matched, as written in the entry
    matched_in: MatchSource | None = None
    selective_logic: SelectiveLogic | None = None  # set when secondary keys took part
    secondary_keys: tuple[str, ...] = ()  # the secondary keys found in the buffer
    probability: int | None = None  # the entry's chance when a roll was due (the preview passed it)
    roll: float | None = Field(default=None, exclude_if=lambda value: value is None)  # seeded: the roll drawn


SkipKind = Literal[
    "disabled", "trigger", "delayed", "cooldown", "delayed_until_recursion", "recursion_excluded", "decorator", "no_keys",
    "no_match", "secondary_failed", "group_lost", "probability", "over_budget",
]


class SkipReason(_Model):
    kind: SkipKind
    message: str
    scan_pass: int = 1  # the pass that decided it
    key: str | None = None  # the primary key that matched (secondary_failed, group_lost, probability, over_budget)
    matched_in: MatchSource | None = None
    group: str | None = None  # group_lost: the inclusion group
    winner: int | str | None = None  # group_lost: the entry that won it (None: it was won in an earlier pass)
    probability: int | None = None  # probability: the entry's chance; unseeded, the roll is PREVIEW_ROLL
    roll: float | None = Field(default=None, exclude_if=lambda value: value is None)  # seeded: the roll drawn
    budget: int | None = None  # over_budget: the budget and the tokens the entry would have brought it to
    tokens: int | None = None


class ActiveEntry(_Model):
    uid: int | str
    comment: str
    position: WorldPosition
    order: int
    depth: int | None
    role: Role
    outlet_name: str
    content: str  # macros expanded, decorator lines removed: the text SillyTavern places
    activation_index: int  # 0 = activated first; equal orders are emitted later-activated first (§11.4)
    reason: ActivationReason


class SkippedEntry(_Model):
    uid: int | str
    comment: str
    position: WorldPosition
    order: int
    reason: SkipReason


class WorldInfoBudget(_Model):
    max_context: int
    percent: int
    cap: int
    limit: int  # round(max_context * percent / 100) or 1, then min(limit, cap) when cap > 0
    used: int  # the active contents, each followed by "\n", counted as one system message (as the budget check does)
    overflowed: bool


class WorldInfoActivation(_Model):
    """Every entry of the book exactly once: in `active` (emission order, per position in SillyTavern's numeric
    position order 0..7) or in `skipped` (book order)."""

    mode: Literal["all", "keywords"]
    active: tuple[ActiveEntry, ...]
    skipped: tuple[SkippedEntry, ...]
    scan_passes: int
    budget: WorldInfoBudget | None  # None for activation "all"
    notes: tuple[str, ...] = ()  # features present in the book that the preview does not evaluate
    pattern_limits: tuple[dict[str, Any], ...] = ()  # ST_PATTERN_LIMIT diagnostics: regex keys skipped (limits)
    # keywords: the timed effects after this generation (SillyTavern's chat_metadata.timedWorldInfo), to carry
    # into the next one as resources.world_state
    world_state: WorldState | None = Field(default=None, exclude_if=lambda value: value is None)
