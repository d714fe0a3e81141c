"""Resource positions: manual placement, outlets, and the rows the editor shows (reference A.5, A.9, A.10.2).

A position row is one draggable resource category (`source#position`, e.g. `worldbook#after`). The designer can
leave it where its source puts it (`placement: source`) or place it by hand in the list (`placement: list`, with an
optional anchor). Manual positions always win (priority stage `user`); everything else follows the priority list
`preset` (slots) > `resource` (depths and resource anchors) > `default` (rule order).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, NamedTuple

from assembly.blocks import Node
from assembly.catalogue import CONTEXT_CONTROL_KINDS, POSITION_CATALOGUE
from assembly.errors import AssemblyError
from assembly.results import PlacementControl, PositionRow
from assembly.strategy import TEXT_RULE_KINDS


def row_key(node: Node) -> str:
    return f"{node.source_id}#{node.position_id}"


def _setting_key(setting: dict[str, Any]) -> str:
    return f"{setting['sourceId']}#{setting['positionId']}"


def _manual_order(settings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Settings with their explicit anchors first; a cycle of anchors is refused (409 POSITION_ANCHOR_CYCLE)."""
    by_key = {_setting_key(s): s for s in settings}
    done: list[dict[str, Any]] = []
    state: dict[str, str] = {}

    def visit(key: str, trail: list[str]) -> None:
        if state.get(key) == "done":
            return
        if state.get(key) == "visiting":
            cycle = " -> ".join(trail[trail.index(key):] + [key])
            raise AssemblyError("POSITION_ANCHOR_CYCLE", f"layout.positions: cyclic manual position anchors ({cycle})",
                                status=409, detail={"cycle": trail[trail.index(key):] + [key]})
        state[key] = "visiting"
        anchor = by_key[key].get("anchor")
        if isinstance(anchor, dict):
            target = f"{anchor['sourceId']}#{anchor['positionId']}"
            if target in by_key:
                visit(target, trail + [key])
        state[key] = "done"
        done.append(by_key[key])

    for setting in settings:
        visit(_setting_key(setting), [])
    return done


def apply_manual_positions(nodes: list[Node], strategy: dict[str, Any], diagnostics: list[dict[str, Any]]) -> list[Node]:
    """Move the nodes of every enabled `list` row (reference A.10.2 applyPositionOrder, core/logical region)."""
    layout = strategy.get("layout") or {}
    rows = layout.get("positions") or []
    settings = [s for s in rows if s.get("enabled") and s.get("placement") == "list"]
    if not settings:
        return nodes
    stored = [_setting_key(s) for s in rows]
    for setting in _manual_order(settings):
        key = _setting_key(setting)
        # retained snapshots stay where their records are (reference A.10.2 step 2), outside st
        movable = [n for n in nodes if row_key(n) == key and n.message is None and n.lock_reason != "depth"
                   and not (n.lifetime == "snapshot" and strategy.get("placement") != "st")]
        if not movable:
            continue
        moving = {id(n) for n in movable}
        rest = [n for n in nodes if id(n) not in moving]
        # native regions, unless identity `position` sorts inside the projection, in a logical order (A.8.1 step 7)
        regions = strategy.get("backend") == "native" and layout.get("identity") != "position"
        index = _target_index(rest, setting, stored, layout, diagnostics, regions)
        if index is None:  # native: nothing later to go before, so the rows stay where they are
            index = sum(1 for n in nodes[:nodes.index(movable[0])] if id(n) not in moving)
        nodes = rest[:index] + [_user_placed(node) for node in movable] + rest[index:]
    return nodes


def _user_placed(node: Node) -> Node:
    """A new node where a `list` row put it: the user's decision, out of its slot, unlocked."""
    if node.slot_id is not None:
        return replace(node, position_decision="user", original_slot_id=node.slot_id, slot_id=None, locked=False,
                       lock_reason=None)
    return replace(node, position_decision="user", locked=False, lock_reason=None)


def _target_index(rest: list[Node], setting: dict[str, Any], stored: list[str], layout: dict[str, Any],
                  diagnostics: list[dict[str, Any]], native: bool = False) -> int | None:
    anchor = setting.get("anchor")
    if isinstance(anchor, dict):
        target = f"{anchor['sourceId']}#{anchor['positionId']}"
        matches = [i for i, n in enumerate(rest) if row_key(n) == target]
        if matches:
            return matches[0] if anchor.get("side", "before") == "before" else matches[-1] + 1
        diagnostics.append({"code": "POSITION_ANCHOR_MISSING", "sourceId": setting["sourceId"],
                            "positionId": setting["positionId"], "winner": "user", "anchor": anchor})
        if layout.get("fallback") == "error":
            raise AssemblyError("POSITION_ANCHOR_MISSING", f"layout.positions[{_setting_key(setting)}]: anchor "
                                f"{target} has no output in this request", status=409, detail={"anchor": anchor})
    if anchor == "end" and not native:  # "the end" is a core / logical order's; native regions keep their order
        return len(rest)
    later = set(stored[stored.index(_setting_key(setting)) + 1 :])
    return next((i for i, n in enumerate(rest) if row_key(n) in later), None if native else len(rest))


# The catalogue's declared resource anchors by row key (A.12): what the `resource` stage places beside.
_RESOURCE_ANCHORS = {c["id"]: c["anchor"] for c in POSITION_CATALOGUE if c.get("anchor")}


def apply_resource_anchors(nodes: list[Node], strategy: dict[str, Any], diagnostics: list[dict[str, Any]],
                           refusals: list[AssemblyError] | None = None) -> list[Node]:
    """The `resource` priority stage (reference A.10.2 applyResourceAnchors): a resource whose first winning stage is
    `resource` goes beside the anchor its category declares (world info before / after the character definition,
    around the examples or the author's note). `refusals`: collect the missing-anchor refusal there instead of
    raising it, for a caller that runs this stage earlier than the library does and must refuse in its order."""
    layout = strategy.get("layout") or {}
    if not layout.get("priority"):
        return nodes
    stages = ["user", *layout["priority"]]
    settings = {_setting_key(s): s for s in layout.get("positions") or []}
    anchors = _RESOURCE_ANCHORS

    def first_winner(node: Node, key: str) -> str | None:
        for stage in stages:
            if stage in ("resource", "default"):
                return stage
            if stage == "preset" and node.slot_id is not None:
                return stage
            setting = settings.get(key)
            if stage == "user" and setting and setting.get("enabled") and setting.get("placement") == "list":
                return stage
        return None

    groups: dict[str, list[Node]] = {}
    block = position_id = module = key = None
    for node in nodes:
        # consecutive nodes of one block and position (a whole conversation) share a row key
        if node.block is not block or node.position_id is not position_id or node.module is not module:
            block, position_id, module = node.block, node.position_id, node.module
            key = row_key(node)
        if (key in anchors and node.message is None and node.depth is None and node.lock_reason is None
                and first_winner(node, key) == "resource"):
            groups.setdefault(key, []).append(node)
    for key, group in groups.items():
        anchor = anchors[key]
        moving = {id(n) for n in group}
        rest = [n for n in nodes if id(n) not in moving]
        matches = [i for i, n in enumerate(rest) if n.source_id == anchor["source_id"]
                   and (n.field in anchor["fields"] or n.position_id in anchor["fields"])]
        compatible = [i for i in matches if rest[i].depth is None and rest[i].native_depth_anchor is None]
        source_id, position_id = key.split("#", 1)
        if not compatible:
            diagnostics.append({"code": "POSITION_ANCHOR_MISSING", "sourceId": source_id, "positionId": position_id,
                                "winner": "runtime" if matches else "default", "anchor": anchor})
            if not matches and layout.get("fallback") == "error":
                refusal = AssemblyError("POSITION_ANCHOR_MISSING", f"{key}: its anchor ({anchor['source_id']} "
                                        f"{', '.join(anchor['fields'])}) has no output in this request", status=409,
                                        detail={"sourceId": source_id, "positionId": position_id})
                if refusals is None:
                    raise refusal
                refusals.append(refusal)
            continue
        index = compatible[0] if anchor["side"] == "before" else compatible[-1] + 1
        nodes = rest[:index] + [replace(node, position_decision="resource") for node in group] + rest[index:]
    return nodes


# outlets ------------------------------------------------------------------------------------------------------------


def fill_outlets(nodes: list[Node], outlet_blocks: list[dict[str, Any]], diagnostics: list[dict[str, Any]]
                 ) -> list[Node]:
    """World book entries with position `outlet` fill `{{outlet::name}}` markers through the placement primitive:
    the nodes, each filled host a new node with the entries' text and the blocks it took in."""
    hosts: dict[str, int] = {}
    for index, node in enumerate(nodes):
        if node.message is not None or "{{outlet::" not in node.text:
            continue
        for name in _outlet_names(node.text):
            if name in hosts:
                diagnostics.append({"code": "OUTLET_MARKER_REPEATED", "outlet": name, "id": node.id})
                continue
            hosts[name] = index
    if not hosts and not outlet_blocks:
        return nodes
    placeable = []
    for block in outlet_blocks:
        if block["outlet_name"] in hosts:
            placeable.append(block)
        else:
            diagnostics.append({"code": "WORLD_BOOK_OUTLET_MISSING", "id": block["id"], "name": block["name"],
                                "outlet": block["outlet_name"]})
    if not hosts:
        return nodes
    from assembly.placement import PlacementError, place_context_blocks  # loaded by the first outlet to fill

    indices = sorted(set(hosts.values()))
    local = {i: n for n, i in enumerate(indices)}
    messages = [{"role": nodes[i].role if nodes[i].role in ("system", "user", "assistant") else "system",
                 "content": nodes[i].text} for i in indices]
    try:
        placed = place_context_blocks(
            messages, {"outlets": {name: local[i] for name, i in hosts.items()}},
            [{"id": b["id"], "position": "outlet", "outlet_name": b["outlet_name"], "order": b["order"],
              "content": b["content"]} for b in placeable],
        )
    except PlacementError as exc:
        raise _outlet_refusal(exc, hosts) from None
    filled = list(nodes)
    for n, i in enumerate(indices):
        host = nodes[i]
        filled[i] = replace(host, text=placed.messages[n]["content"], children=[
            *host.children, *({"id": f"worldbook:{b['id']}", "source": "worldbook", "locked": True,
                               "lock_reason": f"macro:outlet::{b['outlet_name']}"}
                              for b in placeable if hosts[b["outlet_name"]] == i)])
    return filled


def _outlet_refusal(exc: Any, hosts: dict[str, int]) -> AssemblyError:
    """The one wording of a refused outlet fill. The primitive's message and detail speak of the host-only message
    list built above (its indices mean nothing to the caller), so the refusal names the request's outlets instead;
    it is an assembly refusal (400), not the primitive's 422 for a caller's bad layout."""
    return AssemblyError(exc.code, f"outlets: {exc}", detail={"outlets": sorted(hosts)})


def _outlet_names(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(1) for m in re.finditer(r"\{\{outlet::([^{}]+?)\}\}", text)))


# rows and controls --------------------------------------------------------------------------------------------------


def position_rows(strategy: dict[str, Any], nodes: list[Node], decisions: list[dict[str, Any]]
                  ) -> list[PositionRow]:
    """Reference A.5 positionRows, with what the editor needs: lock and reason, empty, split, decision."""
    placed = _placed_by_row(nodes)
    disabled = {f"{d['sourceId']}#{d['positionId']}" for d in decisions if d.get("decision") == "disabled"
                } if decisions else ()
    rows = []
    for row, rule, setting in _row_plan(strategy):
        key, source_id, position_id, name_en, name_zh, configurable, missing, _ = row
        enabled = configurable and rule is not None and bool(rule["enabled"])  # a bool
        if setting is None:
            placement, anchor = "source", None
        else:
            enabled = (enabled and setting.get("enabled", True)) and True
            placement, anchor = setting.get("placement", "source"), setting.get("anchor")
            if isinstance(anchor, dict):  # the strategy's own is the result's layout policy's
                anchor = dict(anchor)
        if key in disabled:
            enabled = False
        spans = placed.get(key)
        if spans is None:  # empty, not split, not locked; each row its own lists
            rows.append(PositionRow(key, source_id, position_id, name_en, name_zh, enabled, configurable,
                                    rule is not None, placement, anchor, missing, [], True, False, False, False, [],
                                    [], []))
            continue
        if len(spans) == 2:  # adjacent runs of a row are one span
            row_nodes = nodes[spans[0]:spans[1]]
        else:
            row_nodes = [node for start in range(0, len(spans), 2) for node in nodes[spans[start]:spans[start + 1]]]
        rows.append(PositionRow(key, source_id, position_id, name_en, name_zh, enabled, configurable,
                                rule is not None, placement, anchor, missing, [node.id for node in row_nodes], False,
                                len(spans) > 2, *_row_locks(row_nodes)))
    return rows


def _row_locks(row_nodes: list[Node]) -> tuple[bool, bool, list[str], list[str], list[str]]:
    """What a row reports of the nodes it placed: whether all or some are locked, and the distinct lock reasons,
    holders (of the locked ones) and decisions, sorted; gathered in one pass."""
    if len(row_nodes) == 1:  # most rows place one node: its own values, nothing to gather or sort
        node = row_nodes[0]
        return (node.locked, False, [node.lock_reason] if node.locked and node.lock_reason else [],
                [node.slot_id] if node.locked and node.slot_id else [], [node.position_decision])
    locked = 0
    reasons, holders, decisions = set(), set(), set()
    for node in row_nodes:
        decisions.add(node.position_decision)
        if node.locked:
            locked += 1
            if node.lock_reason:
                reasons.add(node.lock_reason)
            if node.slot_id:
                holders.add(node.slot_id)
    return (locked == len(row_nodes), 0 < locked < len(row_nodes), sorted(reasons), sorted(holders),
            sorted(decisions))


class _RowCategory(NamedTuple):
    """What a row of `key` is in every request, before its rule, setting and nodes."""

    key: str
    source_id: str
    position_id: str
    name_en: str
    name_zh: str
    configurable: bool
    missing: bool  # no category of the catalogue has this key
    module: str | None


_PlannedRow = tuple[_RowCategory, dict[str, Any] | None, dict[str, Any] | None]  # the row, its rule, its setting


def _row_plan(strategy: dict[str, Any]) -> list[_PlannedRow]:
    """What the strategy's rows are before a request's nodes and decisions: in order, each row's category with the
    first rule of its module and the row's setting."""
    first_rule: dict[str, dict[str, Any]] = {}
    for rule in strategy["rules"]:
        if rule["kind"] not in CONTEXT_CONTROL_KINDS and rule.get("inputMode") != "text":
            first_rule.setdefault(rule["kind"], rule)
    settings = ((strategy.get("layout") or {}).get("positions")) or []
    plan = []
    seen = set()
    for setting in settings:
        key = _setting_key(setting)
        seen.add(key)
        row = _ROW_CATEGORIES.get(key) or _row_category(key, None)
        plan.append((row, first_rule.get(row.source_id), setting))
    # The catalogue in the order of each module's first rule (first_rule keeps the rules' order), then the
    # categories no rule produces, in catalogue order: a stable sort by the first rule's index, without sorting.
    # A category's rule is its module's (its source), and the catalogue lists a module's categories together.
    for module, rule in first_rule.items():
        for row in _CATEGORIES_BY_MODULE.get(module, ()):
            if row.key not in seen:
                plan.append((row, rule, None))
    for module, rows in _CATEGORIES_BY_MODULE.items():
        if module not in first_rule:
            for row in rows:
                if row.key not in seen:
                    plan.append((row, None, None))
    return plan


def _placed_by_row(nodes: list[Node]) -> dict[str, list[int]]:
    """Where each row's nodes stand in the request order: per row, the start and stop index of each of its spans
    of consecutive nodes, in one flat list (one list per row: the result is built while the rest of it is alive, so
    what is made here is one more object before a collection). Consecutive nodes of one block and position (a whole
    conversation) share a row, so its key is worked out once per run, and a node within a run costs no entry."""
    placed: dict[str, list[int]] = {}
    block = position_id = module = spans = None
    for index, node in enumerate(nodes):
        if node.block is not block or node.position_id is not position_id or node.module is not module:
            if spans is not None:
                spans[-1] = index  # the run before stops here
            block, position_id, module = node.block, node.position_id, node.module
            key = row_key(node)
            spans = placed.get(key)
            if spans is None:
                spans = placed[key] = [index, index]
            elif spans[-1] != index:  # else the row's last span goes on with this run
                spans += (index, index)
    if spans is not None:
        spans[-1] = len(nodes)
    return placed


def _row_category(key: str, category: dict[str, Any] | None) -> _RowCategory:
    source_id, position_id = key.split("#", 1)
    return _RowCategory(key, source_id, position_id, category["name_en"] if category else key,
                        category["name_zh"] if category else key, bool(category and category.get("configurable", True)),
                        category is None, category["module"] if category else None)


# The rows' categories (no text rule's), in catalogue order; by module, in catalogue order.
_ROW_CATEGORIES = {c["id"]: _row_category(c["id"], c) for c in POSITION_CATALOGUE if c["module"] not in TEXT_RULE_KINDS}
_CATEGORIES_BY_MODULE: dict[str | None, tuple[_RowCategory, ...]] = {}
for _row in _ROW_CATEGORIES.values():
    _CATEGORIES_BY_MODULE[_row.module] = (*_CATEGORIES_BY_MODULE.get(_row.module, ()), _row)
del _row
# `_row_plan` reads a category's rule by its module and the catalogue's order module by module
assert all(row.source_id == row.module for row in _ROW_CATEGORIES.values())
assert list(_ROW_CATEGORIES.values()) == [row for rows in _CATEGORIES_BY_MODULE.values() for row in rows]


def placement_controls(rules: list[dict[str, Any]], nodes: list[Node], slot_owners: frozenset[str]
                       ) -> list[PlacementControl]:
    """Reference A.9 placementControls: per rule of the strategy (disabled ones and control rows too), how many of
    its text blocks a slot owner holds (in a slot, as a macro, as a replaced field, or at a depth boundary) and how
    many stand on their own."""
    owned: dict[str, int] = {}
    independent: dict[str, int] = {}
    source_rule = {}
    for rule in rules:
        if rule.get("inputMode") != "text":
            source_rule.setdefault(rule["kind"], rule["id"])
    host_system = False
    taken: set[Any] = set()
    for node in nodes:
        if node.module == "native-system" and node.message is not None:
            host_system = True
            if node.text.strip():  # the official sections are one text block of the native-system rule
                independent[node.rule_id] = independent.get(node.rule_id, 0) + 1
        if node.message is not None or not node.text.strip():
            continue
        held = node.slot_owner in slot_owners or node.native_depth_anchor is not None
        tally = owned if held else independent
        puller = node.slot_owner_rule_id
        # A block that exists only where a reference pulls it (the card's post-history field for phi) is the
        # puller's; any other block stays its own rule's wherever a reference puts it.
        pulled = not held and puller is not None and node.block is not None and node.block.reference_only
        counted = puller if pulled else node.rule_id
        tally[counted] = tally.get(counted, 0) + 1
        block = node.block  # `Node.source_id`, inline: this reads every node
        if (block.source if block is not None else node.module) in slot_owners:
            owned[node.rule_id] = owned.get(node.rule_id, 0) + 1  # a slot owner's own block is its own slot's too
            for child in node.children:  # the blocks its macros and replaced fields took in, each block once
                target = source_rule.get(child.get("source"))
                if target is not None and child.get("id") not in taken:
                    taken.add(child.get("id"))
                    owned[target] = owned.get(target, 0) + 1
    controls = []
    for rule in rules:
        kind, rule_id = rule["kind"], rule["id"]
        if kind in CONTEXT_CONTROL_KINDS:
            control = "empty"
        elif kind in ("history", "input"):
            control = "native"
        elif kind == "native-system":  # the official sections, when they produce text
            control = "independent" if rule["enabled"] and host_system else "empty"
        elif kind in slot_owners:  # a slot owner's rule is a preset control while it takes part
            control = "preset" if rule["enabled"] else "empty"
        else:
            # a disabled rule places nothing itself: only what a slot owner holds of its source counts
            mine, free = owned.get(rule_id, 0), independent.get(rule_id, 0) if rule["enabled"] else 0
            control = "mixed" if mine and free else "preset" if mine else "independent" if free else "empty"
        controls.append(PlacementControl(rule_id=rule_id, control=control, owned=owned.get(rule_id, 0),
                                         independent=independent.get(rule_id, 0) if rule["enabled"] else 0))
    return controls

