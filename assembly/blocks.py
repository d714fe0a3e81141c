"""The logical data model between sources and backends: blocks (what a source offers) and nodes (what is emitted).

A source turns one resource (a preset, a character card, a world book, the conversation) into blocks of three types
(reference A.1): `text`, `native` (ids of existing conversation messages) and `reference` (a slot that pulls blocks of
another source into its own place). Logical assembly turns blocks into nodes: one node per message of the request, each
remembering why it is where it is.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from typing import Any, Literal, NamedTuple

BlockType = Literal["text", "native", "reference"]


class Block(NamedTuple):
    """What a source offers (immutable: a typed tuple, made without a setattr per field; `_replace` makes another)."""

    id: str
    source: str  # source id = the rule kind that resolves it (preset, character, worldbook, history, ...)
    type: BlockType
    text: str = ""
    role: str | None = None  # authored role; None means "the rule decides"
    name: str = ""
    field: str | None = None  # character field, prompt identifier, ...
    group: str | None = None  # world book position group, reference group
    position_id: str = "content"
    depth: int | None = None
    order: int = 100
    message_ids: tuple[str, ...] = ()
    # reference blocks: which blocks of which source they pull in
    target_source: str | None = None
    target_fields: tuple[str, ...] | None = None
    target_group: str | None = None
    honor_enabled: bool = True
    # reference-only blocks are emitted only through a reference (card system prompt, post-history instructions)
    reference_only: bool = False
    lock: bool = True  # a slot's targets are locked unless the reference says otherwise
    trust: str = "operator"
    resource_id: str | None = None
    activation: str | None = None  # world book: why the entry is active
    macro_claims: tuple[str, ...] = ()  # resource macros in the text ({{description}} ...)
    redirect_source: str | None = None  # jailbreak -> phi in module placement (reference A.12)
    anchor: bool = False  # an empty text anchor (author's note marker) that emits nothing itself
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def field_claims(self) -> tuple[str, ...]:
        """The card fields the block replaces (a preset prompt overriding one): most blocks carry no extra at all."""
        for key, value in self.extra:  # read in place: a dict of the extras per call cost more than the few pairs
            if key == "field_claims":
                return value  # type: ignore[no-any-return]
        return ()


# One empty list for every node that takes nothing in (a history message): a list per node was a fifth of the
# objects the collector tracked in a long request. Never mutated: code that adds children assigns a new list.
NO_CHILDREN: list[dict[str, Any]] = []


@dataclass(slots=True, eq=False)  # nodes are compared by identity: field-wise equality made ordering quadratic
class Node:
    """One logical message. Mutable while assembly runs; frozen into the result's pydantic model at the end."""

    id: str
    rule_id: str
    module: str
    name: str
    role: str
    original_role: str
    text: str
    trust: str
    block: Block | None = None
    field: str | None = None
    message: dict[str, Any] | None = None  # native messages: the conversation message itself
    slot_id: str | None = None
    slot_owner: str | None = None
    slot_owner_rule_id: str | None = None
    authored_role: str | None = None
    locked: bool = False
    lock_reason: str | None = None
    position_decision: str = "source"
    position_id: str = "content"
    depth: int | None = None
    requested_depth: int | None = None
    order: int = 100
    lifetime: str = "request"
    delivery: str | None = None
    region: str | None = None
    native_placement: str | None = None  # native: before-input / after-input
    native_delivery: str | None = None  # native: context / pre-step
    native_depth_anchor: str | None = None
    adjusted_for_tools: bool = False
    children: list[dict[str, Any]] = dataclass_field(default_factory=list)
    activation: str | None = None
    request_index: int | None = None
    original_slot_id: str | None = None
    placement_rule_id: str | None = None  # the rule whose place and delivery it takes (jailbreak -> phi), if not its own

    @property
    def native(self) -> bool:
        return self.message is not None

    @property
    def source_id(self) -> str:
        return self.block.source if self.block else self.module



# Every field of a node in field order: `Node(*node_values(node))` makes another like it. The getter itself, not a
# function around it: the build copies every node of a long chat through it.
node_values: Callable[[Node], tuple[Any, ...]] = operator.attrgetter(*(f.name for f in fields(Node)))
