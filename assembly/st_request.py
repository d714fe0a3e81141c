"""The `st` placement's request: SillyTavern's message-level rules on top of the logical order (engine.md §5
"SillyTavern parity"; sillytavern.md §4).

Logical assembly already put every prompt, card field and world book group where the preset's slots say. What
SillyTavern does on top, and this module adds, using the pure steps of `assembly.st_parity`:
- in-chat prompts, the character's note and world info at depth go into the chat by SillyTavern's buckets (depth,
  then order, then role; one merged message per bucket), not one message each;
- the chat carries `names_behavior` (completion names or "Name: " prefixes);
- a preset with SillyTavern's utility prompts gets the new-chat separator above the history and its dialogue examples
  parsed into `[Example Chat]` blocks;
- the world info of one slot (before / after) is one message, wrapped with the preset's `wi_format`;
- `squash_system_messages`, and empty messages are never sent.
Every message keeps the ids of the nodes it holds, so the preview still says why each part is where it is.
"""

from __future__ import annotations

from typing import Any

from assembly.blocks import Node
from assembly.host import request_message
from assembly.results import RequestMessage
from assembly.st_parity import (
    StInjection,
    StMessage,
    apply_names_behavior,
    inject_in_chat,
    new_chat_message,
    parse_dialogue_examples,
    squash_system_messages,
)
from assembly.worldinfo import format_world_info

_ROLE_NUMBER = {"system": 0, "user": 1, "assistant": 2}


def _synthetic(node_id: str, module: str, name: str, message: StMessage, reason_from: Node | None) -> Node:
    node = Node(id=node_id, rule_id=reason_from.rule_id if reason_from else module, module=module, name=name,
                role=message.role, original_role=message.role, text=message.content, trust="operator",
                position_decision=reason_from.position_decision if reason_from else "preset",
                position_id=reason_from.position_id if reason_from else "body")
    if reason_from is not None:
        node.slot_id, node.locked, node.lock_reason = reason_from.slot_id, reason_from.locked, reason_from.lock_reason
    return node


def _injections(depth_nodes: list[Node]) -> list[StInjection]:
    injections: list[StInjection] = []
    world: dict[tuple[int, str], list[Node]] = {}
    for node in depth_nodes:
        if node.module == "worldbook":
            world.setdefault((node.depth, node.role), []).append(node)  # type: ignore[arg-type]
            continue
        key = "DEPTH_PROMPT" if node.module == "character" else None
        injections.append(StInjection(sources=(node.id,), content=node.text, role=node.role, depth=node.depth,
                                      order=node.order if key is None else 100, key=key))
    for (depth, role), group in world.items():
        injections.append(StInjection(sources=tuple(n.id for n in group), content="\n".join(n.text for n in group),
                                      role=role, depth=depth, order=100,
                                      key=f"customDepthWI_{depth}_{_ROLE_NUMBER.get(role, 0)}"))
    return injections


def st_request(nodes: list[Node], *, preset: Any, character: Any, names: dict[str, str],
               tokenizer: str) -> tuple[list[RequestMessage], list[Node]]:
    """The request messages for placement `st` and the nodes in request order (synthetic separators included)."""
    by_id = {n.id: n for n in nodes}
    depth_nodes = [n for n in nodes if n.depth is not None and n.message is None]
    for node in depth_nodes:
        node.locked, node.lock_reason, node.position_decision = True, "depth", "resource-depth"
    ordered = [n for n in nodes if not (n.depth is not None and n.message is None)]
    utility = bool(preset is not None and preset.has_utility_prompts)
    user, char = names.get("user", "User"), names.get("char", "")

    plan: list[StMessage] = []
    chat_done = False
    index = 0
    while index < len(ordered):
        node = ordered[index]
        if node.message is not None and node.module in ("history", "input"):
            run = []
            while index < len(ordered) and ordered[index].message is not None and \
                    ordered[index].module in ("history", "input"):
                run.append(ordered[index])
                index += 1
            plan.extend(_chat_block(run, depth_nodes if not chat_done else [], preset, user, char, utility, by_id))
            chat_done = True
            continue
        if node.module == "worldbook" and node.slot_id is not None:
            run = []
            while index < len(ordered) and ordered[index].module == "worldbook" and \
                    ordered[index].slot_id == node.slot_id and ordered[index].message is None:
                run.append(ordered[index])
                index += 1
            text = format_world_info([n.text for n in run], preset.wi_format if preset is not None else "{0}")
            plan.append(StMessage(id=run[0].id, role=run[0].role, content=text, kind="prompt",
                                  sources=tuple(n.id for n in run)))
            continue
        if utility and node.module == "character" and node.field == "examples" and character is not None:
            blocks = parse_dialogue_examples(node.text, user_name=user, char_name=char,
                                             new_example_chat_prompt=preset.new_example_chat_prompt,
                                             source_id=node.id)
            for message in (m for block in blocks for m in block):
                synthetic = _synthetic(f"{node.id}:{message.id}", "character", message.name or "example",
                                       message, node)
                by_id[synthetic.id] = synthetic
                plan.append(message.model_copy(update={"sources": (synthetic.id,)}))
            index += 1
            continue
        plan.append(StMessage(id=node.id, role=node.role, content=node.text, kind="prompt", sources=(node.id,),
                              name=node.message.get("name") if node.message else None))
        index += 1
    if not chat_done and depth_nodes:
        plan.extend(_chat_block([], depth_nodes, preset, user, char, utility, by_id))

    if preset is not None and preset.squash_system_messages:
        plan = squash_system_messages(plan)
    # SillyTavern never sends an empty message; a conversation message (a tool call has no text) always goes.
    return _to_request([m for m in plan if m.kind == "chat" or m.content], by_id, tokenizer)


def _chat_block(run: list[Node], depth_nodes: list[Node], preset: Any, user: str, char: str, utility: bool,
                by_id: dict[str, Node]) -> list[StMessage]:
    chat = [StMessage(id=n.message["id"], role=n.role if n.role != "tool" else "user", content=n.text,
                      speaker=n.message.get("name"), kind="chat", sources=(n.id,)) for n in run]
    mode = preset.names_behavior if preset is not None else 0
    named = apply_names_behavior(chat, mode, user_name=user, char_name=char) if run else []
    history = _outside_tool_transactions(inject_in_chat(named, _injections(depth_nodes)), run, by_id)
    block: list[StMessage] = []
    if utility and preset.new_chat_prompt:
        separator = new_chat_message(preset.new_chat_prompt)
        synthetic = _synthetic("preset:newMainChat", "preset", "New chat separator", separator, None)
        by_id[synthetic.id] = synthetic
        block.append(separator.model_copy(update={"sources": (synthetic.id,)}))
    block.extend(history)
    return block


def _outside_tool_transactions(history: list[StMessage], run: list[Node], by_id: dict[str, Node]) -> list[StMessage]:
    """A tool call and its results are one transaction: an injection that lands inside waits until it closes."""
    natives = {n.message["id"]: n.message for n in run}
    out: list[StMessage] = []
    waiting: list[StMessage] = []
    pending: set[str] = set()
    for message in history:
        native = natives.get(message.id) if message.kind == "chat" else None
        if native is None:
            if pending:
                waiting.append(message)
                for source in message.sources:
                    if source in by_id:
                        by_id[source].adjusted_for_tools = True
            else:
                out.append(message)
            continue
        if native["role"] == "assistant" and native.get("tool_calls"):
            pending = {c["id"] for c in native["tool_calls"]}
        elif native["role"] == "tool":
            pending.discard(native.get("tool_call_id"))
        out.append(message)
        if not pending and waiting:
            out.extend(waiting)
            waiting = []
    return out + waiting


def _to_request(messages: list[StMessage], by_id: dict[str, Node], tokenizer: str
                ) -> tuple[list[RequestMessage], list[Node]]:
    out: list[RequestMessage] = []
    order: list[Node] = []
    seen: set[str] = set()
    for message in messages:
        parts = [by_id[s] for s in message.sources if s in by_id]
        native = next((p for p in parts if p.message is not None), None)
        for part in parts:
            part.request_index = len(out)
            if part.id not in seen:
                seen.add(part.id)
                order.append(part)
        if native is not None and message.kind == "chat":
            delivery = "input" if native.module == "input" else "history"
            status = "native" if delivery == "history" else "appended"
            # tool results keep their role; the chat copy above only serves SillyTavern's name rules
            role = native.role
        else:
            delivery, role = "request", message.role
            status = "request-only"
        for part in parts:
            part.delivery, part.region = (delivery if part.message is not None else "request"), "request"
        out.append(request_message(parts, role=role, content=message.content, delivery=delivery, region="request",
                                   status=status, tokenizer=tokenizer, name=message.name,
                                   message_id=native.message["id"] if native is not None and message.kind == "chat"
                                   else None))
    return out, order
