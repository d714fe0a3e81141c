"""`{{outlet::name}}` as SillyTavern fills it (sillytavern.md §7.6): every use of the macro gets the outlet's text,
empty when no activated entry feeds it.

The placement primitive (`assembly.positions.fill_outlets`) fills one host per outlet, the first; placement `st`
then fills every marker left, with the same text.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from assembly.blocks import Node

_OUTLET_MACRO = re.compile(r"\{\{outlet::(.+?)\}\}", re.IGNORECASE)


def outlet_texts(outlet_blocks: list[dict[str, Any]]) -> dict[str, str]:
    """Each outlet's text: its entries joined by a newline, in the order the placement primitive uses."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for block in outlet_blocks:
        by_name.setdefault(block["outlet_name"], []).append(block)
    return {name: "\n".join(b["content"] for b in sorted(blocks, key=lambda b: (b["order"], b["id"])))
            for name, blocks in by_name.items()}


def fill_every_outlet(nodes: list[Node], outlet_blocks: list[dict[str, Any]],
                      diagnostics: list[dict[str, Any]]) -> list[Node]:
    """The nodes with the outlet markers the first pass left filled (repeated uses, outlets without entries), each
    filled node a new one; their OUTLET_MARKER_REPEATED diagnostics no longer apply."""
    found = [index for index, node in enumerate(nodes) if node.message is None and "{{" in node.text]
    filled = list(nodes) if found else nodes
    if found:
        texts = outlet_texts(outlet_blocks)
        for index in found:
            node = nodes[index]
            text = _OUTLET_MACRO.sub(lambda m: texts.get(m.group(1).strip(), ""), node.text)
            if text != node.text:
                filled[index] = replace(node, text=text)
    if diagnostics:
        diagnostics[:] = [d for d in diagnostics if d.get("code") != "OUTLET_MARKER_REPEATED"]
    return filled
