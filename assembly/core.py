"""The advanced (core) backend: the logical order is the request (reference A.9 depth insertion, A.7).

Core replaces the whole request, so ST ordering, roles and depths survive exactly. What it adds is request-only:
the host never records it, except rules with lifetime `snapshot`, which are retained as snapshot records.
"""

from __future__ import annotations

import hashlib
from typing import Any

from assembly.blocks import Node
from assembly.conversation import insert_depth_nodes

SNAPSHOT_KIND = "assembly-snapshot"


def snapshot_hash(node: Node) -> str:
    return hashlib.sha256(f"{node.role}\x00{node.text}".encode()).hexdigest()


def retain_snapshots(nodes: list[Node], history: list[dict[str, Any]], rules: list[dict[str, Any]]) -> list[Node]:
    """Snapshot rules are recorded once per content (reference A.9 step 5).

    A snapshot whose latest record in durable history has the same content is not sent again: the recorded message
    already is the context. Changed content becomes a new record. A snapshot rule that produced records before and
    produces nothing now gets an "empty" record so the model stops relying on the old one.
    """
    active_rules = {r["id"]: r for r in rules if r["enabled"] and r.get("lifetime") == "snapshot"}
    if not active_rules and "snapshot" not in {n.lifetime for n in nodes}:
        return list(nodes)  # nothing is a snapshot and no record can need an empty one: history is not read
    latest: dict[str, dict[str, Any]] = {}
    for message in history:
        source = message.get("source") or {}
        if source.get("kind") == SNAPSHOT_KIND and source.get("node_id"):
            latest[source["node_id"]] = message
    kept = []
    for node in nodes:
        if node.lifetime == "snapshot" and node.message is None:
            record = latest.get(node.id)
            if record is not None and (record.get("source") or {}).get("hash") == snapshot_hash(node):
                continue  # unchanged: the record in history stands
        kept.append(node)
    emitted = {n.id for n in kept if n.lifetime == "snapshot"} | {n.id for n in nodes if n.lifetime == "snapshot"}
    for node_id, record in latest.items():
        source = record["source"]
        rule = active_rules.get(source.get("rule_id"))
        if rule is None or node_id in emitted or source.get("empty"):
            continue
        name = source.get("name") or node_id
        empty = Node(id=node_id, rule_id=rule["id"], module=rule["kind"], name=name, role="system",
                     original_role="system", lifetime="snapshot", trust="operator",
                     text=f"Current context is empty for entry {name}. Its earlier snapshots are no longer current.")
        empty.position_decision = "source"
        kept.append(empty)
    return kept


def core_order(nodes: list[Node], history: list[dict[str, Any]] | None = None,
               rules: list[dict[str, Any]] | None = None) -> list[Node]:
    """Snapshot retention, depth insertion, then delivery and region for every node (set on the nodes given: the
    caller's own copies). Placement `st` retains snapshots alone: SillyTavern's in-chat rules place depths, and its
    build sets each sent node's delivery."""
    ordered = insert_depth_nodes(retain_snapshots(nodes, history or [], rules or []))
    for node in ordered:
        node.region = "request"
        node.delivery = _DELIVERY_OF_MODULE.get(node.module) or (
            "snapshot" if node.lifetime == "snapshot" else "request")
    return ordered


_DELIVERY_OF_MODULE = {"history": "history", "native-system": "history", "input": "input"}


def core_history_status(node: Node) -> str:
    if node.delivery == "history":
        return "native"
    if node.delivery == "input":
        return "appended"
    if node.delivery == "snapshot":
        return "snapshot"
    return "request-only"
