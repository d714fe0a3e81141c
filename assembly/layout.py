"""Resource layout blocks and overrides (reference A.11, our design).

A layout block is a run of consecutive nodes that belong together: same rule, same resource group (a world book
position, a prompt, a character field), same slot, depth, role and region. Its key never contains the ids of the
entries active today, so an override written against "the world book's `after` group" still applies tomorrow when
other entries are active. Blocks are what the editor drags: a `free` block moves anywhere; a `slot` block follows
the preset slot that holds it unless the move detaches it; a `runtime` block (conversation, depth) never moves.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

from assembly.blocks import Node
from assembly.errors import AssemblyError
from assembly.results import (
    LayoutBlock,
    LayoutEntry,
    blank_values,
    complete_shape,
    new_instance,
    set_extra,
    set_fields_set,
    set_private,
    set_values,
)

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


@functools.lru_cache(maxsize=4096)
def _key_text(key: tuple) -> str:
    """A block key as the JSON its id carries (the same keys recur in every request of a strategy)."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))


def _binding(node: Node) -> str:
    if node.message is not None or node.lifetime == "snapshot" or node.native_depth_anchor or node.depth is not None:
        return "runtime"
    return "slot" if node.slot_id is not None else "free"


_ENTRY_FIELDS, _ = complete_shape(LayoutEntry)
_BLANK_ENTRY = blank_values(LayoutEntry)
_BLANK_BLOCK = blank_values(LayoutBlock)
_BLOCK_FIELDS, _ = complete_shape(LayoutBlock)


def layout_blocks(nodes: list[Node], backend: str) -> list[LayoutBlock]:
    """The runs of nodes that move together, with their binding and why they are where they are."""
    # One pass builds each run's block when the run starts, and each node's layout entry (`results.adopt_complete`
    # inlined, on copies of `results.blank_values`: this runs once per node of every request; an entry's values are
    # all atomic, so its dict is not one the collector tracks). A run's block is a copy of its remembered template
    # (`_run_template`): the same runs recur in every request of a strategy.
    blank_entry, new, own_values, own_fields_set, own_extra, own_private = (
        _BLANK_ENTRY.copy, new_instance, set_values, set_fields_set, set_extra, set_private)
    templates = _RUN_TEMPLATES
    native = backend == "native"
    blocks: list[LayoutBlock] = []
    counts: dict[str, int] = {}  # runs per key (its block id)
    key = None
    node_ids: list[str] = []
    entries: list[LayoutEntry] = []
    for node in nodes:
        # The group key, inline (once per node): rule, module, resource group, slot, depth, role and region.
        block = node.block
        group = (block.group if block is not None and block.source == "worldbook" else None) or node.field or (
            block.id if block is not None else node.id)
        depth = node.depth if node.depth is not None else node.requested_depth
        # The conversation is one runtime block whatever its speakers: its roles are not the designer's to move.
        role = None if node.message is not None else node.role
        node_key = (node.rule_id, node.module, group, node.slot_id, depth, role,
                    node_region(node, backend) if native else "request")
        if node_key != key:
            key, node_ids, entries = node_key, [], []
            # everything of the block that the run's first node decides besides its key
            signature = (node_key, node.message is None, node.lifetime, node.native_depth_anchor, node.depth,
                         node.position_decision, node.lock_reason, node.original_slot_id)
            template = templates.get(signature)
            if template is None:
                template = _run_template(signature, node)
            values = template.copy()
            block_id = values["id"]
            counts[block_id] = counts.get(block_id, 0) + 1
            values["key"] = list(key)
            values["limitations"] = list(values["limitations"])
            values["node_ids"] = node_ids
            values["entries"] = entries
            layout_block = new(LayoutBlock)
            own_values(layout_block, values)
            own_fields_set(layout_block, _BLOCK_FIELDS)
            own_extra(layout_block, None)
            own_private(layout_block, None)
            blocks.append(layout_block)
        node_ids.append(node.id)
        values = blank_entry()
        values["id"] = node.id
        values["text"] = node.text
        values["original_role"] = node.original_role
        values["effective_role"] = node.role
        values["position_id"] = node.position_id
        values["position_decision"] = node.position_decision
        values["order"] = node.order
        entry = new(LayoutEntry)
        own_values(entry, values)
        own_fields_set(entry, _ENTRY_FIELDS)
        own_extra(entry, None)
        own_private(entry, None)
        entries.append(entry)
    if len(counts) < len(blocks):  # a key with several runs: each of its runs is named by its first node
        for layout_block in blocks:
            values = layout_block.__dict__
            if counts[values["id"]] > 1:
                values["id"] = f"{values['id']}:run:{values['node_ids'][0]}"
    return blocks


# A run's block as its first node makes it (id text, binding, reason, limitations), by that node's signature in
# `layout_blocks`: only atomic values, so a template is never changed through a node, and each block copies it (its
# lists again). Bounded: the oldest template goes first.
_RUN_TEMPLATES: dict[tuple, dict[str, Any]] = {}
_RUN_TEMPLATES_SIZE = 1024
_RUN_TEMPLATES_LOCK = threading.Lock()


def _run_template(signature: tuple, node: Node) -> dict[str, Any]:
    key = signature[0]
    binding = _binding(node)
    region = key[-1]  # the key ends with the node's region
    values = _BLANK_BLOCK.copy()
    values["id"] = f"block:{_key_text(key)}"  # a key of several runs: `layout_blocks` names each run
    values["key"] = None  # each block's own list of its key
    values["binding"] = binding
    values["movable"] = binding == "free"
    values["overridable"] = binding == "slot"
    values["region"] = region
    values["reason"] = "user-override" if node.position_decision == "user" else node.lock_reason or "source-order"
    values["slot_id"] = node.slot_id
    values["original_slot_id"] = node.original_slot_id
    if binding == "runtime":
        values["limitations"] = (("RUNTIME_POSITION_FIXED", "NATIVE_CONTEXT_REUSES_HISTORY_POSITION")
                                 if region.endswith(":context") else ("RUNTIME_POSITION_FIXED",))
    else:
        values["limitations"] = ("NATIVE_CONTEXT_REUSES_HISTORY_POSITION",) if region.endswith(":context") else ()
    with _RUN_TEMPLATES_LOCK:
        _RUN_TEMPLATES[signature] = values
        while len(_RUN_TEMPLATES) > _RUN_TEMPLATES_SIZE:
            del _RUN_TEMPLATES[next(iter(_RUN_TEMPLATES))]
    return values


def clear_layout_memo() -> None:
    with _RUN_TEMPLATES_LOCK:
        _RUN_TEMPLATES.clear()


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
    moving_ids = set(target.node_ids)
    moving = [n for n in nodes if n.id in moving_ids]
    rest = [n for n in nodes if n.id not in moving_ids]
    anchor_ids = set(anchor.node_ids)
    positions = [i for i, n in enumerate(rest) if n.id in anchor_ids]
    index = positions[0] if side == "before" else positions[-1] + 1
    for node in moving:
        node.position_decision = "user"
        if detach and node.slot_id is not None:
            node.original_slot_id, node.slot_id = node.slot_id, None
            node.locked, node.lock_reason = False, None
    return rest[:index] + moving + rest[index:]


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
