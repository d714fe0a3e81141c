"""The standard (native) backend: project logical nodes onto a stock host's six regions (reference A.8.1, A.8).

A stock host lets an assembler contribute only through public interfaces: official system sections (the request
head), a runtime-context snapshot after the current input, and accepted user messages before or after the input
(pre-step). History and the current input are never rewritten. `native_regions` decides, for every node, which of the
six regions it can live in and which role that forces; `native_transport` maps the regions onto those interfaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assembly.blocks import Node
from assembly.catalogue import CONTEXT_CONTROL_KINDS, CONTEXT_CONTROLS, DSH_CONTEXT_NAMES
from assembly.errors import AssemblyError
from assembly.positions import apply_manual_positions
from assembly.results import RuntimeContextControl
from assembly.sources import SLOT_OWNERS

REGIONS = ("system", "history", "before-input", "input", "after-input:context", "after-input:pre-step")
CONTEXT_FRAMING = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
CONTEXT_INVALIDATION = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."


def _unsupported(message: str, **detail: Any) -> AssemblyError:
    return AssemblyError("ASSEMBLY_NATIVE_UNSUPPORTED", message, status=409, detail=detail)


def native_regions(nodes: list[Node], strategy: dict[str, Any], diagnostics: list[dict[str, Any]],
                   emitted: list[Node] | None = None, module_order: bool = False,
                   refusals: list[AssemblyError] | None = None) -> list[Node]:
    """Order nodes into the six native regions, adjusting roles and deliveries, with a diagnostic for each change.
    Manual position rows are applied here (before the projection, or inside it with identity `position`); `emitted`
    is the logical order before resource anchors moved anything; `module_order` says the document stated no native
    placement, so the module-order refusal below applies even where its layout made the placement adaptive; the
    library makes that refusal when it maps the nodes to the host (reference A.8 step 7, after the layout
    overrides), so with `refusals` it is collected there instead of raised."""
    placement = strategy.get("placement")
    history = next((n for n in nodes if n.module == "history"), None)
    current = next((n for n in nodes if n.module == "input"), None)
    if history is None or current is None:
        history = history or _anchor(nodes, "history")
        current = current or _anchor(nodes, "input")
    history_nodes = [n for n in nodes if n.module == "history"]
    input_nodes = [n for n in nodes if n.module == "input"]
    requested_slots = placement == "native-slots"
    history_slot = any(n.slot_owner in SLOT_OWNERS for n in history_nodes) or _anchor_slotted(history)
    input_slot = any(n.slot_owner in SLOT_OWNERS for n in input_nodes) or _anchor_slotted(current)
    slots = requested_slots and (history_slot or input_slot)
    if requested_slots and not slots:
        diagnostics.append({"code": "NATIVE_SLOTS_ABSENT"})
    projection = _Projection(
        rules={r["id"]: (i, r) for i, r in enumerate(strategy["rules"])}, layout=strategy.get("layout") or {},
        sorting=(strategy.get("layout") or {}).get("identity") == "position", slots=slots,
        history_slot=history_slot, adaptive=placement in ("native-roles", "native-slots"), module_order=module_order,
        history_rule=next((i for i, r in enumerate(strategy["rules"]) if r["kind"] == "history"), -1),
        diagnostics=diagnostics, refusals=refusals)
    anchors = history, current
    order, authored, history, current = _spine(nodes, strategy, history, current, emitted, projection, input_slot,
                                               requested_slots)
    # an anchor a manual row moved is a new node with its id: the group holds that one
    if history is not anchors[0]:
        history_nodes = [history if n.id == history.id else n for n in history_nodes]
    if current is not anchors[1]:
        input_nodes = [current if n.id == current.id else n for n in input_nodes]
    history_index, input_index = order.index(history), order.index(current)
    groups: list[list[Node]] = [[] for _ in REGIONS]
    for index, node in enumerate(order):
        if node is history:
            groups[1].append(node)
        elif node is current:
            groups[3].append(node)
        else:
            groups[_region(node, index, history_index, input_index, projection)].append(node)
    projected = [n for group in groups for n in group]
    position = {node_id: i for i, node_id in enumerate(authored)}
    for index, node in enumerate(projected):
        if node.message is None and node.module not in ("history", "input") and position.get(node.id) != index:
            diagnostics.append({"code": "NATIVE_PLACEMENT_ADJUSTED", "id": node.id, "name": node.name,
                                "role": node.role, "placement": node.region})
    final: list[Node] = []
    for node in projected:
        if node is history:
            final.extend(_expand(history_nodes, "history"))
        elif node is current:
            final.extend(_expand(input_nodes, "input"))
        else:
            final.append(node)
    return final


@dataclass(frozen=True)
class _Projection:
    """What the native projection of one request reads while it places each node."""

    rules: dict[str, tuple[int, dict[str, Any]]]  # rule id -> (its index, the rule)
    layout: dict[str, Any]
    sorting: bool  # identity `position`: manual rows sort inside the projection
    slots: bool  # native-slots with a slotted history or input
    history_slot: bool
    adaptive: bool
    module_order: bool
    history_rule: int
    diagnostics: list[dict[str, Any]]
    refusals: list[AssemblyError] | None


def _spine(nodes: list[Node], strategy: dict[str, Any], history: Node, current: Node, emitted: list[Node] | None,
           p: _Projection, input_slot: bool, requested_slots: bool) -> tuple[list[Node], list[str], Node, Node]:
    """The order the regions are read from (the slots' spine, the depth boundary, manual rows), the authored
    order the placement changes are counted against, and the history and input anchors as the order holds them (a
    manual row that moves one places a new node)."""
    if not p.sorting:
        placed = apply_manual_positions(nodes, strategy, p.diagnostics)
        if placed is not nodes:  # a row moved something
            nodes, history, current = placed, _held(placed, history), _held(placed, current)
    order = _anchored(nodes, history, current, p.rules)
    # Placement changes are counted against the emitted order; with identity `position` the resource and manual
    # stages belong to this projection (reference A.8.1 steps 3 and 7), so they count as changes too.
    before = emitted if emitted is not None and p.sorting else nodes
    authored = [n.id for n in (order if before is nodes else _anchored(before, history, current, p.rules))]
    if p.slots:
        order = _slot_spine(order, strategy, history, current)
        if order.index(history) > order.index(current):
            if p.history_slot and input_slot:
                raise _unsupported("预设把当前输入放在历史之前。Preset input precedes history; native ordering cannot "
                                   "preserve this sequence.")
            if p.history_slot:
                order.remove(current)
                order.append(current)
            else:
                order.remove(history)
                order.insert(0, history)
    if requested_slots:
        order = _depth_boundary(order, history, p.diagnostics)
    if p.sorting:  # identity `position`: manual rows sort inside the projection, after the spine (A.8.1 step 7)
        placed = apply_manual_positions(order, strategy, p.diagnostics)
        if placed is not order:
            order, history, current = placed, _held(placed, history), _held(placed, current)
    return order, authored, history, current


def _held(nodes: list[Node], anchor: Node) -> Node:
    """`anchor` as `nodes` hold it: the node with its id (a new one where a manual row moved it)."""
    return next((n for n in nodes if n.id == anchor.id), anchor)


def _region(node: Node, index: int, history_index: int, input_index: int, p: _Projection) -> int:
    """The region (index into REGIONS) of a node that is not the history or the input, its role, delivery and
    placement set, each change reported."""
    if node.module == "native-system":
        node.region, node.delivery = "system", "system"
        return 0
    rule_index, rule = p.rules.get(node.placement_rule_id or node.rule_id, (len(p.rules), {}))
    slot_owned = node.slot_owner in SLOT_OWNERS or node.source_id in SLOT_OWNERS
    manual = p.sorting and node.position_decision == "user"
    forced = (p.slots and slot_owned) or node.native_depth_anchor is not None or manual
    if forced:
        if node.native_depth_anchor:
            target = "system" if node.native_depth_anchor == "before-history" else "user"
        elif p.history_slot or manual:
            target = "system" if index < history_index else "user"
        else:
            target = "user" if index > input_index else node.role
        if target != node.role:
            if p.layout.get("identity") == "preserve":
                raise _unsupported("Preserving identity conflicts with this native slot position; explicitly "
                                   f"allow position adaptation or use manual layout: {node.name}", id=node.id)
            p.diagnostics.append({"code": "NATIVE_ROLE_ADJUSTED", "id": node.id, "name": node.name,
                                  "from": node.role, "to": target})
            node.authored_role = node.role
            node.role = target
    if node.role not in ("system", "user"):
        raise _unsupported(f"Native ordering cannot preserve {node.role}: {node.name}", id=node.id, role=node.role)
    if node.role == "system":
        node.native_placement, node.region, node.delivery = "system", "system", "system"
        return 0
    if (p.module_order or not p.adaptive) and rule_index < p.history_rule:
        # module order: a user text before history can only be a preserved role, and the host has nowhere to put it
        # (reference A.8 step 7)
        refusal = _unsupported("Preserved user-role source content must follow native history.", id=node.id,
                               ruleId=node.rule_id)
        if p.refusals is None:
            raise refusal
        p.refusals.append(refusal)
    delivery = "pre-step" if forced else rule.get("delivery") or "context"
    if forced and rule.get("delivery") == "context":
        p.diagnostics.append({"code": "NATIVE_DELIVERY_ADJUSTED", "id": node.id, "name": node.name,
                              "from": "context", "to": "pre-step"})
    before = delivery == "pre-step" and index < input_index
    node.native_delivery, node.delivery = delivery, delivery
    node.native_placement = node.region = "before-input" if before else "after-input"
    return 2 if before else (4 if delivery == "context" else 5)




def _anchored(nodes: list[Node], history: Node, current: Node, rules: dict[str, tuple[int, dict]]) -> list[Node]:
    """The order with history and input as single anchors (they expand again at the end); an empty one is placed
    at its rule."""
    order: list[Node] = []
    seen_history = seen_input = False
    for node in nodes:
        if node.module == "history":
            if not seen_history:
                order.append(history)
                seen_history = True
            continue
        if node.module == "input":
            if not seen_input:
                order.append(current)
                seen_input = True
            continue
        order.append(node)
    if not seen_history:
        order.insert(_anchor_index(order, rules, "history"), history)
    if not seen_input:
        order.insert(_anchor_index(order, rules, "input") if seen_history else len(order), current)
    return order


def _anchor(nodes: list[Node], module: str) -> Node:
    # Empty history or input still needs a place in the order (reference A.14.1 N2): a node with no message.
    return Node(id=f"{module}:anchor", rule_id=module, module=module, name=module, role="user", original_role="user",
                text="", trust="user", locked=True, lock_reason="runtime", position_decision="runtime")


def _anchor_slotted(node: Node) -> bool:
    return node.slot_owner in SLOT_OWNERS


def _anchor_index(order: list[Node], rules: dict[str, tuple[int, dict]], module: str) -> int:
    rule_index = next((i for i, r in rules.values() if r["kind"] == module), len(rules))
    for position, node in enumerate(order):
        if rules.get(node.placement_rule_id or node.rule_id, (len(rules), {}))[0] > rule_index and (
                node.slot_owner not in SLOT_OWNERS):
            return position
    return len(order)


def _expand(nodes: list[Node], region: str) -> list[Node]:
    for node in nodes:
        node.region, node.delivery = region, region
    return nodes


def _slot_spine(order: list[Node], strategy: dict[str, Any], history: Node, current: Node) -> list[Node]:
    """Independent modules attach to the slot spine by list position (reference A.8.1 step 4)."""
    rule_index = {r["id"]: i for i, r in enumerate(strategy["rules"])}

    def slot_owned(node: Node) -> bool:
        return node.slot_owner in SLOT_OWNERS or node.source_id in SLOT_OWNERS or node in (history, current)

    spine = [n for n in order if slot_owned(n)]
    independent = [n for n in order if not slot_owned(n)]
    anchors: list[tuple[int, Node]] = []
    for index, rule in enumerate(strategy["rules"]):
        if rule["kind"] == "history":
            anchors.append((index, history))
        elif rule["kind"] == "input":
            anchors.append((index, current))
        else:
            first = next((n for n in spine if n.slot_owner_rule_id == rule["id"] or
                          (n.rule_id == rule["id"] and n.source_id in SLOT_OWNERS)), None)
            if first is not None:
                anchors.append((index, first))
    for node in independent:
        own = rule_index.get(node.placement_rule_id or node.rule_id, len(rule_index))
        anchor = next((n for i, n in anchors if i > own), None)
        if anchor is None:
            spine.append(node)
        else:
            spine.insert(spine.index(anchor), node)
    return spine


def _depth_boundary(order: list[Node], history: Node, diagnostics: list[dict[str, Any]]) -> list[Node]:
    boundary = [n for n in order if n.module == "worldbook" and n.requested_depth in (0, 1)]
    if not boundary:
        return order
    rest = [n for n in order if n not in boundary]
    before = [n for n in boundary if n.requested_depth == 1]
    after = [n for n in boundary if n.requested_depth == 0]
    for node in boundary:
        node.native_depth_anchor = "before-history" if node.requested_depth == 1 else "after-history"
        node.locked, node.lock_reason = True, "native-depth-boundary"
        diagnostics.append({"code": "NATIVE_DEPTH_BOUNDARY", "id": node.id, "name": node.name,
                            "depth": node.requested_depth, "placement": node.native_depth_anchor})
    at = rest.index(history)
    return rest[:at] + before + [history] + after + rest[at + 1 :]




def validate_native(strategy: dict[str, Any]) -> None:
    """Reference A.6: what a stock host can honour, checked in the reference's order; never mutates the strategy."""
    if strategy.get("backend", "core") != "native":
        raise _unsupported("This strategy requires the optional core assembly extension.", backend="core")
    rules = strategy["rules"]
    for kind, what in (("history", "history"), ("input", "input")):
        rule = next((r for r in rules if r["kind"] == kind), None)
        if rule is None or not rule["enabled"]:
            raise _unsupported(f"Native assembly must preserve {what}.", ruleId=rule["id"] if rule else None,
                               kind=kind)
    for rule in rules:
        if rule["kind"] in CONTEXT_CONTROL_KINDS and (rule["role"] != "preserve" or rule["lifetime"] != "request"
                                              or rule["depth"] is not None or rule.get("inputMode") == "text"):
            raise _unsupported("Native context controls only support enable/disable.", ruleId=rule["id"])
    enabled = [r for r in rules if r["enabled"]]
    if strategy.get("placement") in ("native-roles", "native-slots"):
        for rule in enabled:
            if rule["lifetime"] == "snapshot" or rule["depth"] is not None or rule["role"] == "assistant":
                raise _unsupported("Native ordering does not support snapshots, depth or assistant contributions.",
                                   ruleId=rule["id"])
        return
    phase, after_input_messages = "system", False
    for rule in enabled:
        kind = rule["kind"]
        if kind in CONTEXT_CONTROL_KINDS:
            continue
        if kind == "history":
            if phase != "system":
                raise _unsupported("Native history cannot be moved after current input.", ruleId=rule["id"])
            phase = "before-input"
            continue
        if kind == "input":
            if phase != "before-input":
                raise _unsupported("Current input must follow native history.", ruleId=rule["id"])
            phase = "after-input"
            continue
        if rule["lifetime"] == "snapshot" or rule["depth"] is not None:
            raise _unsupported("Retained request snapshots and insertion depth require core assembly.",
                               ruleId=rule["id"])
        if rule["role"] == "assistant":
            raise _unsupported("Assistant-role contributions require core assembly.", ruleId=rule["id"])
        if rule["role"] == "user":
            delivery = rule.get("delivery")
            if phase == "system":
                raise _unsupported("Native user contributions must follow native history.", ruleId=rule["id"])
            if phase == "before-input" and delivery != "pre-step":
                raise _unsupported("User context snapshots follow current input; use pre-step before input.",
                                   ruleId=rule["id"])
            if phase == "after-input":
                if delivery == "pre-step":
                    after_input_messages = True
                elif after_input_messages:
                    raise _unsupported("Native context snapshots precede post-input pre-step messages; reorder these "
                                       "contributions.", ruleId=rule["id"])
        elif phase != "system":
            raise _unsupported("Native system contributions must precede native history.", ruleId=rule["id"])
    if strategy.get("placement") != "modules":
        raise _unsupported("ST slot/depth placement requires core assembly; choose a native strategy.")


def runtime_context_controls(strategy: dict[str, Any], contexts: list[dict[str, Any]]
                             ) -> tuple[list[RuntimeContextControl], list[dict]]:
    """Reference A.4: the preview list of the three DSH contexts and the contexts that survive the controls.

    A control rule that is disabled removes its sections (the master control removes all three); absent rules keep
    everything; other contexts are always kept. Controls change prompt text only, never the host's policies.
    """
    disabled: set[str] = set()
    for rule in strategy["rules"]:
        if rule["kind"] in CONTEXT_CONTROLS and not rule["enabled"]:
            disabled.update(CONTEXT_CONTROLS[rule["kind"]])
    kept = [c for c in contexts if c["name"] not in disabled]
    preview = [RuntimeContextControl(name=c["name"], enabled=c["name"] not in disabled)
               for c in contexts if c["name"] in DSH_CONTEXT_NAMES]
    return preview, kept
