"""The order in which SillyTavern's Generate() puts the prompts through the macros (sillytavern.md §4.1), for the
prompt nodes of logical assembly. Variable macros change what later ones read, so the order is the behaviour.

0. the author's note when it sits beside Main (Generate()'s prompt anchors), then the preset's scenario and
   personality formats (in place of a field that has text);
1. getPromptCollection: every enabled prompt of the preset that is not a marker, in prompt order (the card's
   override of Main or Post-History Instructions keeps the preset text it replaced, as its `{{original}}`);
2. the markers SillyTavern fills (`systemPrompts`): the description, personality and scenario, then the persona
   in the prompt, each through the macros once more;
3. the card's overrides of Main, then of Post-History Instructions, with `{{original}}` filled.
The chat, the in-chat injections and the utility prompts come after these (assembly.sillytavern.request).
"""

from __future__ import annotations

import re
from typing import Any

_LEFT = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)")
_MARKER_FIELDS = ("description", "personality", "scenario")
_OVERRIDES = ("main", "jailbreak")


def evaluate_prompt_macros(nodes: list[Any], env: Any, resources: Any = None) -> list[dict[str, Any]]:
    """Each prompt node's text through SillyTavern's macros, in Generate()'s order, in place; an UNSUPPORTED_MACRO
    diagnostic for each macro a node keeps as written because the engine does not know it."""
    env.unsupported.clear()
    note = resources.author_note if resources is not None else None
    if note is not None and note.position != "in_chat" and note.content:
        env.evaluate(note.content)  # Generate()'s prompt anchors read a note beside Main first
    overrides: dict[str, tuple[Any, str]] = {}
    for name in _MARKER_FIELDS:  # the preset's scenario / personality formats, read before the prompt list
        for node in nodes:
            if node.module == "character" and node.field == name and node.block is not None and \
                    dict(node.block.extra).get("format"):
                node.text = env.evaluate(node.text)
    for node in nodes:
        if node.module != "preset":
            continue
        extra = dict(node.block.extra) if node.block is not None else {}
        if "original" in extra:
            overrides[node.field] = (node, env.evaluate(extra["original"]))
        else:
            node.text = env.evaluate(node.text)
    for name in _MARKER_FIELDS:
        for node in nodes:
            if node.module == "character" and node.field == name:
                node.text = env.evaluate(node.text)
    for node in nodes:
        if node.module == "persona":
            node.text = env.evaluate(node.text)
    for name in _OVERRIDES:
        if name in overrides:
            node, original = overrides[name]
            node.text = env.evaluate(node.text, original=original)
    for node in nodes:  # the character's note and world info at a depth, as getExtensionPrompt reads them
        if (node.module == "character" and node.field == "depth_prompt") or (
                node.module == "worldbook" and node.depth is not None):
            node.text = env.evaluate(node.text)
    diagnostics = []
    for node in nodes:
        if "{{" in node.text:
            seen = dict.fromkeys(m.group(1) for m in _LEFT.finditer(node.text) if m.group(1) in env.unsupported)
            diagnostics += [{"code": "UNSUPPORTED_MACRO", "id": node.id, "name": node.name, "macro": name}
                            for name in seen]
    return diagnostics
