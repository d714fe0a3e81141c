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

from dataclasses import dataclass, field
from typing import Any

from assembly.blocks import Node, node_values
from assembly.host import request_message
from assembly.macros import MacroContext
from assembly.results import RequestMessage
from assembly.sillytavern.budget import StBudgetGroup, st_budget
from assembly.sillytavern.messages import StInjection, StMessage, trusted_message
from assembly.sillytavern.regex import RegexedChat, invalid_finds, regexed_chat_once, scripts_in_order
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
from assembly.sillytavern.st_chat import (
    EM_SIDES,
    Extras,
    chat_block,
    claimed,
    depth_injections,
    example_blocks,
    expanded_injections,
    extensions,
)
from assembly.sillytavern.steps import (
    attach_to_in_chat_main,
    bias_message,
    control_prompts,
    main_slot_messages,
    normalize_generation_type,
    squash_system_messages,
)
from assembly.sillytavern.worldinfo_emission import format_world_info


@dataclass(frozen=True)
class StRequest:
    """The request of placement `st`: its messages, the nodes in request order (synthetic ones included), the
    findings of SillyTavern's own steps, its budget report and what regex scripts changed in the chat."""

    messages: list[RequestMessage]
    nodes: list[Node]
    placed: dict[str, tuple[int, str, str]]  # node id -> (request message index, region, delivery)
    diagnostics: list[dict[str, Any]]
    budget: dict[str, Any] | None
    regex_changes: list[RegexChange]


@dataclass
class _Sorted:
    """The nodes sorted in one pass: resource depth prompts go in-chat, the rest keep the logical order; the chat
    (with the empty anchors of an empty one), the world info around the author's note, Main and the card examples
    are picked out on the way."""

    by_id: dict[str, Node] = field(default_factory=dict)
    depth_nodes: list[Node] = field(default_factory=list)
    ordered: list[Node] = field(default_factory=list)
    conversation: list[Node] = field(default_factory=list)  # every chat-module node in order, anchors included
    chat_nodes: list[Node] = field(default_factory=list)  # the ones that are messages
    around_note: list[Node] = field(default_factory=list)  # world info at the author's note's top or bottom
    main: Node | None = None
    in_chat_main: Node | None = None
    card_examples: Node | None = None


def st_request(nodes: list[Node], *, resources: Any, names: dict[str, str], generation: Any,
               tokenizer: str, macro_env: Any, regexed_chat: RegexedChat | None = None) -> StRequest:
    """SillyTavern's steps over the ordered nodes (sillytavern.md §4.2): the chat's greeting macros and regex
    scripts, the extensions and in-chat injections, the prompts in collection order with the chat block and the
    example dialogues, the tail, the preset's budget, the continue collection, squashing. The conversation's message
    ids are used once each (`api` checks them as it reads the request). `macro_env`: SillyTavern's macros for this
    generation (assembly.sillytavern.macro_environment), under which every text goes through them in its order.
    The nodes handed in stay as they are: a node a step changes is this build's copy (see `_sorted`); where each
    node went is `placed`, not set on it."""
    preset = resources.preset
    kind = normalize_generation_type(generation.type)
    user, char = names.get("user", "User"), names.get("char", "")
    scripts = scripts_in_order(resources)
    picked = _sorted(nodes, copy_chat=bool(scripts))
    collected = collection(preset, kind) if preset is not None and preset.has_prompt_order else None
    regex_changes, diagnostics = _chat_texts(picked.chat_nodes, scripts, user, char, kind, regexed_chat, macro_env)
    extras = Extras(picked.by_id)
    extras.diagnostics.extend(diagnostics)
    injections = _in_chat(picked, resources, preset, kind, extras, user, char, macro_env)
    plan, tail = _prompt_plan(picked, injections, extras, resources, collected, kind, user, char, macro_env)
    plan = _with_tail(plan, tail, generation, preset, kind, user, char, picked.by_id, macro_env)
    report = None
    counted: dict[str, int] = {}  # message id -> tokens of its content, as the budget counted them
    if preset is not None:
        pin = bool((resources.text_settings or {}).get("pin_examples"))
        plan, report = _preset_budget(plan, preset, tokenizer, extras.diagnostics, picked.by_id, counted, pin)
    if kind == "continue" and collected is not None:
        plan = place_continue_collection(plan, continue_collection_place(preset, collected.prompts))
    if preset is not None and preset.squash_system_messages:
        plan = squash_system_messages(plan)
        counted = {}  # squashed messages have new texts under their first message's id
    messages, order, placed = _to_request(plan, picked.by_id, tokenizer, counted)
    return StRequest(messages, order, placed, extras.diagnostics, report, regex_changes)


def _sorted(nodes: list[Node], *, copy_chat: bool) -> _Sorted:
    """The nodes sorted (`_Sorted`), as they were handed in but for the copies this build changes: the resource
    depth prompts (locked at their depth here) and, with `copy_chat`, the conversation's messages (the regex scripts
    rewrite every one). Any other node a step changes is copied there (`st_chat._filled_history`,
    `st_chat._outside_tool_transactions`)."""
    picked = _Sorted()
    for n in nodes:
        if copy_chat and n.message is not None:
            n = Node(*node_values(n))
        module = n.module
        if n.message is None and n.depth is not None:
            n = Node(*node_values(n))
            n.locked, n.lock_reason, n.position_decision = True, "depth", "resource-depth"
            picked.by_id[n.id] = n
            picked.depth_nodes.append(n)
            if picked.in_chat_main is None and module == "preset" and n.field == "main":
                picked.in_chat_main = n
            continue
        picked.by_id[n.id] = n
        picked.ordered.append(n)
        if module in _CHAT_MODULES:
            picked.conversation.append(n)
            if n.message is not None:
                picked.chat_nodes.append(n)
        elif module == "worldbook":
            if n.position_id in _AROUND_NOTE:
                picked.around_note.append(n)
        elif module == "preset":
            if picked.main is None and n.field == "main":
                picked.main = n
        elif module == "character" and picked.card_examples is None and n.field == "examples":
            picked.card_examples = n
    return picked


def _chat_texts(chat_nodes: list[Node], scripts: tuple[Any, ...], user: str, char: str, kind: str,
                regexed: RegexedChat | None, macro_env: Any) -> tuple[list[RegexChange], list[dict[str, Any]]]:
    """The chat's texts as the regex scripts leave them (§13.1; its macros ran as the request was read), once per
    request: `regexed`, the pass the world info scan read, serves when it ran on this very chat. Returns what the
    scripts changed and the findings about them."""
    if not scripts:
        return [], []
    chat = [(n.role, n.text) for n in chat_nodes]
    typed = [kind == "normal" and n.module == "input" for n in chat_nodes]
    if regexed is None or not regexed.answers(tuple((r, t, y) for (r, t), y in zip(chat, typed, strict=True)), kind):
        regexed = regexed_chat_once(chat, scripts, MacroContext(user=user, char=char, st=macro_env),
                                    generation_type=kind,
                                    typed=typed)
    changes: list[RegexChange] = []
    for node, (text, steps) in zip(chat_nodes, regexed.results, strict=True):
        node.text = text
        changes.extend(RegexChange.of(node.id, step) for step in steps)
    return changes, [*invalid_finds(scripts, MacroContext(user=user, char=char, st=macro_env)), *regexed.limits]


def _in_chat(picked: _Sorted, resources: Any, preset: Any, kind: str, extras: Extras, user: str, char: str,
             macro_env: Any) -> list[StInjection]:
    """The extensions (persona, author's note, extension prompts) and the in-chat injections in collection order,
    with what attaches to an in-chat Main. A marker set in-chat takes its nodes out of the order (then Main, the
    examples and the conversation are read again)."""
    ordered = extensions(picked.ordered, picked.chat_nodes, picked.around_note,
                         expanded_injections(resources, user, char, macro_env), extras, macro_env)
    ordered, marker_injections = in_chat_markers(ordered, preset, kind)
    picked.ordered = ordered
    if marker_injections:
        picked.main = next((n for n in ordered if n.module == "preset" and n.field == "main"), None)
        picked.card_examples = next((n for n in ordered if n.module == "character" and n.field == "examples"), None)
        picked.conversation = [n for n in ordered if n.module in _CHAT_MODULES]
    injections = in_collection_order(depth_injections(picked.depth_nodes) + marker_injections, preset, kind,
                                     picked.by_id) + extras.injections
    injections = in_chat_macros(injections, macro_env)
    if extras.attachments and picked.main is None and picked.in_chat_main is not None:
        injections = attach_to_in_chat_main(injections, extras.attachments, main_source_id=picked.in_chat_main.id)
    elif extras.attachments and picked.main is None and empty_in_chat_main(preset) is not None:
        # Main sends nothing but is in-chat: what attaches to it still takes its depth, role and order (§4.4)
        anchor = empty_in_chat_main(preset)
        injections = [i for i in attach_to_in_chat_main([*injections, anchor], extras.attachments,
                                                         main_source_id="preset:main:empty") if i is not anchor]
        extras.attachments = []
    return injections


_ROLE_ORDER = {"system": 0, "user": 1, "assistant": 2}


def in_chat_macros(injections: list[StInjection], macro_env: Any) -> list[StInjection]:
    """populationInjectionPrompts: getExtensionPrompt puts the extension prompts in the chat (author's note,
    character's note, persona, world info at a depth) through the macros bucket by bucket, depth 0 first, then
    system, user, assistant, keys in sort order. Preset prompts in the chat were prepared with the prompt list."""
    out = list(injections)
    order = sorted((i for i, inj in enumerate(out) if inj.key is not None and inj.depth is not None),
                   key=lambda i: (out[i].depth, _ROLE_ORDER.get(out[i].role, 0), out[i].key))
    for i in order:
        content = macro_env.evaluate(out[i].content)
        if content != out[i].content:  # (an injection is frozen: one its macros leave as it was serves as it is)
            out[i] = out[i].model_copy(update={"content": content})
    return out


def _prompt_plan(picked: _Sorted, injections: list[StInjection], extras: Extras, resources: Any, collected: Any,
                 kind: str, user: str, char: str, macro_env: Any) -> tuple[list[StMessage], list[StMessage]]:
    """The prompts in order, each run of nodes as SillyTavern sends it: the chat block (with the in-chat
    injections; nothing when the Chat History prompt is off, §11.9), the world info of a slot in one message, the
    example dialogues (with world info at the example positions, §7.5), Main with its attachments; empty prompts
    still break a run. Returns the plan and what continue moves to the end."""
    preset, ordered, by_id = resources.preset, picked.ordered, picked.by_id
    utility = bool(preset is not None and preset.has_utility_prompts)
    history_sent = collected is None or collected.sends_history
    em_nodes = [n for n in ordered if n.module == "worldbook" and n.slot_id is not None and n.message is None
                and n.position_id in _EM_POSITIONS] if utility else []
    step = _PlanStep(picked, preset, user, char, by_id, em_nodes, utility, resources.character is not None,
                     macro_env=macro_env, strip_examples=bool((resources.text_settings or {}).get("strip_examples")))
    slots = EmptySlots(preset)
    plan: list[StMessage] = []
    tail: list[StMessage] = []
    chat_done = False
    if extras.attachments and picked.main is None and picked.in_chat_main is None:
        # Main sends nothing (disabled or empty): its attachments still go where Main's slot is (§4.4, §11.8)
        attached = claimed(main_slot_messages(None, extras.attachments), by_id)
        if not slots.add("main", attached):  # no Main in the order at all: the attachments lead
            plan.extend(attached)
    if collected is not None and collected.silent:
        for identifier, empty in empty_prompt_messages(preset, collected.silent, ordered):
            slots.add(identifier, [empty])
    index = 0
    while index < len(ordered):
        if slots.pending:
            plan.extend(slots.before(ordered[index]))
        if ordered[index].module in _CHAT_MODULES:  # conversation messages, or the empty anchors of an empty chat
            run, index = _chat_run(picked, index)
            block, tail = chat_block(run, injections if not chat_done else [], preset, user, char, utility, by_id,
                                     kind, macro_env)
            if history_sent:
                plan.extend(block)
            chat_done = True
            continue
        messages, index = step.messages(index, extras)
        plan.extend(messages)
    plan.extend(slots.rest())
    if not chat_done and injections and history_sent:
        block, tail = chat_block([], injections, preset, user, char, utility, by_id, kind, macro_env)
        plan.extend(block)
    if not history_sent:  # the continue prefill is taken from the chat before the history slot; the nudge is not
        tail = [m for m in tail if m.kind == "continue_prefill"]
    return plan, tail


def _chat_run(picked: _Sorted, index: int) -> tuple[list[Node], int]:
    """The conversation's messages from `index` on (one run of chat-module nodes) and the index after them."""
    ordered, conversation = picked.ordered, picked.conversation
    if ordered[index:index + len(conversation)] == conversation:  # the usual case: one run, compared by id
        return [n for n in conversation if n.message is not None], index + len(conversation)
    run = []
    while index < len(ordered) and ordered[index].module in _CHAT_MODULES:
        if ordered[index].message is not None:
            run.append(ordered[index])
        index += 1
    return run, index


@dataclass
class _PlanStep:
    """The messages of the prompt nodes outside the chat, a run at a time."""

    picked: _Sorted
    preset: Any
    user: str
    char: str
    by_id: dict[str, Node]
    em_nodes: list[Node]
    utility: bool
    has_character: bool
    macro_env: Any
    strip_examples: bool = False  # "Never include": no dialogue examples, the world info at their positions too
    examples_done: bool = False

    def messages(self, index: int, extras: Extras) -> tuple[list[StMessage], int]:
        ordered, node = self.picked.ordered, self.picked.ordered[index]
        if self.em_nodes and any(node is n for n in self.em_nodes):
            while index < len(ordered) and any(ordered[index] is n for n in self.em_nodes):
                index += 1
            if self.picked.card_examples is None and not self.examples_done and not self.strip_examples:
                self.examples_done = True  # the entries' dialogues alone
                return example_blocks(None, self.em_nodes, self.preset, self.user, self.char, self.by_id,
                                      self.macro_env), index
            return [], index
        if node.module == "worldbook" and node.slot_id is not None:
            run = []
            while index < len(ordered) and ordered[index].module == "worldbook" and \
                    ordered[index].slot_id == node.slot_id and ordered[index].message is None:
                run.append(ordered[index])
                index += 1
            text = format_world_info([n.text for n in run], self.preset.wi_format if self.preset else "{0}")
            # the formatted world info is a prompt: through the macros again
            prepared = self.macro_env.prepared_as("world_info", text)
            text = prepared if prepared is not None else self.macro_env.evaluate(text)
            return [trusted_message(run[0].id, run[0].role, text, "prompt", tuple(n.id for n in run))], index
        if self.utility and node.module == "character" and node.field == "examples" and self.has_character:
            self.examples_done = True
            if self.strip_examples:
                return [], index + 1
            return example_blocks(node, self.em_nodes, self.preset, self.user, self.char, self.by_id,
                                  self.macro_env), index + 1
        message = trusted_message(node.id, node.role, node.text, "prompt", (node.id,),
                                  node.message.get("name") if node.message else None)
        if node is self.picked.main and extras.attachments:
            return claimed(main_slot_messages(message, extras.attachments), self.by_id), index + 1
        return [message], index + 1


def _with_tail(plan: list[StMessage], tail: list[StMessage], generation: Any, preset: Any, kind: str, user: str,
               char: str, by_id: dict[str, Node], macro_env: Any) -> list[StMessage]:
    """The tail (§4.2): "Start Reply With" at its slot after every ordered prompt, the continue collection, then
    the control prompts (impersonate, quiet) last; each step sends nothing without its text."""
    if generation.start_reply_with:
        prepared = macro_env.prepared_as("bias", generation.start_reply_with)
        bias = bias_message(prepared if prepared is not None else macro_env.evaluate(generation.start_reply_with),
                            kind)
        if bias is not None:
            plan.extend(claimed([bias], by_id, module="generation"))
    plan.extend(tail)
    if kind == "impersonate" or generation.quiet_prompt:
        # the impersonation prompt is sent (so expanded) only when impersonating
        impersonation = (_prepared(macro_env, "impersonate", preset.impersonation_prompt if preset else "")
                         if kind == "impersonate" else "")
        quiet = _prepared(macro_env, "quiet", generation.quiet_prompt or "")
        for control in control_prompts(kind, impersonation_prompt=impersonation, quiet_prompt=quiet):
            plan.extend(claimed([control], by_id, module="generation"))
    return plan


def _prepared(macro_env: Any, what: str, text: str) -> str:
    """A control prompt's text as preparePromptsForChatCompletion left it (SillyTavern's macros ran there), else
    `text` through the macros now."""
    prepared = macro_env.prepared_as(what) if text else None
    return prepared if prepared is not None else macro_env.evaluate(text)


_CHAT_MODULES = ("history", "input")
_AROUND_NOTE = ("before_author_note", "after_author_note")
_EM_POSITIONS = tuple(EM_SIDES)
_HISTORY_KINDS = ("chat", "injection")
_EXAMPLE_KINDS = ("example_header", "example")
_TAIL_KINDS = ("continue_message", "continue_nudge", "continue_prefill")


def _preset_budget(plan: list[StMessage], preset: Any, tokenizer: str, diagnostics: list[dict[str, Any]],
                   by_id: dict[str, Node], counted: dict[str, int], pin_examples: bool = False
                   ) -> tuple[list[StMessage], dict[str, Any]]:
    """SillyTavern's own budget (sillytavern.md §6): openai_max_context - openai_max_tokens; history newest first,
    then the examples (with `pin_examples`, "Always included", the examples first); what does not fit is dropped and
    listed. Mandatory prompts that do not fit are reported with
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
                       has_examples_slot=bool(examples), pin_examples=pin_examples, encoding=tokenizer,
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
        kept.insert(last + 1, claimed([filler], by_id, module="preset")[0])
    return kept, report


def _mandatory_group(index: int, message: StMessage, reserve: bool) -> StBudgetGroup:
    """The budget group of the plan's `index`-th message."""
    return StBudgetGroup(f"prompt:{index}", (message,), reserve)


def _to_request(plan: list[StMessage], by_id: dict[str, Node], tokenizer: str, counted: dict[str, int]
                ) -> tuple[list[RequestMessage], list[Node], dict[str, tuple[int, str, str]]]:
    """The request messages of the plan, the nodes in request order and where each went; `counted` holds the
    content tokens the budget already counted, by message id (the messages' ids are unique and their texts as
    counted). SillyTavern never sends an empty message; a conversation message (a tool call has no text) always
    goes."""
    messages: list[RequestMessage] = []
    order: list[Node] = []
    placed: dict[str, tuple[int, str, str]] = {}
    index = -1
    for message in plan:
        kind, content, sources = message.kind, message.content, message.sources
        if not content and kind != "chat":
            continue
        index += 1
        native = None  # the first conversation message among the parts
        parts: list[Node] = []
        for source in sources:
            part = by_id.get(source)
            if part is not None:
                parts.append(part)
                if native is None and part.message is not None:
                    native = part
        if native is not None and kind == "chat":
            delivery = "input" if native.module == "input" else "history"
            status = "native" if delivery == "history" else "appended"
            role, message_id = native.role, native.message["id"]  # type: ignore[index]
        else:
            delivery, role, status, message_id = "request", message.role, "request-only", None
        for part in parts:  # a part in several messages is listed by the first, placed by the last
            if part.id not in placed:
                order.append(part)
            placed[part.id] = (index, "request", delivery if part.message is not None else "request")
        messages.append(request_message(parts, role, content, delivery, "request", status, tokenizer,
                                        message_id, message.name, "", counted.get(message.id)))
    return messages, order, placed
