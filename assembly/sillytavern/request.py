"""The `st` placement's request: SillyTavern's message-level rules on top of the logical order (engine.md §5
"SillyTavern parity"; sillytavern.md §4).

Logical assembly already put every prompt, card field and world book group where the preset's slots say. What
SillyTavern does on top, and this module adds, using the pure steps of `assembly.sillytavern.steps`:
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
from assembly.host import conversation_message, request_message
from assembly.macros import MacroContext, expand_text_macros
from assembly.results import RequestMessage, adopt_complete
from assembly.sillytavern.budget import StBudgetGroup, st_budget
from assembly.sillytavern.examples import ExampleWorldInfo, new_chat_message, parse_dialogue_examples
from assembly.sillytavern.messages import (
    MainAttachment,
    StInjection,
    StMessage,
    chat_message,
    recurring_chat_message,
    trusted_message,
)
from assembly.sillytavern.models import AuthorNote
from assembly.sillytavern.pattern_matcher import PatternRuns
from assembly.sillytavern.regex import invalid_finds, regexed_chat_steps, scripts_in_order
from assembly.sillytavern.regex_changes import RegexChange
from assembly.sillytavern.slots import (
    EmptySlots,
    collection,
    continue_collection_place,
    empty_in_chat_main,
    empty_prompt_messages,
    in_chat_markers,
    in_collection_order,
    place_continue_collection,
)
from assembly.sillytavern.steps import (
    NAMES_BEHAVIOR,
    attach_to_in_chat_main,
    author_note_placement,
    bias_message,
    control_prompts,
    extension_prompt_placement,
    inject_in_chat,
    main_slot_messages,
    named_content,
    normalize_generation_type,
    persona_placement,
    squash_system_messages,
    take_continue_nudge,
    take_continue_prefill,
)
from assembly.sillytavern.worldinfo_emission import format_world_info

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
    """An in-chat injection of node values. Values of the types the model asks for are taken as they are (this runs
    for every depth node of every request), and the same values serve the same frozen injection again; anything else
    is validated, and refused, as the model would."""
    if role in _ROLE_NUMBER and type(depth) is int and type(order) is int:
        memo_key = (sources, content, role, depth, order, key)
        injection = _INJECTIONS.get(memo_key)
        if injection is None:
            if len(_INJECTIONS) >= _INJECTIONS_SIZE:
                _INJECTIONS.clear()  # bounded: past it, injections are only built again
            injection = _INJECTIONS[memo_key] = adopt_complete(StInjection, {
                "sources": sources, "content": content, "role": role, "depth": depth, "order": order, "key": key})
        return injection
    return StInjection(sources=sources, content=content, role=role, depth=depth, order=order, key=key)


# dict reads and writes are atomic: a lost write only costs a rebuild
_INJECTIONS: dict[tuple[Any, ...], StInjection] = {}
_INJECTIONS_SIZE = 4096


def _text_node(node_id: str, module: str, name: str, text: str, role: str) -> Node:
    """A node for text that comes from a resource with no rule of its own (author's note, extension prompts)."""
    return Node(id=node_id, rule_id=module, module=module, name=name, role=role, original_role=role, text=text,
                trust="operator", position_decision="source", position_id="content")


class _Extras:
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


def _extensions(ordered: list[Node], chat_nodes: list[Node], around_note: list[Node], resources: Any,
                extras: _Extras, macro_env: Any = None) -> list[Node]:
    """Persona positions, the author's note (with world info at its top and bottom: `around_note`, in order) and
    other extension prompts (sillytavern.md §8). Returns the ordered nodes without the ones that moved into these."""
    persona, note = resources.persona, resources.author_note
    placement = _persona_placement(persona) if persona is not None else None
    if placement is not None and placement.where != "marker":
        ordered = [n for n in ordered if n.module != "persona"]  # the personaDescription slot stays empty
        if placement.where in ("in_chat", "author_note_top", "author_note_bottom"):
            extras.node(_text_node("persona:persona", "persona", f"{persona.name} · persona", persona.description,
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
            extras.node(_text_node("author_note", "author_note", "Author's note", the_note.content, the_note.role))
        # The chat as the note's placement reads it, built only here: most requests have no note.
        chat = [chat_message(id=n.message["id"], role=n.role if n.role != "tool" else "user", content=n.text,
                             sources=(n.id,)) for n in chat_nodes]
        placed = author_note_placement(the_note, chat=chat, world_info_top=[(n.id, n.text) for n in top],
                                       world_info_bottom=[(n.id, n.text) for n in bottom],
                                       persona=persona if wraps else None, source_id="author_note",
                                       persona_source_id="persona:persona")
        done = placed.injection or placed.attachment
        if macro_env is not None and done is not None:
            # the note with the world info and persona around it is one extension prompt: getExtensionPrompt puts
            # it through the macros; beside Main the prompt list reads it that way and preparePrompt once more
            content = macro_env.evaluate(done.content)
            if isinstance(done, MainAttachment):
                content = macro_env.evaluate(content)
            done = done.model_copy(update={"content": content})
        extras.place(done)
        if not placed.inserted and placed.not_inserted:
            extras.diagnostics.append({"code": "AUTHOR_NOTE_NOT_INSERTED", "reason": placed.reason,
                                       "left_out": list(placed.not_inserted)})
    for ext in resources.extension_prompts:
        source = f"extension:{ext.key}"
        placed_ext = extension_prompt_placement(ext, source_id=source)
        if placed_ext is not None:
            extras.node(_text_node(source, "extension", ext.key, ext.content, ext.role))
            extras.place(placed_ext)
    return ordered


def _persona_placement(persona: Any) -> Any:
    """`persona_placement` of the request's persona: a frozen answer from a frozen persona, so the same persona is
    served the same placement again (kept beside it, so its id is never reused while cached)."""
    cached = _PERSONA_PLACEMENTS.get(id(persona))
    if cached is not None and cached[0] is persona:
        return cached[1]
    placement = persona_placement(persona, source_id="persona:persona")
    if len(_PERSONA_PLACEMENTS) >= _PERSONA_PLACEMENTS_SIZE:
        _PERSONA_PLACEMENTS.clear()  # bounded: past it, placements are only worked out again
    _PERSONA_PLACEMENTS[id(persona)] = (persona, placement)
    return placement


_PERSONA_PLACEMENTS: dict[int, tuple[Any, Any]] = {}
_PERSONA_PLACEMENTS_SIZE = 256


def _expanded_injections(resources: Any, user: str, char: str, macro_env: Any = None) -> Any:
    """SillyTavern expands macros in the author's note, the persona description and extension prompts when it
    injects them (getExtensionPrompt / preparePrompt, sillytavern.md §4.1, §4.5)."""
    texts = [e.content for e in resources.extension_prompts]
    texts += [r for r in (resources.author_note and resources.author_note.content,
                          resources.persona and resources.persona.description) if r]
    if macro_env is None and not any("{{" in text for text in texts):
        return resources  # no macro in any of them: the resources serve as they are
    macros = MacroContext(user=user, char=char, st=macro_env)

    def expand(text: str) -> str:
        return expand_text_macros(text, macros).text if "{{" in text or macro_env is not None else text

    update: dict[str, Any] = {"extension_prompts": tuple(
        e.model_copy(update={"content": expand(e.content)}) for e in resources.extension_prompts)}
    if resources.author_note is not None and macro_env is None:  # under SillyTavern's macros: once placed
        update["author_note"] = resources.author_note.model_copy(
            update={"content": expand(resources.author_note.content)})
    persona = resources.persona
    if persona is not None and (macro_env is None or persona.position == "at_depth"):
        # (a persona beside the author's note goes through the macros with the note)
        update["persona"] = resources.persona.model_copy(update={"description": expand(resources.persona.description)})
    return resources.model_copy(update=update)


def st_request(nodes: list[Node], *, resources: Any, names: dict[str, str], generation: Any,
               tokenizer: str, macro_env: Any = None) -> tuple[list[RequestMessage], list[Node], list[dict[str, Any]], dict | None,
                                        list[RegexChange]]:
    """The request messages for placement `st`, the nodes in request order (synthetic ones included), the
    diagnostics of SillyTavern's own steps, its budget report and what regex scripts changed in the chat. The
    conversation's message ids are used once each (`api` checks them as it reads the request)."""
    preset, character = resources.preset, resources.character
    kind = normalize_generation_type(generation.type)
    # One pass sorts the nodes: resource depth prompts go in-chat, the rest keep the logical order; the chat (with
    # the empty anchors of an empty one), the world info around the author's note, Main and the card examples are
    # picked out on the way. Only a marker set in-chat takes nodes out of `ordered` later (then they are read again).
    by_id: dict[str, Node] = {}
    depth_nodes: list[Node] = []
    ordered: list[Node] = []
    conversation: list[Node] = []  # every chat-module node in order, anchors included
    chat_nodes: list[Node] = []  # the ones that are messages
    around_note: list[Node] = []  # world info at the author's note's top or bottom
    main = in_chat_main = card_examples = None
    for n in nodes:
        by_id[n.id] = n
        module = n.module
        if n.message is None and n.depth is not None:
            n.locked, n.lock_reason, n.position_decision = True, "depth", "resource-depth"
            depth_nodes.append(n)
            if in_chat_main is None and module == "preset" and n.field == "main":
                in_chat_main = n
            continue
        ordered.append(n)
        if module in _CHAT_MODULES:
            conversation.append(n)
            if n.message is not None:
                chat_nodes.append(n)
        elif module == "worldbook":
            if n.position_id in _AROUND_NOTE:
                around_note.append(n)
        elif module == "preset":
            if main is None and n.field == "main":
                main = n
        elif module == "character" and card_examples is None and n.field == "examples":
            card_examples = n
    utility = bool(preset is not None and preset.has_utility_prompts)
    # A disabled (or missing) Chat History prompt sends no chat message and no in-chat injection (§11.9)
    collected = collection(preset, kind) if preset is not None and preset.has_prompt_order else None
    history_sent = collected is None or collected.sends_history
    user, char = names.get("user", "User"), names.get("char", "")
    if chat_nodes and "{{" in chat_nodes[0].text and macro_env is None:
        # the chat's first message (the greeting) gets its macros before anything else (§3); the others as the
        # history is filled (_named_chat)
        chat_nodes[0].text = expand_text_macros(chat_nodes[0].text, MacroContext(user=user, char=char, st=macro_env)).text
    scripts = scripts_in_order(resources)
    regex_changes: list[RegexChange] = []
    pattern_runs = PatternRuns()
    if scripts:  # the chat as regex scripts leave it for the prompt (§13.1)
        macros = MacroContext(user=user, char=char, st=macro_env)
        texts = regexed_chat_steps([(n.role, n.text) for n in chat_nodes], scripts, macros, generation_type=kind,
                                   typed=[kind == "normal" and n.module == "input" for n in chat_nodes],
                                   runs=pattern_runs)
        for node, (text, steps) in zip(chat_nodes, texts, strict=True):
            node.text = text
            regex_changes.extend(RegexChange.of(node.id, step) for step in steps)
    extras = _Extras(by_id)
    if scripts:
        extras.diagnostics.extend(invalid_finds(scripts, MacroContext(user=user, char=char, st=macro_env)))
        extras.diagnostics.extend(pattern_runs.diagnostics())
    ordered = _extensions(ordered, chat_nodes, around_note, _expanded_injections(resources, user, char, macro_env), extras,
                          macro_env)
    ordered, marker_injections = in_chat_markers(ordered, preset, kind)
    if marker_injections:  # a marker's nodes went in-chat: Main and the examples are what is left of them
        main = next((n for n in ordered if n.module == "preset" and n.field == "main"), None)
        card_examples = next((n for n in ordered if n.module == "character" and n.field == "examples"), None)
        conversation = [n for n in ordered if n.module in _CHAT_MODULES]
    injections = in_collection_order(_injections(depth_nodes) + marker_injections, preset, kind, by_id) + \
        extras.injections
    if extras.attachments and main is None and in_chat_main is not None:
        injections = attach_to_in_chat_main(injections, extras.attachments, main_source_id=in_chat_main.id)
    elif extras.attachments and main is None and empty_in_chat_main(preset) is not None:
        # Main sends nothing but is in-chat: what attaches to it still takes its depth, role and order (§4.4)
        anchor = empty_in_chat_main(preset)
        injections = [i for i in attach_to_in_chat_main([*injections, anchor], extras.attachments,
                                                         main_source_id="preset:main:empty") if i is not anchor]
        extras.attachments = []

    # World info at the example positions becomes example dialogues beside the card's (sillytavern.md §7.5)
    em_nodes = [n for n in ordered if n.module == "worldbook" and n.slot_id is not None and n.message is None
                and n.position_id in _EM_POSITIONS] if utility else []
    em_ids = {id(n) for n in em_nodes}
    examples_done = False

    plan: list[StMessage] = []
    tail: list[StMessage] = []
    chat_done = False
    slots = EmptySlots(preset)
    # Main sends nothing (disabled or empty): its attachments still go where Main's slot is (§4.4, §11.8)
    if extras.attachments and main is None and in_chat_main is None:
        attached = _claimed(main_slot_messages(None, extras.attachments), by_id)
        if not slots.add("main", attached):  # no Main in the order at all: the attachments lead
            plan.extend(attached)
    if collected is not None:
        silent = collected.silent  # most presets have none: then the nodes are not read for them
        for identifier, empty in empty_prompt_messages(preset, silent, ordered) if silent else ():
            slots.add(identifier, [empty])
    index = 0
    while index < len(ordered):
        node = ordered[index]
        if slots.pending:  # most requests have no empty slot waiting
            plan.extend(slots.before(node))
        if node.module in _CHAT_MODULES:  # conversation messages, or the empty anchors of an empty chat
            if ordered[index:index + len(conversation)] == conversation:  # the usual case: one run, compared by id
                index += len(conversation)
                run = [n for n in conversation if n.message is not None]
            else:
                run = []
                while index < len(ordered) and ordered[index].module in _CHAT_MODULES:
                    if ordered[index].message is not None:
                        run.append(ordered[index])
                    index += 1
            block, tail = _chat_block(run, injections if not chat_done else [], preset, user, char, utility, by_id,
                                      kind, macro_env)
            if history_sent:
                plan.extend(block)
            chat_done = True
            continue
        if id(node) in em_ids:
            while index < len(ordered) and id(ordered[index]) in em_ids:
                index += 1
            if card_examples is None and not examples_done:  # no card examples: the entries' dialogues alone
                plan.extend(_example_blocks(None, em_nodes, preset, user, char, by_id, macro_env))
                examples_done = True
            continue
        if node.module == "worldbook" and node.slot_id is not None:
            run = []
            while index < len(ordered) and ordered[index].module == "worldbook" and \
                    ordered[index].slot_id == node.slot_id and ordered[index].message is None:
                run.append(ordered[index])
                index += 1
            text = format_world_info([n.text for n in run], preset.wi_format if preset is not None else "{0}")
            if macro_env is not None:  # the formatted world info is a prompt: through the macros again
                text = macro_env.evaluate(text)
            plan.append(trusted_message(run[0].id, run[0].role, text, "prompt", tuple(n.id for n in run)))
            continue
        if utility and node.module == "character" and node.field == "examples" and character is not None:
            plan.extend(_example_blocks(node, em_nodes, preset, user, char, by_id, macro_env))
            examples_done = True
            index += 1
            continue
        # A prompt node's fields were validated where the node was made: no second validation per prompt.
        message = trusted_message(node.id, node.role, node.text, "prompt", (node.id,),
                                  node.message.get("name") if node.message else None)
        if node is main and extras.attachments:
            plan.extend(_claimed(main_slot_messages(message, extras.attachments), by_id))
        else:
            plan.append(message)
        index += 1
    plan.extend(slots.rest())
    if not chat_done and injections and history_sent:
        block, tail = _chat_block([], injections, preset, user, char, utility, by_id, kind, macro_env)
        plan.extend(block)

    if not history_sent:  # the continue prefill is taken from the chat before the history slot; the nudge is not
        tail = [m for m in tail if m.kind == "continue_prefill"]

    # The tail (§4.2): "Start Reply With" at its slot after every ordered prompt, the continue collection, then the
    # control prompts (impersonate, quiet) last
    # both steps send nothing without their text (most requests): then they are not run
    if generation.start_reply_with:
        bias = bias_message(_expanded(generation.start_reply_with, user, char, macro_env), kind)
        if bias is not None:
            plan.extend(_claimed([bias], by_id, module="generation"))
    plan.extend(tail)
    if kind == "impersonate" or generation.quiet_prompt:
        # the impersonation prompt is sent (so expanded) only when impersonating
        impersonation = (_expanded(preset.impersonation_prompt if preset else "", user, char, macro_env)
                         if kind == "impersonate" else "")
        for control in control_prompts(kind, impersonation_prompt=impersonation,
                                       quiet_prompt=_expanded(generation.quiet_prompt or "", user, char, macro_env)):
            plan.extend(_claimed([control], by_id, module="generation"))
    report = None
    counted: dict[str, int] = {}  # message id -> tokens of its content, as the budget counted them
    if preset is not None:
        plan, report = _preset_budget(plan, preset, tokenizer, extras.diagnostics, by_id, counted)
    if kind == "continue" and collected is not None:
        plan = place_continue_collection(plan, continue_collection_place(preset, collected.prompts))
    if preset is not None and preset.squash_system_messages:
        plan = squash_system_messages(plan)
        counted = {}  # squashed messages have new texts under their first message's id
    messages, order = _to_request(plan, by_id, tokenizer, counted)
    return messages, order, extras.diagnostics, report, regex_changes


_CHAT_MODULES = ("history", "input")
_AROUND_NOTE = ("before_author_note", "after_author_note")
_NAMING_BEHAVIORS = (NAMES_BEHAVIOR["content"], NAMES_BEHAVIOR["completion"])  # the ones that change a message
_EM_SIDES = {"before_example_messages": "before", "after_example_messages": "after"}
_EM_POSITIONS = tuple(_EM_SIDES)
_HISTORY_KINDS = ("chat", "injection")
_EXAMPLE_KINDS = ("example_header", "example")
_TAIL_KINDS = ("continue_message", "continue_nudge", "continue_prefill")


def _example_blocks(examples_node: Node | None, em_nodes: list[Node], preset: Any, user: str, char: str,
                    by_id: dict[str, Node], macro_env: Any = None) -> list[StMessage]:
    """The card's dialogue examples (or none) and the world info at the example positions as `[Example Chat]`
    blocks, each message with a node of its own (sillytavern.md §7.5)."""
    blocks = parse_dialogue_examples(
        examples_node.text if examples_node is not None else "", user_name=user, char_name=char,
        new_example_chat_prompt=macro_env.evaluate(preset.new_example_chat_prompt) if macro_env is not None
        else preset.new_example_chat_prompt, source_id=examples_node.id if examples_node
        else "mes_example",
        # an entry's text goes through baseChatReplace once more before it is parsed
        world_info=[ExampleWorldInfo(source_id=n.id, content=macro_env.base_chat_replace(n.text) if macro_env
                                     is not None else n.text, position=_EM_SIDES[n.position_id])
                    for n in sorted(em_nodes, key=lambda n: n.order if n.order is not None else 100)])
    out: list[StMessage] = []
    for block in blocks:
        origin = next((m.sources[0] for m in block if m.kind == "example"), None)
        owner = (by_id.get(origin) if origin is not None else None) or examples_node
        for message in block:
            module = "worldbook" if owner is not None and owner.module == "worldbook" else "character"
            synthetic = _synthetic(f"{(owner.id if owner else 'examples')}:{message.id}", module,
                                   message.name or "example", message, owner)
            by_id[synthetic.id] = synthetic
            out.append(message.model_copy(update={"sources": (synthetic.id,)}))
    return out


def _expanded(text: str, user: str, char: str, macro_env: Any = None) -> str:
    if macro_env is not None:
        return macro_env.evaluate(text)
    return expand_text_macros(text, MacroContext(user=user, char=char)).text if "{{" in text else text


def _preset_budget(plan: list[StMessage], preset: Any, tokenizer: str, diagnostics: list[dict[str, Any]],
                   by_id: dict[str, Node], counted: dict[str, int]) -> tuple[list[StMessage], dict[str, Any]]:
    """SillyTavern's own budget (sillytavern.md §6): openai_max_context - openai_max_tokens; history newest first,
    then the examples; what does not fit is dropped and listed. Mandatory prompts that do not fit are reported with
    SillyTavern's message and sent as far as they went (it shows the partial prompt). When the chat ends with the
    assistant, the preset's `send_if_empty` becomes a user message at the end of the history (§4.3) if it fits."""
    # The plan sorted into the budget's parts in one pass: history, separator, continue tail, example blocks (each
    # header starts one) and the mandatory prompts, one group each, in processing order.
    history: list[StMessage] = []
    tail: list[StMessage] = []
    examples: list[list[StMessage]] = []
    mandatory: list[StBudgetGroup] = []
    separator = None
    for i, m in enumerate(plan):
        kind = m.kind
        if kind in _HISTORY_KINDS:
            history.append(m)
        elif kind in _EXAMPLE_KINDS:
            if kind == "example_header" or not examples:
                examples.append([])
            examples[-1].append(m)
        elif kind in _TAIL_KINDS:
            tail.append(m)
        elif kind == "new_chat":
            separator = m if separator is None else separator
        else:
            mandatory.append(_mandatory_group(i, m, kind in ("control", "continue_prefill")))
    result = st_budget(max_context=preset.openai_max_context, max_tokens=preset.openai_max_tokens,
                       mandatory=mandatory, history=history, new_chat=separator, continue_messages=tail,
                       send_if_empty=preset.send_if_empty, examples=examples,
                       has_history_slot=bool(history) or separator is not None,
                       has_examples_slot=bool(examples), encoding=tokenizer,
                       content_tokens=counted)
    dropped = {i for d in result.dropped if d.reason != "empty" for i in (d.message_ids or (d.id,))}
    if result.failure is not None:
        diagnostics.append({"code": result.failure.code, "message": result.failure.message,
                            "item": result.failure.item, "needed": result.failure.needed,
                            "available": result.failure.available})
    report = {"source": "preset", "limit": result.limit, "remaining": result.remaining,
              "dropped": [d.model_dump(mode="json") for d in result.dropped if d.reason != "empty"],
              "failure": result.failure.model_dump(mode="json") if result.failure else None}
    kept = [m for m in plan if m.id not in dropped] if dropped else plan  # the plan is this request's own list
    # the send_if_empty message, when there is one, is the last of the history the budget kept
    filler = result.history[-1] if result.history and result.history[-1].kind == "send_if_empty" else None
    if filler is not None:
        last = max(i for i, m in enumerate(kept) if m.kind in _HISTORY_KINDS)
        kept.insert(last + 1, _claimed([filler], by_id, module="preset")[0])
    return kept, report


def _mandatory_group(index: int, message: StMessage, reserve: bool) -> StBudgetGroup:
    """The budget group of the plan's `index`-th message. A preset's prompts are the same frozen messages in every
    request (`trusted_message`), so their groups serve again too: each kept beside its message (so an id is never
    reused while cached)."""
    key = (index, id(message), reserve)
    group = _GROUPS.get(key)
    if group is None or group.messages[0] is not message:
        if len(_GROUPS) >= _GROUPS_SIZE:
            _GROUPS.clear()  # bounded: past it, groups are only built again
        group = _GROUPS[key] = adopt_complete(StBudgetGroup, {"id": f"prompt:{index}", "messages": (message,),
                                                              "reserve": reserve})
    return group


_GROUPS: dict[tuple[int, int, bool], StBudgetGroup] = {}
_GROUPS_SIZE = 4096


def _claimed(messages: list[StMessage], by_id: dict[str, Node], module: str = "extension") -> list[StMessage]:
    """Messages whose sources are not nodes yet (main attachments, control prompts) get a node each."""
    out = []
    for message in messages:
        known = [s for s in message.sources if s in by_id]
        if not known:
            node = _text_node(f"{module}:{message.id}", module, message.id, message.content, message.role)
            by_id[node.id] = node
            message = message.model_copy(update={"sources": (node.id,)})
        out.append(message)
    return out


def _chat_block(run: list[Node], injections: list[StInjection], preset: Any, user: str, char: str, utility: bool,
                by_id: dict[str, Node], kind: str, macro_env: Any = None) -> tuple[list[StMessage], list[StMessage]]:
    """The chatHistory slot: separator, history with its in-chat injections; and what continue moves to the end."""
    prefill_taken = kind == "continue" and preset.continue_prefill and bool(run)
    # One pass builds each chat message as the names step (§3) and the macros of the history (§4.2) leave it, so
    # neither step makes a second copy; the continue prefill, taken out below, keeps its text as written.
    named, tool_calls = _named_chat(run, preset.names_behavior, user, char, by_id,
                        expand_upto=len(run) - 1 if prefill_taken else len(run), macro_env=macro_env)
    tail: list[StMessage] = []
    if prefill_taken:
        # Claude's assistant prefill goes before the continued assistant message (sillytavern.md §4.2 step 9)
        claude = preset.other_fields.get("chat_completion_source") == "claude"
        prefill_text = (expand_text_macros(preset.assistant_prefill, MacroContext(user=user, char=char, st=macro_env)).text
                        if claude and preset.assistant_prefill else "")
        named, prefill = take_continue_prefill(named, assistant_prefill=prefill_text)
        if prefill is not None:
            tail.append(prefill)
    # the chat's ids are the conversation's, checked as the request was read (api._check_unique_ids)
    history = inject_in_chat(named, injections, chat_checked=True)
    nudge = None
    if macro_env is not None:
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
        if nudge is None:
            nudge = expand_text_macros(preset.continue_nudge_prompt, MacroContext(user=user, char=char)).text
        history, continued = take_continue_nudge(history, continue_nudge_prompt=nudge)
        tail.extend(_claimed(continued, by_id, module="generation"))
    block: list[StMessage] = []
    if utility and preset.new_chat_prompt:
        separator = new_chat_message(macro_env.evaluate(preset.new_chat_prompt) if macro_env is not None
                                     else preset.new_chat_prompt)
        synthetic = _synthetic("preset:newMainChat", "preset", "New chat separator", separator, None)
        by_id[synthetic.id] = synthetic
        block.append(separator.model_copy(update={"sources": (synthetic.id,)}))
    block.extend(history)
    return block, tail


def _filled_history(history: list[StMessage], macro_env: Any, by_id: dict[str, Node]) -> list[StMessage]:
    """populateChatHistory: the history, its in-chat injections among it, newest first, each message through
    SillyTavern's macros once more (a conversation message's node takes the text when it is its text alone)."""
    out: list[StMessage] = []
    for message in reversed(history):
        if message.kind == "chat" and not message.content and message.id in macro_env.emptied:
            continue  # its macros left nothing when it was sent: getChat() drops an empty message
        if message.kind in ("chat", "injection") and message.content:
            content = macro_env.evaluate(message.content)
            if not content and message.kind == "chat" and not _has_tool_calls(message, by_id):
                continue  # emptied now: dropped as well
            if content != message.content:
                if message.kind == "chat" and len(message.sources) == 1:
                    node = by_id.get(message.sources[0])
                    if node is not None and node.text.replace("\r", "") == message.content:
                        node.text = content
                message = message.model_copy(update={"content": content})
        out.append(message)
    out.reverse()
    return out


def _has_tool_calls(message: StMessage, by_id: dict[str, Node]) -> bool:
    node = by_id.get(message.sources[0]) if message.sources else None
    return bool(node is not None and node.message is not None and node.message.get("tool_calls"))


def _named_chat(run: list[Node], behavior: int, user: str, char: str, by_id: dict[str, Node], *,
                expand_upto: int, macro_env: Any = None) -> tuple[list[StMessage], bool]:
    """The chat messages with `names_behavior` applied (a tool result is a user message here) and, for the first
    `expand_upto`, their text macros expanded: SillyTavern expands every chat message as it fills the history, and
    the node takes the expanded text too. Also whether any message carries tool calls (read in the same pass)."""
    speakers = {"user": user, "assistant": char}
    chat = []
    tool_calls = False
    plain = behavior not in _NAMING_BEHAVIORS  # none / default: the text as it is (named_content, inline)
    for index, n in enumerate(run):
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
        if macro_env is None and "{{" in content and index < expand_upto:  # each text its own context: no variable crosses messages
            content = expand_text_macros(content, MacroContext(user=user, char=char)).text
            if "{{" in n.text:
                n.text = expand_text_macros(n.text, MacroContext(user=user, char=char)).text
        chat.append(recurring_chat_message(native["id"], role, content, n.id, speaker, name))
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


def _to_request(plan: list[StMessage], by_id: dict[str, Node], tokenizer: str, counted: dict[str, int]
                ) -> tuple[list[RequestMessage], list[Node]]:
    """The request messages of the plan and the nodes in request order; `counted` holds the content tokens the
    budget already counted, by message id (the messages' ids are unique and their texts as counted). SillyTavern
    never sends an empty message; a conversation message (a tool call has no text) always goes."""
    counted_tokens, node_of = counted.get, by_id.get
    out: list[RequestMessage] = []
    order: list[Node] = []
    seen: set[str] = set()
    index = -1
    for message in plan:
        sources = message.sources
        if message.kind == "chat":
            node = node_of(sources[0]) if len(sources) == 1 else None
            if node is not None and node.message is not None:  # a conversation message: the usual one, taken first
                index += 1
                # tool results keep their role; the chat copy above only serves SillyTavern's name rules
                delivery = "input" if node.module == "input" else "history"
                node.request_index, node.region, node.delivery = index, "request", delivery
                if node.id not in seen:
                    seen.add(node.id)
                    order.append(node)
                out.append(conversation_message(node, message.content, delivery, "request",
                                                "native" if delivery == "history" else "appended", tokenizer,
                                                message.name, counted_tokens(message.id)))
                continue
        elif not message.content:
            continue
        index += 1
        if len(sources) == 1:  # nearly every other message: one prompt
            only = node_of(sources[0])
            if only is None:
                parts, native = [], None
            else:
                parts, native = [only], only if only.message is not None else None
        else:
            parts = [by_id[s] for s in sources if s in by_id]
            native = next((p for p in parts if p.message is not None), None)
        if native is not None and message.kind == "chat":
            delivery = "input" if native.module == "input" else "history"
            status = "native" if delivery == "history" else "appended"
            role, message_id = native.role, native.message["id"]  # type: ignore[index]
        else:
            delivery, role, status, message_id = "request", message.role, "request-only", None
        for part in parts:
            part.request_index, part.region = index, "request"
            part.delivery = delivery if part.message is not None else "request"
            if part.id not in seen:
                seen.add(part.id)
                order.append(part)
        out.append(request_message(parts, role, message.content, delivery, "request", status, tokenizer, message_id,
                                   message.name, "", counted_tokens(message.id)))
    return out, order
