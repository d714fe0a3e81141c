"""Logical assembly (reference A.9, our design): rules -> blocks -> claims -> nodes in order, with reasons.

The steps, each a function below:
1. `_resolve_sources`: every rule kind gives its blocks (assembly.sources).
2. `_claim`: references (preset slots, `{{description}}`-style macros, card overrides) claim the blocks they pull in;
   the first claimant wins; in slot-first layouts the slot owners claim before everyone else.
3. `_emit`: walk the roots in rule order; a slot expands its claimed targets in place; text gets its macros; native
   blocks become one node per conversation message. Roles and depths are decided here.

Depth insertion into the conversation and the tool-transaction and size checks are in assembly.conversation; manual
positions, placement controls and position rows in assembly.positions.
"""

from __future__ import annotations

import re
from dataclasses import fields
from operator import attrgetter
from typing import Any

from assembly.blocks import NO_CHILDREN, Block, Node, node_values
from assembly.catalogue import CONTEXT_CONTROL_KINDS
from assembly.conversation import check_native_once
from assembly.errors import AssemblyError
from assembly.host import recorded_trust
from assembly.logical_state import HOST_KINDS, Entry, LogicalResult, Slot, State
from assembly.macros import RESOURCE_MACROS, MacroContext, expand_text_macros
from assembly.rule_settings import check_host_rule, check_preset_rules, refuse_second_rule
from assembly.sillytavern.macro_order import evaluate_prompt_macros
from assembly.sources import SLOT_OWNERS, SOURCES, SourceContext, native_block, world_book_slot_diagnostics
from assembly.strategy import TEXT_RULE_KINDS, priority_order

__all__ = ["HOST_KINDS", "LogicalResult", "assemble_logical"]

def assemble_logical(
    strategy: dict[str, Any],
    resources: Any,
    history: list[dict[str, Any]],
    inputs: list[dict[str, Any]],
    *,
    names: dict[str, str],
    host_system_text: str = "",
    variables: dict[str, str] | None = None,
    max_context: int = 8192,
    tokenizer: str = "o200k_base",
    generation_type: str = "normal",
    quiet_prompt: str = "",
    swiped: bool = False,
    turn: int = 0,
    seed: int | None = None,
    sillytavern: bool = True,
    macro_env: Any = None,
) -> LogicalResult:
    last_user = next((m["content"] for m in reversed(inputs) if m["role"] == "user"), None)
    if last_user is None:
        last_user = next((m["content"] for m in reversed(history) if m["role"] == "user"), "")
    last_char = next((m["content"] for m in reversed(history) if m["role"] == "assistant"), "")
    native = {"history": native_block("history", history), "input": native_block("input", inputs)}
    recorded_surface = any(["assembler-native-system" in block.message_ids for block in native.values()])
    if recorded_surface:
        host_system_text = ""  # an in-history host recorded the surface under this id: it stays history
    conversation = {"history": history, "input": inputs}
    if host_system_text:
        conversation["assembler-native-system"] = [{"id": "assembler-native-system", "role": "system",
                                                    "content": host_system_text, "source": {"kind": "system-prompt"}}]
    return _make_plan(strategy, resources, history, inputs, native, conversation, names=names,
                      host_system_text=host_system_text, variables=variables or {}, max_context=max_context,
                      tokenizer=tokenizer, generation_type=generation_type, quiet_prompt=quiet_prompt,
                      swiped=swiped, sillytavern=sillytavern, last_user=last_user, last_char=last_char,
                      turn=turn, seed=seed, macro_env=macro_env)


def _make_plan(
    strategy: dict[str, Any],
    resources: Any,
    history: list[dict[str, Any]],
    inputs: list[dict[str, Any]],
    native: dict[str, Block],
    conversation: dict[str, list[dict[str, Any]]],
    *,
    names: dict[str, str],
    host_system_text: str,
    variables: dict[str, str],
    max_context: int,
    tokenizer: str,
    generation_type: str,
    quiet_prompt: str,
    swiped: bool,
    turn: int = 0, seed: int | None = None,
    sillytavern: bool,
    last_user: str,
    last_char: str,
    macro_env: Any = None,
) -> LogicalResult:
    """The state of one logical assembly, then its steps: sources, claims, emission, concatenation.
    `conversation`: the history's and the input's messages (and the host's surface) by source."""
    backend = strategy.get("backend", "core")
    placement = strategy.get("placement", "modules")
    layout = strategy.get("layout")
    if backend != "native" and placement.startswith("native-"):
        raise AssemblyError("ASSEMBLY_PLACEMENT_INVALID", f"placement: {placement} requires the native backend")
    adaptive = backend == "native" and placement in ("native-roles", "native-slots")
    priority = tuple(priority_order(strategy))
    settings = {f"{p['sourceId']}#{p['positionId']}": p for p in (layout or {}).get("positions", [])}
    diagnostics: list[dict[str, Any]] = []
    state = State(
        strategy=strategy, backend=backend, placement=placement, layout=layout, adaptive=adaptive,
        list_placement=placement == "modules" or bool(layout and layout.get("source") == "manual"),
        priority=priority, settings=settings, entries={}, rule_entries=[], diagnostics=diagnostics,
        conversation=conversation,
        macro_ctx=MacroContext(user=names.get("user", "User"), char=names.get("char", ""),
                               last_user_message=last_user, last_char_message=last_char,
                               drop_unknown=not (placement == "st" and sillytavern), st=macro_env),
    )
    ctx = SourceContext(
        strategy=strategy, resources=resources, history=history, inputs=inputs, host_system_text=host_system_text,
        variables=variables,
        adaptive_worldbook=adaptive or bool(layout and layout.get("source") == "preset-slots"),
        preset_beats_default=state.beats("preset", "default"),
        manual_keys=frozenset(k for k, s in settings.items() if s.get("placement") == "list" and s.get("enabled")),
        disabled_keys=frozenset(k for k, s in settings.items() if s.get("enabled") is False),
        diagnostics=diagnostics, names={"user": names.get("user", "User"), "char": names.get("char", "")},
        max_context=max_context, tokenizer=tokenizer, generation_type=generation_type,
        quiet_prompt=quiet_prompt, swiped=swiped, turn=turn, seed=seed, sillytavern=placement == "st" and sillytavern,
        macro_env=macro_env,
    )
    _resolve_sources(state, ctx, native)
    roots = _roots(state)
    _claim(state, roots)
    nodes = _concatenate(state, _emit(state, roots))
    if macro_env is not None:  # SillyTavern's macros, in the order its Generate() runs them
        prompts = [n for n in nodes if n.message is None]
        diagnostics.extend(evaluate_prompt_macros(prompts, macro_env, resources, generation_type))
    check_native_once(nodes)
    return LogicalResult(
        nodes=nodes, diagnostics=diagnostics, position_decisions=state.decisions, slots=state.slots,
        adaptive=adaptive, rules=list(strategy["rules"]), outlet_blocks=_outlet_blocks(state),
        world_info=ctx.world_info, regexed_chat=ctx.regexed_chat,
    )


def _outlet_blocks(state: State) -> list[dict[str, Any]]:
    entry = state.entries.get("worldbook")
    if entry is None or not entry.rule["enabled"] or state.macro_ctx.st is not None:
        return []  # under SillyTavern's own macros {{outlet::name}} is filled as a macro
    return [{"id": b.id, "name": b.name, "outlet_name": dict(b.extra).get("outlet_name") or "", "order": b.order,
             "content": expand_text_macros(b.text, state.macro_ctx).text}
            for b in entry.blocks if b.group == "outlet" and state.position_enabled(b)]


# 1. sources -------------------------------------------------------------------------------------------------------


def _resolve_sources(state: State, ctx: SourceContext, native: dict[str, Block]) -> None:
    check_preset_rules(state.strategy["rules"])
    for index, rule in enumerate(state.strategy["rules"]):
        kind = rule["kind"]
        if kind in CONTEXT_CONTROL_KINDS:
            continue
        if kind in ("history", "input"):
            blocks = [native[kind]]
        elif kind in SOURCES:
            blocks = SOURCES[kind](ctx, rule) if rule["enabled"] or kind in (
                "character", "persona") else []
        else:
            if rule["enabled"]:
                state.diagnostics.append({"code": "ASSEMBLY_SOURCE_UNAVAILABLE", "sourceId": kind,
                                          "ruleId": rule["id"]})
            continue
        entry = Entry(rule=rule, index=index, blocks=blocks)
        if rule["enabled"] and kind in HOST_KINDS:
            check_host_rule(rule, index)
        if rule["enabled"]:
            owner = state.entries.get(kind)
            if (owner is not None and owner.rule["enabled"] and kind not in TEXT_RULE_KINDS
                    and rule.get("inputMode") != "text"):
                refuse_second_rule(rule, index, owner.rule)
            state.rule_entries.append(entry)
        # the first rule of a kind owns the source; text-mode rules only add their own text
        if kind not in state.entries and rule.get("inputMode") != "text":
            state.entries[kind] = entry
    world_book_slot_diagnostics(ctx)
    # Referenced sources without a rule still resolve (their rule is treated as disabled): a card's description is
    # reachable through the preset's marker even when the strategy has no character row.
    for kind in ("character", "persona"):
        if kind not in state.entries:
            rule = {"id": f"reference-{kind}", "kind": kind, "enabled": False, "role": "preserve",
                    "lifetime": "request", "depth": None, "text": "", "name": ""}
            state.entries[kind] = Entry(rule=rule, index=len(state.strategy["rules"]),
                                         blocks=SOURCES[kind](ctx, rule))


# 2. claims --------------------------------------------------------------------------------------------------------


_key = attrgetter("source", "id")  # a block's (source, id): its key in the claims, emitted and placed sets


def _roots(state: State) -> list[tuple[Entry, Block]]:
    roots = []
    for entry in state.rule_entries:
        for block in entry.blocks:
            if not state.position_enabled(block):
                state.decisions.append({"sourceId": block.source, "positionId": block.position_id,
                                        "nodeId": f"{entry.rule['id']}:{block.id}", "decision": "disabled"})
                continue
            if block.reference_only and not (state.user_placed(block) or state.prefer_source(block)):
                continue
            roots.append((entry, block))
    return roots


def _reference_targets(state: State, ref: Block, key: tuple[str, str]) -> list[Block]:
    # Targets depend only on the request's settings, so claims and emission share one answer per reference (`key`).
    cached = state.targets_cache.get(key)
    if cached is None:
        cached = state.targets_cache[key] = _find_reference_targets(state, ref)
    return cached


def _find_reference_targets(state: State, ref: Block) -> list[Block]:
    entry = state.entries.get(ref.target_source or "")
    if entry is None:
        if ref.target_source not in state.unavailable_reported:
            state.unavailable_reported.add(ref.target_source or "")
            state.diagnostics.append({"code": "ASSEMBLY_REFERENCE_UNAVAILABLE", "sourceId": ref.target_source})
        return []
    listed = entry.rule["enabled"] and entry.rule["id"] != f"reference-{entry.rule['kind']}"
    if state.list_placement and listed:
        # A listed source keeps its own place in module order; only named reference-only blocks can be pulled,
        # or the owner's own fields (card markers) when the layout is not manual.
        owner_rule = ref.target_fields is not None and not ref.honor_enabled
        if not (owner_rule and not (state.layout and state.layout.get("source") == "manual")):
            return [b for b in entry.blocks if b.reference_only and ref.target_fields and b.field in ref.target_fields]
    if ref.honor_enabled and not entry.rule["enabled"]:
        return []
    fields, group = ref.target_fields, ref.target_group
    if fields is None:  # reference-only blocks come only by name
        return [b for b in _referenceable(state, entry) if (group is None or b.group == group) and not b.reference_only]
    return [b for b in _referenceable(state, entry) if b.field in fields and (group is None or b.group == group)]


def _referenceable(state: State, entry: Entry) -> list[Block]:
    """The blocks of a source a reference may pull: position on, not placed by hand, not kept at its own place.
    The same for every reference of a request, so it is worked out once per source."""
    key = ("referenceable", entry.rule["id"])
    cached = state.targets_cache.get(key)
    if cached is None:
        cached = state.targets_cache[key] = [
            b for b in entry.blocks
            if state.position_enabled(b) and not state.user_placed(b) and not state.prefer_source(b)]
    return cached


def _claim(state: State, roots: list[tuple[Entry, Block]]) -> None:
    # Only adaptive placements let slot owners claim first; every other placement claims in one pass, in rule order
    # (reference A.9), a core preset-slots layout (placement `st`) too.
    slot_first = state.adaptive
    passes = [roots]
    if slot_first:
        passes = [[r for r in roots if r[1].source in SLOT_OWNERS], [r for r in roots if r[1].source not in SLOT_OWNERS]]
    for group in passes:
        if state.placement != "st":
            # within a pass, explicit claims (macros, a replaced card field) go before any reference (A.9)
            for _entry, block in group:
                if _key(block) not in state.claimed_by:
                    _claim_explicit(state, block)
        for _entry, block in group:
            key = _key(block)
            if key not in state.claimed_by:
                _claim_from(state, block, key, _NO_PATH)


def _claim_explicit(state: State, block: Block) -> None:
    """The claims a block makes by name: its resource macros and the card fields it replaces."""
    claimed_by, key = state.claimed_by, _key(block)
    # under SillyTavern's own macros {{description}} and the like are text: they claim nothing
    for name in block.macro_claims if state.macro_ctx.st is None else ():
        target = _macro_target(state, name)
        if target is not None and _key(target) not in claimed_by and _macro_allowed(state, target):
            claimed_by[_key(target)] = key
    for field_name in block.field_claims:
        target = _macro_target_field(state, "character", field_name)
        if target is not None and _key(target) not in claimed_by:
            claimed_by[_key(target)] = key


def _macro_target(state: State, name: str) -> Block | None:
    source, field_name = RESOURCE_MACROS[name]
    entry = state.entries.get(source)
    if entry is None:
        return None
    return next((b for b in entry.blocks if b.field == field_name), None)


_NO_PATH: frozenset[tuple[str, str]] = frozenset()  # the references a claim came through, at a root


def _claim_from(state: State, block: Block, key: tuple[str, str], path: frozenset[tuple[str, str]]) -> None:
    if key in path:
        raise AssemblyError("ASSEMBLY_REFERENCE_CYCLE", f"{block.source}:{block.id}: cyclic source block reference")
    if block.macro_claims or block.extra:  # most blocks name nothing
        _claim_explicit(state, block)
    if block.type != "reference":
        return
    path = path | {key}
    claimed_by = state.claimed_by
    for target in _reference_targets(state, block, key):
        target_key = _key(target)
        if target_key in claimed_by:
            continue
        claimed_by[target_key] = key
        _claim_from(state, target, target_key, path)


def _macro_target_field(state: State, source: str, field_name: str) -> Block | None:
    entry = state.entries.get(source)
    return next((b for b in entry.blocks if b.field == field_name), None) if entry else None


def _macro_allowed(state: State, target: Block) -> bool:
    if not state.position_enabled(target) or state.user_placed(target) or state.prefer_source(target):
        return False
    entry = state.entries.get(target.source)
    own_rule = entry is not None and not entry.rule["id"].startswith("reference-")
    # In list placement a listed source keeps its text to its own row; outside st that holds for a disabled row too
    # (reference A.9: "listed in list mode").
    listed = own_rule and (entry.rule["enabled"] or state.placement != "st")
    return not (state.list_placement and listed)


# 3. emission ------------------------------------------------------------------------------------------------------


def _emit(state: State, roots: list[tuple[Entry, Block]]) -> dict[str, list[Node]]:
    plan: dict[str, list[Node]] = {e.rule["id"]: [] for e in state.rule_entries}
    claimed_by = state.claimed_by
    for entry, block in roots:
        key = _key(block)
        owner = claimed_by.get(key)
        if owner is not None and owner != key:
            continue  # emitted where its claimant puts it
        _emit_block(state, entry, block, key, None, plan)
    return plan


def _emit_block(state: State, entry: Entry, block: Block, key: tuple[str, str], slot: Slot | None,
                plan: dict[str, list[Node]]) -> None:
    if block.type == "reference":
        pointed = _reference_targets(state, block, key)
        slot_id = f"{entry.rule['id']}:{block.id}"
        # A slot is a repeat when everything it points at already stands in the order, whoever claimed it
        # (reference A.9).
        duplicate = bool(pointed) and state.placed.issuperset(map(_key, pointed))
        state.slots.append({"id": slot_id, "source": block.source, "targetSourceId": block.target_source,
                            "group": block.target_group, "emitsText": False, "duplicate": duplicate})
        if duplicate:
            state.diagnostics.append({"code": "LAYOUT_DUPLICATE_SLOT", "slotId": slot_id})
            return
        inner = Slot(id=slot_id, owner=block.source if slot is None else slot.owner,
                      owner_rule_id=entry.rule["id"] if slot is None else slot.owner_rule_id,
                      authored_role=(block.role or "system") if slot is None else slot.authored_role,
                      lock=block.lock if slot is None else slot.lock and block.lock)
        claimed_by, emitted = state.claimed_by, state.emitted
        for target in pointed:  # the targets this slot claimed, in its order
            target_key = _key(target)
            if claimed_by.get(target_key) != key or target_key in emitted:
                continue
            _emit_block(state, state.entries.get(target.source) or entry, target, target_key, inner, plan)
        return
    if key in state.emitted:
        return
    state.emitted.add(key)
    state.placed.add(key)
    bucket = entry.rule["id"]
    if block.redirect_source:
        redirect = next((e for e in state.rule_entries if e.rule["kind"] == block.redirect_source), None)
        bucket = redirect.rule["id"] if redirect else bucket
    elif slot is not None:
        bucket = slot.owner_rule_id
    if bucket not in plan:
        bucket = next(iter(plan)) if plan else entry.rule["id"]
        plan.setdefault(bucket, [])
    if block.type == "native":
        if block.message_ids:
            plan[bucket] += _native_nodes(_block_messages(state, block), entry.rule["id"], block, slot)
        elif (state.adaptive or state.placement == "st") and block.source in (
                "history", "input"):
            plan[bucket].append(_empty_anchor(entry, block, slot))  # keeps its slot's place (reference A.14.1 N2)
        return
    node = _text_node(state, entry, block, slot)
    if node is not None:
        plan[bucket].append(node)


def _block_messages(state: State, block: Block) -> list[dict[str, Any] | None]:
    """The messages of a native block in the order of its ids (None for an id no message has): the history's and
    the input's are the conversation's own lists; any other block finds its messages by id."""
    if block.source in ("history", "input"):
        return state.conversation[block.source]
    by_id = {m["id"]: m for messages in state.conversation.values() for m in messages}
    return [by_id.get(i) for i in block.message_ids]


_FIELD_INDEX = {name: index for index, name in enumerate(f.name for f in fields(Node))}
_ID, _ROLE, _ORIGINAL_ROLE, _TEXT, _TRUST, _MESSAGE = (
    _FIELD_INDEX[name] for name in ("id", "role", "original_role", "text", "trust", "message"))


def _native_nodes(messages: list[dict[str, Any] | None], rule_id: str, block: Block, slot: Slot | None
                   ) -> list[Node]:
    """One node per message of a native block (`messages`: the block's, in the order of its ids; None for an id no
    message has). One per history message of a long chat: the fields they share are set once, and each node is made
    from a list of its fields."""
    module = block.source
    template = Node(id="", rule_id=rule_id, module=module, name=module, role="", original_role="", text="",
                    trust="", block=block, locked=True, lock_reason="runtime", position_decision="runtime",
                    lifetime="native", children=NO_CHILDREN)
    if slot is not None:
        template.slot_id, template.slot_owner, template.slot_owner_rule_id = slot.id, slot.owner, slot.owner_rule_id
    values = list(node_values(template))
    trust_of = _TRUST_OF_ROLE[module == "native-system"]
    nodes = []
    for message_id, message in zip(block.message_ids, messages, strict=True):
        if message is None:
            raise AssemblyError("ASSEMBLY_INVALID", f"{module}: unknown conversation message id {message_id!r}")
        role = message["role"]
        values[_ID] = f"{module}:{message_id}"
        values[_ROLE] = values[_ORIGINAL_ROLE] = role
        values[_TEXT] = message.get("content") or ""
        source = message.get("source")
        values[_TRUST] = (source and recorded_trust(source)) or trust_of.get(role) or _message_trust(role, module)
        values[_MESSAGE] = message
        nodes.append(Node(*values))
    return nodes


def _empty_anchor(entry: Entry, block: Block, slot: Slot | None) -> Node:
    node = Node(id=f"{block.source}:anchor", rule_id=entry.rule["id"], module=block.source, name=block.source,
                role="user", original_role="user", text="", trust="user", block=block, locked=True,
                lock_reason="runtime", position_decision="runtime", lifetime="native")
    if slot is not None:
        node.slot_id, node.slot_owner, node.slot_owner_rule_id = slot.id, slot.owner, slot.owner_rule_id
    return node


def _message_trust(role: str, module: str) -> str:
    if module == "native-system":
        return "system"
    if role in ("tool", "system", "user"):
        return role
    return "operator"


# `_message_trust` by role, for a conversation message [False] and the host's system surface [True]
_TRUST_OF_ROLE = {surface: {role: _message_trust(role, "native-system" if surface else "history")
                            for role in ("system", "user", "assistant", "tool")} for surface in (False, True)}


def _text_node(state: State, entry: Entry, block: Block, slot: Slot | None) -> Node | None:
    if block.anchor:
        return None
    if state.macro_ctx.st is not None:
        # SillyTavern's own macros run after emission, in the order its Generate() runs them (macro_order); the
        # card and persona fields a macro reads are still this node's children. It sends whitespace as it is.
        text = block.text
        if not text:
            return None
        children = _macro_children(state, block) if block.macro_claims else NO_CHILDREN
    else:
        text, children = _expand_resource_macros(state, block)
        expanded = expand_text_macros(text, state.macro_ctx)
        for name in expanded.unsupported:
            state.diagnostics.append({"code": "UNSUPPORTED_MACRO", "id": f"{entry.rule['id']}:{block.id}",
                                      "name": block.name, "macro": name})
        text = expanded.text
        if not text.strip():
            return None
    rule = entry.rule
    target_rule = rule
    if block.redirect_source:
        target_rule = next((e.rule for e in state.rule_entries if e.rule["kind"] == block.redirect_source), rule)
    elif slot is not None and state.placement != "st" and block.source in ("character", "persona"):
        # a card or persona field a marker (or the phi rule) pulls uses the puller's rule: role and delivery
        target_rule = next((e.rule for e in state.rule_entries if e.rule["id"] == slot.owner_rule_id), rule)
    role = _resolve_role(state, block, rule, target_rule, slot)
    original_role = block.role or (rule["role"] if rule.get("inputMode") == "text" and rule["role"] != "preserve"
                                   else "system")
    depth = _select_depth(state, block, target_rule if block.redirect_source else rule, slot)  # jailbreak: phi
    rule_id = rule["id"]
    placement_rule_id = target_rule["id"] if target_rule is not rule else None
    module = rule["kind"] if block.source == rule["kind"] else block.source
    lifetime = rule.get("lifetime", "request")
    if slot is None:
        slot_id = owner = owner_rule_id = authored_role = lock_reason = None
        locked, decision = False, "source"
    else:
        slot_id, owner, owner_rule_id, authored_role = slot.id, slot.owner, slot.owner_rule_id, slot.authored_role
        locked, decision = block.lock and slot.lock, "preset"
        lock_reason = f"reference:{owner}" if locked else None
    # by position, every field in Node's order: one node per prompt, card field and entry of every request
    node = Node(f"{rule_id}:{block.id}", rule_id, module, block.name or block.id, role, original_role, text,
                "operator", block, block.field, None, slot_id, owner, owner_rule_id, authored_role, locked,
                lock_reason, decision, block.position_id, None, None, block.order, lifetime, None, None, None, None,
                None, False, children, block.activation, None, None, placement_rule_id)
    if depth is not None:
        if state.adaptive:
            node.requested_depth = depth
            boundary = state.placement == "native-slots" and block.source == "worldbook" and depth in (0, 1)
            if not boundary:
                state.diagnostics.append({"code": "NATIVE_DEPTH_APPROXIMATED", "id": node.id, "name": node.name,
                                          "depth": depth})
        else:
            node.depth = node.requested_depth = depth
    return node


def _expand_resource_macros(state: State, block: Block) -> tuple[str, list[dict[str, Any]]]:
    text = block.text
    children: list[dict[str, Any]] = []
    for name in block.macro_claims:
        target = _macro_target(state, name)
        # Outside st every macro of an allowed target expands, even where another block claimed it first (the
        # claim only keeps the target from standing on its own, reference A.9).
        allowed = target is not None and (state.claimed_by.get(_key(target)) == _key(block) or (
            state.placement != "st" and _macro_allowed(state, target)))
        replacement = target.text if allowed and target is not None else ""
        if allowed and target is not None:
            state.emitted.add(_key(target))
            children.append({"id": f"{target.source}:{target.id}", "source": target.source, "field": target.field,
                             "locked": True, "lock_reason": f"macro:{name}"})
        text = _replace_macro(text, name, replacement)
    for field_name in block.field_claims:
        target = _macro_target_field(state, "character", field_name)
        if target is not None and state.claimed_by.get(_key(target)) == _key(block):
            state.emitted.add(_key(target))
            children.append({"id": f"character:{target.id}", "source": "character", "field": field_name,
                             "locked": True, "lock_reason": "macro:original"})
    return text, children or NO_CHILDREN  # the shared empty list: a plan's reads copy no empty list per node


def _macro_children(state: State, block: Block) -> list[dict[str, Any]]:
    children = []
    for name in block.macro_claims:
        target = _macro_target(state, name)
        if target is not None:
            children.append({"id": f"{target.source}:{target.id}", "source": target.source, "field": target.field,
                             "locked": True, "lock_reason": f"macro:{name}"})
    return children or NO_CHILDREN


def _replace_macro(text: str, name: str, replacement: str) -> str:
    return re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", lambda _m: replacement, text)


def _resolve_role(state: State, block: Block, rule: dict, target_rule: dict, slot: Slot | None) -> str:
    layout = state.layout or {}
    if layout.get("identity") == "preserve":
        if block.role:
            return block.role
        if rule.get("inputMode") == "text" and rule["role"] != "preserve":
            return rule["role"]
        return "system"
    if state.placement == "native-roles" and block.source == "worldbook":
        return block.role or "system"
    owner_slot = slot is not None and slot.owner in SLOT_OWNERS
    if state.adaptive and (block.source in SLOT_OWNERS or owner_slot):
        if owner_slot:  # a block a slot owner pulls takes the slot's role (reference A.9 role resolution, step 3)
            return slot.authored_role
        return block.role or "system"
    if target_rule["role"] == "preserve":
        return block.role or "system"
    return target_rule["role"]


def _select_depth(state: State, block: Block, rule: dict, slot: Slot | None) -> int | None:
    # a listed rule places its blocks: its depth, not the block's (reference A.9)
    depth = rule.get("depth") if state.list_placement or block.depth is None else block.depth
    if depth is None:
        return None
    setting = state.setting(block)
    if setting is not None and setting.get("placement") == "list":
        return None
    if state.layout and state.layout.get("priority") and slot is not None and state.preset_over_resource:
        return None
    if state.default_over_resource:
        return None
    return depth


def _concatenate(state: State, plan: dict[str, list[Node]]) -> list[Node]:
    nodes: list[Node] = []
    for entry in state.rule_entries:
        nodes.extend(plan.get(entry.rule["id"], ()))
    return nodes
