"""Draft edits: the strategy editor's changes as pure functions over the strategy document (web.md screen 2).

Each edit takes a draft (a normalized strategy document) and returns a new, normalized draft (so it is what the
studio stores; a bad value raises normalization's `StrategyError`); the input is never mutated. A
refused edit raises `EditInvalid` (400: the edit itself is malformed) or `EditRefused` (409: the draft does not allow
it); the studio adds the fresh state to a 409 and stores nothing. "Which position rows are locked" is decided here
too, from one assembly result of the draft, so no caller hands in a list it merely trusts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container
from typing import Any

from assembly.catalogue import CONTEXT_CONTROL_KINDS, with_context_control_rows
from assembly.errors import CodedError
from assembly.layout import with_block_move
from assembly.positions import position_rows
from assembly.results import AssemblyResult, NodeView, PositionRow
from assembly.strategy import DEFAULT_PRIORITY, TEXT_RULE_KINDS, normalize_strategy

Draft = dict[str, Any]

RULE_FIELDS = ("enabled", "role", "delivery", "lifetime", "depth", "name", "text")


class EditInvalid(CodedError):
    """An edit that cannot be read (400 INPUT_INVALID, `detail.path` names the field)."""

    def __init__(self, path: str, message: str):
        super().__init__("INPUT_INVALID", message, status=400, detail={"path": path})


class EditRefused(CodedError):
    """An edit the draft does not allow (409); `detail` says what was wrong."""

    def __init__(self, code: str, message: str, **detail: Any):
        super().__init__(code, message, status=409, detail=detail)


# ---------------------------------------------------------------------------------------------- orders


def checked_order(order: Any, ids: list[str], what: str) -> list[str]:
    """`order` must name every current id exactly once; anything else is refused with what was wrong."""
    if not isinstance(order, list | tuple) or not all(isinstance(item, str) for item in order):
        raise EditInvalid("order", "order: expected a list of ids")
    unknown = [item for item in dict.fromkeys(order) if item not in ids]
    missing = [item for item in ids if item not in order]
    repeated = sorted({item for item in order if order.count(item) > 1})
    if unknown or missing or repeated:
        problems = [f"{label} {', '.join(items)}" for label, items in
                    (("unknown:", unknown), ("missing:", missing), ("repeated:", repeated)) if items]
        raise EditRefused("ORDER_NOT_PERMUTATION",
                          f"order: expected each of the {len(ids)} current {what} exactly once ({'; '.join(problems)})",
                          path="order", unknown=unknown, missing=missing, repeated=repeated)
    return list(order)


def kept_in_place(current: list[str], order: list[str], locked: Container[str], hint: str | None) -> set[str]:
    """The largest set of rows whose relative order the new `order` keeps, preferring to keep locked rows (they
    weigh more than all others together) and to count the `hint` row (the one the user dragged) as the mover.
    Every other row is one the user moved."""
    index = {row: position for position, row in enumerate(current)}
    heavy = len(order) * 2 + 1

    def weight(row: str) -> int:
        if row in locked:
            return heavy - 1 if row == hint else heavy  # a refusal then names the row that was moved
        return 1 if row == hint else 2

    best: list[int] = []
    previous: list[int] = []
    for i, row in enumerate(order):
        best.append(weight(row))
        previous.append(-1)
        for j in range(i):
            if index[order[j]] < index[row] and best[j] + weight(row) > best[i]:
                best[i], previous[i] = best[j] + weight(row), j
    kept: set[str] = set()
    i = max(range(len(order)), key=lambda k: best[k], default=-1)
    while i != -1:
        kept.add(order[i])
        i = previous[i]
    return kept


# ---------------------------------------------------------------------------------------------- rules


def rules_reordered(draft: Draft, order: Any) -> Draft:
    """Put the draggable rules (every rule but the runtime-context controls, which are switches) in `order`; the
    controls keep their places in the stored list."""
    rules = draft["rules"]
    movable = [rule["id"] for rule in rules if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    order = checked_order(order, movable, "rules")
    by_id = {rule["id"]: rule for rule in rules}
    queue = iter(order)
    reordered = [by_id[next(queue)] if rule["kind"] not in CONTEXT_CONTROL_KINDS else rule for rule in rules]
    return normalize_strategy({**draft, "rules": reordered})


def _rule(draft: Draft, rule_id: Any) -> dict[str, Any]:
    found = next((rule for rule in draft["rules"] if rule["id"] == rule_id), None)
    if found is None:
        raise EditRefused("RULE_NOT_FOUND", f"rule: {rule_id!r} is not a rule of this draft (any more)",
                          path="rule", rule=str(rule_id))
    return found


def rule_updated(draft: Draft, rule_id: str, changes: dict[str, Any]) -> Draft:
    """Change some fields of one rule (enabled, role, delivery, lifetime, depth, name, text); `delivery: None`
    removes the delivery; normalization checks the values (400, 413 for oversize text)."""
    rule = _rule(draft, rule_id)
    unknown = sorted(set(changes) - set(RULE_FIELDS))
    if unknown:
        raise EditInvalid(unknown[0], f"{unknown[0]}: not a field a rule edit may change (expected one of "
                          f"{', '.join(RULE_FIELDS)})")
    if rule["kind"] in CONTEXT_CONTROL_KINDS and set(changes) - {"enabled"}:
        raise EditRefused("RULE_CONTROL_FIXED", f"rule {rule_id!r}: a runtime-context control is only switched "
                          "on or off", path="rule", rule=rule_id)
    updated = {**rule, **changes}
    if "delivery" in changes and changes["delivery"] is None:
        updated.pop("delivery")
    return normalize_strategy({**draft, "rules": [updated if r["id"] == rule_id else r for r in draft["rules"]]})


def slug(value: str) -> str:
    """Django's `slugify` (ASCII): the engine may not import Django, and rule ids must stay what they were."""
    value = unicodedata.normalize("NFKD", str(value)).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


def free_rule_id(rules: list[dict[str, Any]], wanted: str) -> str:
    base = (slug(wanted) or "custom")[:72].strip("-") or "custom"
    taken = {rule["id"] for rule in rules}
    rule_id, number = base, 2
    while rule_id in taken:
        rule_id, number = f"{base}-{number}", number + 1
    return rule_id


def rule_added(draft: Draft, kind: str, name: str = "", text: str = "", role: str | None = None) -> tuple[Draft, str]:
    """Append a custom text rule (kind `custom` or `dsh.text`); the new draft and the new rule's id."""
    if kind not in TEXT_RULE_KINDS:
        raise EditInvalid("kind", f"kind: expected one of {', '.join(TEXT_RULE_KINDS)}")
    rules = draft["rules"]
    rule_id = free_rule_id(rules, name or kind.replace(".", "-"))
    rule: dict[str, Any] = {"id": rule_id, "kind": kind, "name": name, "text": text}
    if role is not None:
        rule["role"] = role
    return normalize_strategy({**draft, "rules": [*rules, rule]}), rule_id


def rule_removed(draft: Draft, rule_id: str) -> Draft:
    """Remove a custom text rule; the module rules stay (switch them off instead)."""
    rule = _rule(draft, rule_id)
    if rule["kind"] not in TEXT_RULE_KINDS:
        raise EditRefused("RULE_NOT_REMOVABLE", f"rule {rule_id!r} ({rule['kind']}) is a module rule: only "
                          "custom text rules are removed; switch it off instead", path="rule", rule=rule_id)
    return normalize_strategy({**draft, "rules": [r for r in draft["rules"] if r["id"] != rule_id]})


def context_control_switched(draft: Draft, kind: str, enabled: bool) -> Draft:
    """Switch one runtime-context control (reference A.4). A draft without explicit control rows gets all three
    (enabled, as the absent rows meant) before the switch changes one of them."""
    if kind not in CONTEXT_CONTROL_KINDS:
        raise EditInvalid("kind", f"kind: expected one of {', '.join(CONTEXT_CONTROL_KINDS)}")
    if not isinstance(enabled, bool):
        raise EditInvalid("enabled", "enabled: expected a boolean")
    rules = with_context_control_rows(draft["rules"])
    return normalize_strategy({**draft, "rules": [{**rule, "enabled": enabled} if rule["kind"] == kind else rule
                                                  for rule in rules]})


# ---------------------------------------------------------------------------------------------- positions


def layout_or_default(*, draft: Draft) -> dict[str, Any]:
    """The draft's layout, or (when it has none) a new policy that keeps the draft's placement, so storing
    positions or a priority list never changes how the strategy places things (A.5 defaults otherwise)."""
    if draft.get("layout"):
        return dict(draft["layout"])
    placement = draft.get("placement")
    source = "manual" if placement == "modules" else "preset-slots"
    identity = "position" if placement == "native-slots" else "preserve"
    return {"version": 1, "source": source, "identity": identity, "fallback": "source-order", "overrides": [],
            "priority": list(DEFAULT_PRIORITY)}


def position_keys(*, draft: Draft) -> list[str]:
    """The position rows of a draft in the order the editor shows them (stored rows, then the catalogue by rule
    order); the same for every session, so it is what an order is checked against."""
    return [row.key for row in position_rows(draft, [], [])]


def macro_holds(nodes: list[NodeView]) -> dict[str, list[tuple[str, NodeView]]]:
    """Rows whose output another node took in through a macro ({{description}}, {{original}}, outlets): row key ->
    (the lock reason, the node holding it) per holding, in node order. Node children are the engine's dicts."""
    held: dict[str, list[tuple[str, NodeView]]] = {}
    for node in nodes:
        for child in node.children or []:
            if child.get("locked"):
                reason = child.get("lock_reason") or ""
                key = ("worldbook#outlet" if reason.startswith("macro:outlet::")
                       else f"{child.get('source')}#{child.get('field')}")
                held.setdefault(key, []).append((reason, node))
    return held


def row_held(row: PositionRow, nodes: dict[str, NodeView], holds: Container[str]) -> bool:
    """Every output of the row is locked (by a slot, a depth, the chat) or taken in by a macro, none of its own
    outputs is free. `nodes`: the result's nodes by id; `holds`: the keys of `macro_holds`."""
    own = [nodes[node_id] for node_id in row.node_ids if node_id in nodes]
    return (row.locked or row.key in holds) and not any(not node.locked for node in own)


def locked_rows(draft: Draft, result: AssemblyResult | None) -> frozenset[str]:
    """The position rows the preview `result` of `draft` holds in place (`row_held`), and the rows that are not
    configurable at all. Without a result (the preview was refused) only the rows that are never configurable."""
    rows = result.positions if result is not None else position_rows(draft, [], [])
    nodes = {node.id: node for node in result.nodes} if result is not None else {}
    holds = macro_holds(result.nodes) if result is not None else {}
    return frozenset(row.key for row in rows if row_held(row, nodes, holds) or not row.configurable)


def _settings_in_order(draft: Draft, keys: list[str]) -> dict[str, dict[str, Any]]:
    stored = {f"{s['sourceId']}#{s['positionId']}": s for s in (draft.get("layout") or {}).get("positions") or []}
    settings = {}
    for key in keys:
        source_id, position_id = key.split("#", 1)
        settings[key] = dict(stored.get(key) or {"sourceId": source_id, "positionId": position_id, "enabled": True,
                                                 "placement": "source"})
    return settings


def positions_reordered(draft: Draft, order: Any, *, locked: Container[str], moved: str | None = None) -> Draft:
    """Put the resource position rows in `order`. `locked` rows (see `locked_rows`) may not move (their relative
    order must stay). The rows the user moved become `list` placements (their old anchor dropped: the list
    position is the new intent); every row is stored in the new order so the list reads back as it was left (A.5
    configurePosition). The unchanged order gives the draft back unchanged (equal)."""
    keys = position_keys(draft=draft)
    order = checked_order(order, keys, "position rows")
    held = {key for key in keys if key in locked}
    kept = kept_in_place(keys, order, held, moved)
    forced = [key for key in keys if key in held and key not in kept]
    if forced:
        raise EditRefused("POSITION_LOCKED", f"order: {', '.join(forced)} is held by a slot, a macro or a "
                          "runtime anchor and cannot move", path="order", rows=forced)
    if order == keys:
        return normalize_strategy(draft)
    settings = _settings_in_order(draft, order)
    for key in order:
        if key not in kept:
            settings[key]["placement"] = "list"
            settings[key].pop("anchor", None)
    layout = {**layout_or_default(draft=draft), "positions": list(settings.values())}
    return normalize_strategy({**draft, "layout": layout})


def position_updated(draft: Draft, key: str, *, enabled: bool, placement: str, anchor: str | dict[str, Any] | None,
                     locked: Container[str]) -> Draft:
    """Set one row's switch, placement (`source` / `list`) and anchor (None, 'end' or {sourceId, positionId,
    side}). A locked row may only be switched on or off. Every row is stored in the current order."""
    keys = position_keys(draft=draft)
    if key not in keys:
        raise EditRefused("POSITION_NOT_FOUND", f"key: {key!r} is not a position row of this draft",
                          path="key", rows=[key])
    if (placement != "source" or anchor is not None) and key in locked:
        raise EditRefused("POSITION_LOCKED", f"{key}: the row is held by a slot, a macro or a runtime anchor; "
                          "it can be switched on or off but not placed", path="placement", rows=[key])
    settings = _settings_in_order(draft, keys)
    row = settings[key]
    row.update(enabled=enabled, placement=placement)
    row.pop("anchor", None)
    if anchor is not None:
        row["anchor"] = anchor
    layout = {**layout_or_default(draft=draft), "positions": list(settings.values())}
    return normalize_strategy({**draft, "layout": layout})


def priority_reordered(draft: Draft, order: Any) -> Draft:
    """Reorder the automatic position stages (`preset`, `resource`, `default`, ...); manual positions (`user`)
    always come first and are not part of the list (A.5)."""
    layout = layout_or_default(draft=draft)
    order = checked_order(order, list(layout["priority"]), "priority stages")
    return normalize_strategy({**draft, "layout": {**layout, "priority": order}})


def layout_updated(draft: Draft, *, source: str, identity: str, fallback: str) -> Draft:
    """Set the layout policy (A.5: slot source, identity, fallback); a draft without a layout adopts one. The
    placement follows from it (normalization)."""
    return normalize_strategy({**draft, "layout": {**layout_or_default(draft=draft), "source": source,
                                                   "identity": identity, "fallback": fallback}})


# ---------------------------------------------------------------------------------------------- blocks and settings


def block_moved(draft: Draft, *, target: str, anchor: str, side: str, detach: bool,
                run: Callable[[Draft], AssemblyResult]) -> Draft:
    """Move one request block before or after another (reference A.11 withBlockMove) and keep the move as a layout
    override. `run` assembles a draft on the preview's request: the blocks are that preview's, and the moved draft
    must assemble on it, so a move the engine would refuse later (a slot's block not detached, the chat, a native
    role or delivery boundary) raises its `AssemblyError` now. A draft without a layout adopts one that keeps its
    placement."""
    if side not in ("before", "after"):
        raise EditInvalid("side", "side: expected before or after")
    if target == anchor:
        raise EditInvalid("anchor", "anchor: expected another block than the one that moves")
    adopted = {**draft, "layout": layout_or_default(draft=draft)}
    before = run(adopted)
    moved = with_block_move(adopted, before.layout.blocks, target, anchor, side, detach)
    if run(moved).request.messages == before.request.messages:
        _refuse_unchanged(before, target=target, anchor=anchor, side=side)
    return normalize_strategy(moved)


def _refuse_unchanged(before: AssemblyResult, *, target: str, anchor: str, side: str) -> None:
    """A move that leaves the request as it was is not kept: the block already sat there, or the placement's own
    order (SillyTavern's prompt order) places the request and takes no block moves."""
    ids = [block.id for block in before.layout.blocks]
    beside = ids.index(anchor) + (-1 if side == "before" else 1) if anchor in ids else None
    if beside is not None and 0 <= beside < len(ids) and ids[beside] == target:
        raise EditRefused("BLOCK_ALREADY_THERE", f"anchor: block {target} already sits {side} {anchor}",
                          path="anchor")
    raise EditRefused("BLOCK_MOVE_IGNORED", f"target: moving block {target} {side} {anchor} leaves the request as "
                      f"it was (placement {before.placement} orders it itself)", path="target",
                      placement=before.placement)


def block_override_removed(draft: Draft, target: str) -> Draft:
    """Forget the stored move of one block: it goes back to the place its source gives it."""
    layout = draft.get("layout") or {}
    overrides = layout.get("overrides") or []
    if not any(o["target"] == target for o in overrides):
        raise EditRefused("OVERRIDE_NOT_FOUND", f"target: no stored move for block {target!r}", path="target")
    kept = [o for o in overrides if o["target"] != target]
    return normalize_strategy({**draft, "layout": {**layout, "overrides": kept}})


def settings_updated(draft: Draft, *, name: str, backend: str | None, placement: str) -> Draft:
    """Rename the strategy and choose its backend (None: absent, the legacy reading `core`) and placement (which a
    layout policy overrides)."""
    document = {key: value for key, value in draft.items() if key != "backend"}
    if backend is not None:
        document = {"backend": backend, **document}
    document.update(name=name, placement=placement)
    return normalize_strategy(document)

