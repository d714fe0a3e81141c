"""The chat as SillyTavern sends it under placement `st`, and what it adds around the prompts (sillytavern.md §3, §4,
§8): the in-chat injections of depth nodes, the persona, the author's note and extension prompts, the chatHistory slot
(new-chat separator, names, macros, injections, the continue tail) and the example dialogue blocks. Each message
keeps the ids of the nodes it holds; text that has no node yet gets a synthetic one."""

from __future__ import annotations

from typing import Any

from assembly.blocks import Node, node_values
from assembly.macros import MacroContext, expand_text_macros
from assembly.sillytavern.messages import (
    MainAttachment,
    StInjection,
    StMessage,
    chat_message,
)
from assembly.sillytavern.models import AuthorNote
from assembly.sillytavern.steps import (
    NAMES_BEHAVIOR,
    author_note_placement,
    extension_prompt_placement,
    inject_in_chat,
    named_content,
    persona_placement,
    take_continue_nudge,
    take_continue_prefill,
)

_ROLE_NUMBER = {"system": 0, "user": 1, "assistant": 2}
_NAMING_BEHAVIORS = (NAMES_BEHAVIOR["content"], NAMES_BEHAVIOR["completion"])  # the ones that change a message
EM_SIDES = {"before_example_messages": "before", "after_example_messages": "after"}


def synthetic_node(node_id: str, module: str, name: str, message: StMessage, reason_from: Node | None) -> Node:
    node = Node(id=node_id, rule_id=reason_from.rule_id if reason_from else module, module=module, name=name,
                role=message.role, original_role=message.role, text=message.content, trust="operator",
                position_decision=reason_from.position_decision if reason_from else "preset",
                position_id=reason_from.position_id if reason_from else "body")
    if reason_from is not None:
        node.slot_id, node.locked, node.lock_reason = reason_from.slot_id, reason_from.locked, reason_from.lock_reason
    return node


def depth_injections(depth_nodes: list[Node]) -> list[StInjection]:
    injections: list[StInjection] = []
    world: dict[tuple[int, str], list[Node]] = {}
    for node in depth_nodes:
        if node.module == "worldbook":
            world.setdefault((node.depth, node.role), []).append(node)  # type: ignore[arg-type]
            continue
        key = "DEPTH_PROMPT" if node.module == "character" else None
        injections.append(_injection((node.id,), node.text, node.role, node.depth, node.order if key is None else 100,
                                     key))
    for (depth, role), group in world.items():
        if len(group) == 1:  # the usual group: one entry, its own text (what the join of one gives)
            sources, text = (group[0].id,), group[0].text
        else:
            sources, text = tuple([n.id for n in group]), "\n".join([n.text for n in group])
        injections.append(_injection(sources, text, role, depth, 100,
                                     f"customDepthWI_{depth}_{_ROLE_NUMBER.get(role, 0)}"))
    return injections


def _injection(sources: tuple[str, ...], content: str, role: str, depth: Any, order: Any, key: str | None
               ) -> StInjection:
    """An in-chat injection of node values (validated, and refused, as the model says)."""
    return StInjection(sources=sources, content=content, role=role, depth=depth, order=order, key=key)


def text_node(node_id: str, module: str, name: str, text: str, role: str) -> Node:
    """A node for text that comes from a resource with no rule of its own (author's note, extension prompts)."""
    return Node(id=node_id, rule_id=module, module=module, name=name, role=role, original_role=role, text=text,
                trust="operator", position_decision="source", position_id="content")


class Extras:
    """What SillyTavern adds around the prompts: extension injections and attachments to Main, each a node."""

    __slots__ = ("by_id", "injections", "attachments", "diagnostics")

    def __init__(self, by_id: dict[str, Node]):
        self.by_id = by_id
        self.injections: list[StInjection] = []
        self.attachments: list[MainAttachment] = []
        self.diagnostics: list[dict[str, Any]] = []

    def node(self, node: Node) -> None:
        self.by_id.setdefault(node.id, node)

    def place(self, placed: StInjection | MainAttachment | None) -> None:
        if isinstance(placed, StInjection):
            self.injections.append(placed)
        elif isinstance(placed, MainAttachment):
            self.attachments.append(placed)


def extensions(ordered: list[Node], chat_nodes: list[Node], around_note: list[Node], resources: Any,
                extras: Extras, macro_env: Any) -> list[Node]:
    """Persona positions, the author's note (with world info at its top and bottom: `around_note`, in order) and
    other extension prompts (sillytavern.md §8). Returns the ordered nodes without the ones that moved into these."""
    persona, note = resources.persona, resources.author_note
    placement = _persona_placement(persona) if persona is not None else None
    if placement is not None and placement.where != "marker":
        ordered = [n for n in ordered if n.module != "persona"]  # the personaDescription slot stays empty
        if placement.where in ("in_chat", "author_note_top", "author_note_bottom"):
            extras.node(text_node("persona:persona", "persona", f"{persona.name} · persona", persona.description,
                                   persona.role))
        if placement.injection is not None:
            extras.place(placement.injection)
        elif placement.where == "unsupported":
            extras.diagnostics.append({"code": "ST_PERSONA_POSITION_UNSUPPORTED", "position": persona.position})
    top = [n for n in around_note if n.position_id == "before_author_note"] if around_note else []
    bottom = [n for n in around_note if n.position_id == "after_author_note"] if around_note else []
    wraps = placement is not None and placement.where in ("author_note_top", "author_note_bottom")
    if note is not None or top or bottom or wraps:
        moved = {id(n) for n in top + bottom}
        ordered = [n for n in ordered if id(n) not in moved]
        the_note = note if note is not None else AuthorNote()
        if the_note.content:
            extras.node(text_node("author_note", "author_note", "Author's note", the_note.content, the_note.role))
        # The chat as the note's placement reads it, built only here: most requests have no note.
        chat = [chat_message(id=n.message["id"], role=n.role if n.role != "tool" else "user", content=n.text,
                             sources=(n.id,)) for n in chat_nodes]
        placed = author_note_placement(the_note, chat=chat, world_info_top=[(n.id, n.text) for n in top],
                                       world_info_bottom=[(n.id, n.text) for n in bottom],
                                       persona=persona if wraps else None, source_id="author_note",
                                       persona_source_id="persona:persona")
        done = placed.injection or placed.attachment
        if isinstance(done, MainAttachment):
            # the note with the world info and persona around it is one extension prompt: beside Main the prompt
            # list's own pass is what is sent (in the chat, getExtensionPrompt's pass at its depth:
            # request.in_chat_macros)
            prepared = macro_env.prepared_as("author_note", done.content)
            content = prepared if prepared is not None else macro_env.evaluate(macro_env.evaluate(done.content))
            done = done.model_copy(update={"content": content})
        extras.place(done)
        if not placed.inserted and placed.not_inserted:
            extras.diagnostics.append({"code": "AUTHOR_NOTE_NOT_INSERTED", "reason": placed.reason,
                                       "left_out": list(placed.not_inserted)})
    for ext in resources.extension_prompts:
        source = f"extension:{ext.key}"
        placed_ext = extension_prompt_placement(ext, source_id=source)
        if placed_ext is not None:
            extras.node(text_node(source, "extension", ext.key, ext.content, ext.role))
            extras.place(placed_ext)
    return ordered


def _persona_placement(persona: Any) -> Any:
    """`persona_placement` of the request's persona."""
    return persona_placement(persona, source_id="persona:persona")


def expanded_injections(resources: Any, user: str, char: str, macro_env: Any) -> Any:
    """SillyTavern expands the extension prompts' macros when it injects them (getExtensionPrompt / preparePrompt,
    sillytavern.md §4.1, §4.5); the author's note, and a persona beside it, go through them once placed
    (`extensions`), a persona at its depth with the other extension prompts (`request.in_chat_macros`)."""
    if not resources.extension_prompts:
        return resources
    macros = MacroContext(user=user, char=char, st=macro_env)
    return resources.model_copy(update={"extension_prompts": tuple(
        e.model_copy(update={"content": expand_text_macros(e.content, macros).text})
        for e in resources.extension_prompts)})


def example_blocks(examples_node: Node | None, em_nodes: list[Node], preset: Any, user: str, char: str,
                    by_id: dict[str, Node], macro_env: Any) -> list[StMessage]:
    """The card's dialogue examples (or none) and the world info at the example positions as `[Example Chat]`
    blocks, each message with a node of its own (sillytavern.md §7.5)."""
    # the examples' parser loads with the first request that sends examples or their world info
    from assembly.sillytavern.examples import ExampleWorldInfo, parse_dialogue_examples

    blocks = parse_dialogue_examples(
        examples_node.text if examples_node is not None else "", user_name=user, char_name=char,
        new_example_chat_prompt=macro_env.evaluate(preset.new_example_chat_prompt),
        source_id=examples_node.id if examples_node else "mes_example",
        # an entry's text goes through baseChatReplace once more before it is parsed
        world_info=[ExampleWorldInfo(source_id=n.id, content=_example_entry(n.text, macro_env),
                                     position=EM_SIDES[n.position_id])
                    for n in sorted(em_nodes, key=lambda n: n.order if n.order is not None else 100)])
    out: list[StMessage] = []
    for block in blocks:
        origin = next((m.sources[0] for m in block if m.kind == "example"), None)
        owner = (by_id.get(origin) if origin is not None else None) or examples_node
        for message in block:
            module = "worldbook" if owner is not None and owner.module == "worldbook" else "character"
            synthetic = synthetic_node(f"{(owner.id if owner else 'examples')}:{message.id}", module,
                                   message.name or "example", message, owner)
            by_id[synthetic.id] = synthetic
            out.append(message._replace(sources=(synthetic.id,)))
    return out


def _example_entry(text: str, macro_env: Any) -> str:
    """An entry at an example position as Generate() parsed it (baseChatReplace once more, macro_order)."""
    prepared = macro_env.prepared_as("example_entry", text)
    return prepared if prepared is not None else macro_env.base_chat_replace(text)


def claimed(messages: list[StMessage], by_id: dict[str, Node], module: str = "extension") -> list[StMessage]:
    """Messages whose sources are not nodes yet (main attachments, control prompts) get a node each."""
    out = []
    for message in messages:
        known = [s for s in message.sources if s in by_id]
        if not known:
            node = text_node(f"{module}:{message.id}", module, message.id, message.content, message.role)
            by_id[node.id] = node
            message = message._replace(sources=(node.id,))
        out.append(message)
    return out


def chat_block(run: list[Node], injections: list[StInjection], preset: Any, user: str, char: str, utility: bool,
                by_id: dict[str, Node], kind: str, macro_env: Any) -> tuple[list[StMessage], list[StMessage]]:
    """The chatHistory slot: separator, history with its in-chat injections; and what continue moves to the end."""
    prefill_taken = kind == "continue" and preset.continue_prefill and bool(run)
    named, tool_calls = _named_chat(run, preset.names_behavior, user, char)
    tail: list[StMessage] = []
    if prefill_taken:
        # Claude's assistant prefill goes before the continued assistant message (sillytavern.md §4.2 step 9)
        claude = preset.other_fields.get("chat_completion_source") == "claude"
        prefill_text = (expand_text_macros(preset.assistant_prefill, MacroContext(user=user, char=char,
                                                                                   st=macro_env)).text
                        if claude and preset.assistant_prefill else "")
        named, prefill = take_continue_prefill(named, assistant_prefill=prefill_text)
        if prefill is not None:
            tail.append(prefill)
    # the chat's ids are the conversation's, checked as the request was read (api._check_unique_ids)
    history = inject_in_chat(named, injections, chat_checked=True)
    nudge = ""
    if kind == "continue" and not preset.continue_prefill:
        # the nudge is made before the history is filled: {{lastChatMessage}} is the message as it was
        last_chat = next((m for m in reversed(history) if m.kind == "chat"), None)
        node = by_id.get(last_chat.sources[0]) if last_chat is not None and last_chat.sources else None
        last = (node.text if node is not None else last_chat.content if last_chat else "").strip()
        nudge = macro_env.evaluate(macro_env.evaluate(preset.continue_nudge_prompt,
                                                      extra={"lastChatMessage": lambda: last}))
    history = _filled_history(history, macro_env, by_id)
    if tool_calls:  # most chats have none
        history = _outside_tool_transactions(history, run, by_id)
    if kind == "continue" and not preset.continue_prefill:
        history, continued = take_continue_nudge(history, continue_nudge_prompt=nudge)
        tail.extend(claimed(continued, by_id, module="generation"))
    block: list[StMessage] = []
    if utility and preset.new_chat_prompt:
        from assembly.sillytavern.examples import new_chat_message  # with the first utility prompt sent

        separator = new_chat_message(macro_env.evaluate(preset.new_chat_prompt))
        synthetic = synthetic_node("preset:newMainChat", "preset", "New chat separator", separator, None)
        by_id[synthetic.id] = synthetic
        block.append(separator._replace(sources=(synthetic.id,)))
    block.extend(history)
    return block, tail


def _filled_history(history: list[StMessage], macro_env: Any, by_id: dict[str, Node]) -> list[StMessage]:
    """populateChatHistory: the history, its in-chat injections among it, newest first, each message through
    SillyTavern's macros once more (a conversation message's node takes the text when it is its text alone); a
    chat message its macros emptied is dropped, as getChat() drops an empty message."""
    out: list[StMessage] = []
    for message in reversed(history):
        if message.kind == "chat" and not message.content and message.id in macro_env.emptied:
            continue  # its macros left nothing when it was sent
        if message.kind in ("chat", "injection") and message.content:
            content = macro_env.evaluate(message.content)
            if not content and message.kind == "chat" and not _has_tool_calls(message, by_id):
                continue  # emptied now: dropped as well
            if content != message.content:
                if message.kind == "chat" and len(message.sources) == 1:
                    node = by_id.get(message.sources[0])
                    if node is not None and node.text.replace("\r", "") == message.content:
                        # the node handed to the build stays as it was: the request's is a copy with the text
                        node = by_id[node.id] = Node(*node_values(node))
                        node.text = content
                message = message._replace(content=content)
        out.append(message)
    out.reverse()
    return out


def _has_tool_calls(message: StMessage, by_id: dict[str, Node]) -> bool:
    node = by_id.get(message.sources[0]) if message.sources else None
    return bool(node is not None and node.message is not None and node.message.get("tool_calls"))


def _named_chat(run: list[Node], behavior: int, user: str, char: str) -> tuple[list[StMessage], bool]:
    """The chat messages with `names_behavior` applied (a tool result is a user message here; their macros run as
    the history is filled, `_filled_history`), and whether any carries tool calls (read in the same pass)."""
    speakers = {"user": user, "assistant": char}
    chat: list[StMessage] = []
    tool_calls = False
    plain = behavior not in _NAMING_BEHAVIORS  # none / default: the text as it is (named_content, inline)
    for n in run:
        native, role = n.message, n.role
        if role == "tool":
            role = "user"
        if native.get("tool_calls"):
            tool_calls = True
        speaker = native.get("name") or speakers.get(role)
        if plain:
            content, name = n.text, None
            if "\r" in content:
                content = content.replace("\r", "")
        else:
            content, name = named_content(n.text, role, speaker, behavior)
        chat.append(StMessage(native["id"], role, content, name, speaker, "chat", (n.id,)))
    return chat, tool_calls


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
                    if source in by_id:  # the node handed to the build stays as it was: the request's is a copy
                        adjusted = by_id[source] = Node(*node_values(by_id[source]))
                        adjusted.adjusted_for_tools = True
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
