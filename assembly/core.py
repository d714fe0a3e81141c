"""The advanced (core) backend: the logical order is the request (reference A.9 depth insertion, A.7).

Core replaces the whole request, so ST ordering, roles and depths survive exactly. What it adds is request-only:
the host never records it, except rules with lifetime `snapshot`, which are retained as snapshot records.
"""

from __future__ import annotations

from assembly.blocks import Node
from assembly.logical import insert_depth_nodes


def core_order(nodes: list[Node]) -> list[Node]:
    """Depth insertion, then delivery and region for every node."""
    ordered = insert_depth_nodes(nodes)
    for node in ordered:
        node.region = "request"
        if node.module == "history" or node.module == "native-system":
            node.delivery = "history"
        elif node.module == "input":
            node.delivery = "input"
        elif node.lifetime == "snapshot":
            node.delivery = "snapshot"
        else:
            node.delivery = "request"
    return ordered


def core_history_status(node: Node) -> str:
    if node.delivery == "history":
        return "native"
    if node.delivery == "input":
        return "appended"
    if node.delivery == "snapshot":
        return "snapshot"
    return "request-only"
