"""The values of logical assembly (assembly.logical): its result, and the state its steps share while one request is
assembled (the rules' entries, the slots references open, what is claimed, emitted and decided)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assembly.blocks import Block, Node
from assembly.macros import MacroContext

# The host's own messages (reference A.10.1): they keep their roles and are never placed by hand.
HOST_KINDS = frozenset({"native-system", "history", "input"})


@dataclass(frozen=True)
class LogicalResult:
    nodes: list[Node]
    diagnostics: list[dict[str, Any]]
    position_decisions: list[dict[str, Any]]
    slots: list[dict[str, Any]]
    adaptive: bool
    rules: list[dict[str, Any]]  # every rule of the strategy, in order, disabled ones and controls included
    outlet_blocks: list[dict[str, Any]]
    world_info: Any = None
    regexed_chat: Any = None  # the chat through SillyTavern's regex scripts, when the world info scan read it


@dataclass(slots=True)
class Entry:
    rule: dict[str, Any]
    index: int
    blocks: list[Block]


@dataclass(slots=True)
class Slot:
    id: str
    owner: str
    owner_rule_id: str
    authored_role: str
    lock: bool


@dataclass(slots=True)
class State:
    strategy: dict[str, Any]
    backend: str
    placement: str
    layout: dict[str, Any] | None
    adaptive: bool
    list_placement: bool
    priority: tuple[str, ...]
    settings: dict[str, dict[str, Any]]
    entries: dict[str, Entry]  # by source id: the rule that owns the source
    rule_entries: list[Entry]
    diagnostics: list[dict[str, Any]]
    macro_ctx: MacroContext
    conversation: dict[str, list[dict[str, Any]]]  # messages by native source: history, input, the host's surface
    claimed_by: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    emitted: set[tuple[str, str]] = field(default_factory=set)
    placed: set[tuple[str, str]] = field(default_factory=set)  # emitted at their own place, not inside a macro
    decisions: list[dict[str, Any]] = field(default_factory=list)
    slots: list[dict[str, Any]] = field(default_factory=list)
    unavailable_reported: set[str] = field(default_factory=set)
    targets_cache: dict[tuple[str, str], list[Block]] = field(default_factory=dict)

    rank: dict[str, int] = field(init=False)  # each stage's place in `priority`
    # the priority questions blocks ask, answered once for the request
    default_over_preset: bool = field(init=False)
    resource_over_preset: bool = field(init=False)
    default_over_resource: bool = field(init=False)
    preset_over_resource: bool = field(init=False)

    def __post_init__(self) -> None:
        self.rank = {stage: i for i, stage in enumerate(self.priority)}
        self.default_over_preset = self.beats("default", "preset")
        self.resource_over_preset = self.beats("resource", "preset")
        self.default_over_resource = self.beats("default", "resource")
        self.preset_over_resource = self.beats("preset", "resource")

    def beats(self, candidate: str, other: str) -> bool:
        rank = self.rank
        return rank.get(candidate, -1) < rank.get(other, -1)

    def setting(self, block: Block) -> dict[str, Any] | None:
        if not self.settings:  # most strategies place nothing by hand
            return None
        return self.settings.get(f"{block.source}#{block.position_id}")

    def position_enabled(self, block: Block) -> bool:
        if not self.settings or block.type == "reference" or block.source in ("history", "input"):
            return True
        setting = self.settings.get(f"{block.source}#{block.position_id}")
        return not (setting is not None and setting.get("enabled") is False)

    def user_placed(self, block: Block) -> bool:
        if not self.settings:
            return False
        setting = self.settings.get(f"{block.source}#{block.position_id}")
        return (block.type != "reference" and setting is not None and setting.get("placement") == "list"
                and setting.get("enabled", True) and block.source not in HOST_KINDS)

    def prefer_source(self, block: Block) -> bool:
        if block.type == "native" or block.source not in self.entries:
            return False
        if self.default_over_preset:
            return True
        if not (self.resource_over_preset and self.layout):
            return False
        return block.source == "worldbook" and block.group in ("before", "after") or block.depth is not None
