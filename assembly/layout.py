"""Resource layout blocks and overrides (reference A.11, our design).

A layout block is a run of consecutive nodes that belong together: same rule, same resource group (a world book
position, a prompt, a character field), same slot, depth, role and region. Its key never contains the ids of the
entries active today, so an override written against "the world book's `after` group" still applies tomorrow when
other entries are active. Blocks are what the editor drags: a `free` block moves anywhere; a `slot` block follows
the preset slot that holds it unless the move detaches it; a `runtime` block (conversation, depth) never moves.
"""

from __future__ import annotations

import json
from dataclasses import replace
from json.encoder import encode_basestring
from typing import Any

from assembly.blocks import Node
from assembly.errors import AssemblyError
from assembly.results import LayoutBlock

NATIVE_PHASES = {"system": 0, "history": 1, "before-input": 2, "input": 3, "after-input:context": 4,
                 "after-input:pre-step": 5}
SLOT_PROBLEMS = ("WORLD_BOOK_SLOT_MISSING", "NATIVE_SLOTS_ABSENT", "ASSEMBLY_REFERENCE_UNAVAILABLE")


def node_region(node: Node, backend: str) -> str:
    if backend != "native":
        return "request"
    if node.module in ("history", "input"):
        return node.module
    if node.region == "system" or node.module == "native-system":
        return "system"
    return f"{node.native_placement or 'after-input'}:{node.native_delivery or 'context'}"


_KEY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # a block key as its id's JSON


def _key_text(key: tuple) -> str:
    """`_KEY_JSON(list(key))` for a block's key (`layout_blocks`), its values (text, None, whole numbers) written here:
    the encoder's own setup was most of a block's cost. A value of another type (a text's is refused by
    `encode_basestring`) goes through the encoder."""
    rule_id, module, group, slot_id, depth, role, region = key
    try:
        return (f"[{encode_basestring(rule_id)},{encode_basestring(module)},{encode_basestring(group)},"
                f"{'null' if slot_id is None else encode_basestring(slot_id)},"
                f"{'null' if depth is None else int.__repr__(depth) if type(depth) is int else _KEY_JSON(depth)},"
                f"{'null' if role is None else encode_basestring(role)},{encode_basestring(region)}]")
    except TypeError:
        return _KEY_JSON(list(key))


def layout_blocks(nodes: list[Node], backend: str) -> list[LayoutBlock]:
    """The runs of nodes that move together, with their binding and why they are where they are. A key with several
    runs names each run by its first node. Each run keeps its first node and its node ids as it is walked.

    A node's key is its group: rule, module, resource group, slot, depth, role and region. The conversation is one
    runtime block whatever its speakers: its roles are not the designer's to move."""
    native = backend == "native"
    runs: list[tuple[tuple, Node, list[str]]] = []
    counts: dict[tuple, int] = {}
    key: tuple | None = None
    node_ids: list[str] = []
    for node in nodes:
        block, depth = node.block, node.depth
        group = (block.group if block is not None and block.source == "worldbook" else None) or node.field or (
            block.id if block is not None else node.id)
        node_key = (node.rule_id, node.module, group, node.slot_id, depth if depth is not None else
                    node.requested_depth, None if node.message is not None else node.role,
                    node_region(node, backend) if native else "request")
        if node_key == key:
            node_ids.append(node.id)
        else:
            key, node_ids = node_key, [node.id]
            runs.append((key, node, node_ids))
            counts[key] = counts.get(key, 0) + 1
    return [_layout_block(key, first, node_ids, counts[key] > 1) for key, first, node_ids in runs]


def _layout_block(key: tuple, first: Node, node_ids: list[str], several: bool) -> LayoutBlock:
    """A run's block: its binding (`runtime` for the conversation, snapshots and depths; `slot` in a preset slot;
    else `free`) and its reason, from its first node."""
    region = key[-1]  # the key ends with the node's region
    if (first.message is not None or first.lifetime == "snapshot" or first.native_depth_anchor
            or first.depth is not None):
        binding, limitations = "runtime", ["RUNTIME_POSITION_FIXED"]
    else:
        binding, limitations = "slot" if first.slot_id is not None else "free", []
    if region.endswith(":context"):
        limitations.append("NATIVE_CONTEXT_REUSES_HISTORY_POSITION")
    block_id = f"block:{_key_text(key)}:run:{first.id}" if several else f"block:{_key_text(key)}"
    reason = "user-override" if first.position_decision == "user" else first.lock_reason or "source-order"
    return LayoutBlock(  # by position, in the field order: this runs once per block
        block_id, list(key), binding, binding == "free", binding == "slot", region, reason, first.slot_id,
        first.original_slot_id, limitations, node_ids)


def apply_layout_overrides(nodes: list[Node], strategy: dict[str, Any], backend: str,
                           diagnostics: list[dict[str, Any]]) -> list[Node]:
    """Move blocks as the strategy's overrides say (reference A.11 applyLayoutOverrides)."""
    layout = strategy.get("layout")
    if not layout:
        return nodes
    strict = layout.get("fallback") == "error"
    problem = next((d for d in diagnostics if d["code"] in SLOT_PROBLEMS), None)
    if strict and problem is not None:
        raise AssemblyError("LAYOUT_TARGET_MISSING", f"Resource layout target is no longer available: "
                            f"{problem['code']}", status=409, detail={"diagnostic": problem})
    for override in layout.get("overrides") or []:
        blocks = {b.id: b for b in layout_blocks(nodes, backend)}
        target, anchor = blocks.get(override["target"]), blocks.get(override["anchor"])
        if target is None or anchor is None:
            missing = "target" if target is None else "anchor"
            diagnostics.append({"code": "LAYOUT_TARGET_MISSING", **override, "missing": missing})
            if strict:
                raise AssemblyError("LAYOUT_TARGET_MISSING", f"Resource layout target is no longer available: "
                                    f"layout.overrides {missing} {override[missing]}", status=409,
                                    detail={**override, "missing": missing})
            continue
        if not target.movable and not (target.overridable and override.get("detach")):
            raise AssemblyError("ASSEMBLY_LAYOUT_UNSUPPORTED", f"This block follows a slot or a runtime anchor: "
                                f"{override['target']}", status=409, detail=dict(override))
        nodes = _move(nodes, target, anchor, override.get("side", "before"), bool(override.get("detach")))
        if backend == "native":
            _check_native_phases(nodes, override)
    return nodes


def _move(nodes: list[Node], target: LayoutBlock, anchor: LayoutBlock, side: str, detach: bool) -> list[Node]:
    """The nodes with the target block moved beside the anchor block: the moved ones are new nodes saying why."""
    moving_ids = set(target.node_ids)
    moving = [_moved(n, detach) for n in nodes if n.id in moving_ids]
    rest = [n for n in nodes if n.id not in moving_ids]
    anchor_ids = set(anchor.node_ids)
    positions = [i for i, n in enumerate(rest) if n.id in anchor_ids]
    index = positions[0] if side == "before" else positions[-1] + 1
    return rest[:index] + moving + rest[index:]


def _moved(node: Node, detach: bool) -> Node:
    if detach and node.slot_id is not None:
        return replace(node, position_decision="user", original_slot_id=node.slot_id, slot_id=None, locked=False,
                       lock_reason=None)
    return replace(node, position_decision="user")


def _check_native_phases(nodes: list[Node], override: dict[str, Any]) -> None:
    phase = 0
    for node in nodes:
        current = NATIVE_PHASES.get(node_region(node, "native"), 4)
        if current < phase:
            raise AssemblyError("ASSEMBLY_LAYOUT_UNSUPPORTED", "This move crosses a native role or delivery boundary: "
                                f"{override['target']}", status=409, detail=dict(override))
        phase = current


def with_block_move(strategy: dict[str, Any], blocks: list[LayoutBlock], target: str, anchor: str,
                    side: str = "before", detach: bool = False) -> dict[str, Any]:
    """A new strategy whose layout moves block `target` beside `anchor` (reference A.11 withBlockMove)."""
    layout = strategy.get("layout")
    if not layout:
        raise AssemblyError("ASSEMBLY_LAYOUT_UNSUPPORTED", "Explicitly adopt a resource layout policy before moving "
                            "blocks", status=409)
    by_id = {b.id: b for b in blocks}
    if target not in by_id or anchor not in by_id:
        raise AssemblyError("ASSEMBLY_LAYOUT_UNSUPPORTED", "Refresh current resources before moving this block: "
                            f"{target if target not in by_id else anchor} is not in the current preview", status=409)
    block = by_id[target]
    previous = next((o for o in layout.get("overrides") or [] if o["target"] == target), None)
    detach = detach or bool(previous and previous.get("detach"))  # a detach stays sticky
    if not block.movable and not (detach and block.overridable):
        raise AssemblyError("ASSEMBLY_LAYOUT_UNSUPPORTED", f"This block follows a slot or a runtime anchor: {target}",
                            status=409)
    overrides = [o for o in layout.get("overrides") or [] if o["target"] != target]
    overrides.append({"target": target, "anchor": anchor, "side": side, "detach": detach})
    return {**strategy, "layout": {**layout, "overrides": overrides}}
