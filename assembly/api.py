"""`assemble(request) -> AssemblyResult`: the engine's single entry point (engine.md §0, §1).

validate the request -> resolve the strategy -> check availability -> normalize resources -> logical assembly ->
backend (core order, or native regions and transports) -> annotate (trust, tokens, budget) -> result.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assembly.blocks import Node
from assembly.budget import select_within_budget
from assembly.catalogue import resolve_strategy
from assembly.conversation import check_size, validate_tool_transactions
from assembly.core import core_order
from assembly.errors import AssemblyError
from assembly.host import (
    conversation_history,
    core_request,
    durable_events,
    native_request,
    native_system_text,
    starts_request_series,
)
from assembly.layout import apply_layout_overrides, layout_blocks
from assembly.logical import assemble_logical
from assembly.native import native_regions, runtime_context_controls, validate_native
from assembly.positions import (
    apply_manual_positions,
    apply_resource_anchors,
    fill_outlets,
    placement_controls,
    position_rows,
)
from assembly.resources import ImportInvalid, Resources, normalize_resources
from assembly.results import (
    AssemblyResult,
    NodeView,
    RequestMessage,
    RequestView,
    StrategyRef,
    TokenSummary,
    build_trusted,
)
from assembly.sources import SLOT_OWNERS
from assembly.st_request import st_request
from assembly.strategy import normalized_strategy_revision
from assembly.tokens import ENCODINGS, count_tokens

_VAR_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_VAR_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


# request ------------------------------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolCall(_Model):
    model_config = ConfigDict(extra="allow")
    id: str


class ConversationMessage(_Model):
    model_config = ConfigDict(extra="allow")
    id: str | None = None
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    name: str | None = None
    source: dict[str, Any] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class Conversation(_Model):
    history: list[ConversationMessage] = Field(default_factory=list)
    input: list[ConversationMessage] = Field(default_factory=list)


class Section(_Model):
    name: str = ""
    text: str
    interpolate: bool = True


class RuntimeContext(_Model):
    name: str
    text: str


class HostSettings(_Model):
    core_available: bool = False
    native_available: bool = True  # the host exposes its system-prompt assembly (stock DSH does)
    official_sections: list[Section] = Field(default_factory=list)
    contexts: list[RuntimeContext] = Field(default_factory=list)
    variables: dict[str, Any] = Field(default_factory=dict)
    system_prompt_update: Literal["head", "in-history"] = "head"


class Generation(_Model):
    type: Literal["normal", "continue", "impersonate", "swipe", "regenerate", "quiet"] = "normal"
    quiet_prompt: str | None = None
    start_reply_with: str | None = None


class Names(_Model):
    user: str = "User"
    char: str | None = None


class BudgetRequest(_Model):
    context_window: int = Field(gt=0)
    reserve_output: int = Field(default=0, ge=0)
    apply: bool = False


class AssemblyRequest(_Model):
    strategy: str | dict[str, Any] = "builtin-native-slots"
    resources: dict[str, Any] = Field(default_factory=dict)
    generation: Generation = Field(default_factory=Generation)
    conversation: Conversation = Field(default_factory=Conversation)
    host: HostSettings = Field(default_factory=HostSettings)
    names: Names = Field(default_factory=Names)
    budget: BudgetRequest | None = None
    tokenizer: Literal["o200k_base", "cl100k_base"] = "o200k_base"

    @field_validator("tokenizer")
    @classmethod
    def _known_tokenizer(cls, value: str) -> str:
        assert value in ENCODINGS
        return value


# entry point --------------------------------------------------------------------------------------------------------


def _parse_request(request: dict[str, Any] | AssemblyRequest) -> AssemblyRequest:
    if isinstance(request, AssemblyRequest):
        return request
    if not isinstance(request, dict):
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"request: expected a JSON object, got {type(request).__name__}")
    try:
        return AssemblyRequest.model_validate(request)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "request"
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"{path}: {first['msg']}",
                            detail={"errors": [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                                               for e in exc.errors()[:20]]}) from None


def capabilities(host: HostSettings | dict[str, Any] | None = None) -> dict[str, Any]:
    """Reference A.7 `capabilities()`: what this host can run. `available` is legacy and does not authorize core."""
    host = host if isinstance(host, HostSettings) else HostSettings.model_validate(host or {})
    return {
        "native": host.native_available, "core": host.core_available, "coreExtensionInstalled": host.core_available,
        "available": host.native_available or host.core_available, "defaultBackend": "native",
        "nativeHistoryControl": False, "nativeRoles": ["system", "user"], "nativeUserDelivery": ["context", "pre-step"],
        "nativeUserEntersHistory": True,
    }


def require_available(strategy: dict[str, Any], host: HostSettings | dict[str, Any]) -> None:
    """Reference A.7 `requireAvailable`: a native strategy needs the host's native assembly and must validate
    (A.6); a core or legacy strategy needs the advanced backend."""
    host = host if isinstance(host, HostSettings) else HostSettings.model_validate(host)
    if strategy.get("backend", "core") == "native":
        if not host.native_available:
            raise AssemblyError("ASSEMBLY_NATIVE_UNAVAILABLE", "The host offers no native system-prompt assembly "
                                "(host.native_available is false).", status=409)
        validate_native(strategy)
    elif not host.core_available:
        raise AssemblyError("REQUEST_ASSEMBLY_CORE_REQUIRED", "This strategy requires the optional core assembly "
                            "extension (host.core_available is false).", status=409, detail={"backend": "core"})


def _messages_with_ids(messages: list[ConversationMessage], prefix: str) -> list[dict[str, Any]]:
    out = []
    for index, message in enumerate(messages):
        # The validated fields, read directly: model_dump per message dominated long conversations.
        data: dict[str, Any] = {k: v for k, v in message.__dict__.items() if v is not None}
        if message.__pydantic_extra__:
            data.update(message.__pydantic_extra__)
        data.setdefault("id", f"{prefix}{index + 1}")
        if message.tool_calls is not None:
            data["tool_calls"] = [c.model_dump() for c in message.tool_calls]
        out.append(data)
    return out


def render_official_sections(sections: list[Section], variables: dict[str, Any]) -> str:
    """Reference A.8 step 5: `{{var}}` filled from host variables; a missing one is a 409, never a blank."""
    rendered = []
    for number, section in enumerate(sections):
        text = section.text
        if section.interpolate:
            def fill(match: re.Match[str], number: int = number, section: Section = section) -> str:
                key = match.group(1)
                value = variables.get(key)
                if not _VAR_NAME_RE.match(key) or not isinstance(value, str):
                    raise AssemblyError("NATIVE_PREVIEW_VARIABLE_UNAVAILABLE",
                                        f"host.official_sections[{number}] ({section.name}): variable {{{{{key}}}}} "
                                        "is not available as a string", status=409, detail={"variable": key})
                return value

            text = _VAR_RE.sub(fill, text)
        if text:
            rendered.append(text)
    return "\n\n".join(rendered)


def _swipe(history: list[dict[str, Any]], inputs: list[dict[str, Any]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
    """A swipe asks again for the chat's last message, so SillyTavern leaves that message out (sillytavern.md §3)."""
    if inputs:
        return history, inputs[:-1], inputs[-1]
    if history:
        return history[:-1], inputs, history[-1]
    return history, inputs, None


def _chat_extensions_unused(resources: Resources) -> list[dict[str, Any]]:
    """The author's note and extension prompts are SillyTavern injections: only the `st` placement (with a preset)
    places them, so elsewhere each one with text is named rather than silently left out."""
    unused = []
    if resources.author_note is not None and resources.author_note.content.strip():
        unused.append({"code": "CHAT_EXTENSION_UNUSED", "resource": "author_note", "name": "Author's note"})
    unused += [{"code": "CHAT_EXTENSION_UNUSED", "resource": "extension_prompts", "name": prompt.key}
               for prompt in resources.extension_prompts if prompt.content.strip()]
    return unused


def assemble(request: dict[str, Any] | AssemblyRequest) -> AssemblyResult:
    req = _parse_request(request)
    strategy_id, strategy = resolve_strategy(req.strategy)
    require_available(strategy, req.host)
    try:
        resources = _normalized_resources(req.resources)
    except ImportInvalid as exc:
        raise AssemblyError("IMPORT_INVALID", f"resources.{exc.path}: expected {exc.expected}", status=exc.status,
                            detail={"path": f"resources.{exc.path}"}) from None
    durable = _messages_with_ids(req.conversation.history, "h")
    inputs = _messages_with_ids(req.conversation.input, "i")
    _check_unique_ids(durable + inputs)
    backend = strategy.get("backend", "core")
    in_history = backend == "native" and req.host.system_prompt_update == "in-history"
    history = conversation_history(durable, keep_system_records=in_history)
    # SillyTavern's message rules apply to the `st` placement when there is a preset to take them from.
    st_rules = backend != "native" and strategy.get("placement") == "st" and resources.preset is not None
    swiped = None
    if st_rules and req.generation.type == "swipe":
        history, inputs, swiped = _swipe(history, inputs)
    controls, contexts = runtime_context_controls(strategy, [c.model_dump() for c in req.host.contexts])
    char_name = req.names.char or (resources.character.name if resources.character else "")
    host_text = render_official_sections(req.host.official_sections, req.host.variables)
    logical = assemble_logical(
        strategy, resources, history, inputs, names={"user": req.names.user, "char": char_name},
        host_system_text=host_text if backend == "core" else "",
        variables={k: v for k, v in req.host.variables.items() if isinstance(v, str)},
        max_context=_world_info_context(req, resources), tokenizer=req.tokenizer, generation_type=req.generation.type,
    )
    diagnostics = logical.diagnostics
    if swiped is not None:
        diagnostics.append({"code": "ST_SWIPE_LEFT_OUT", "id": swiped["id"], "role": swiped["role"]})
    if not st_rules:
        diagnostics.extend(_chat_extensions_unused(resources))
    if backend == "native":
        nodes = apply_resource_anchors(logical.nodes, strategy, diagnostics)
        nodes = native_regions(apply_manual_positions(nodes, strategy, diagnostics), strategy, diagnostics)
        nodes = apply_layout_overrides(nodes, strategy, backend, diagnostics)
    else:
        nodes = apply_layout_overrides(core_order(logical.nodes, durable, logical.rules, insert_depths=not st_rules),
                                       strategy, backend, diagnostics)
        nodes = apply_resource_anchors(nodes, strategy, diagnostics)
        nodes = apply_manual_positions(nodes, strategy, diagnostics)
    fill_outlets(nodes, logical.outlet_blocks, diagnostics)
    validate_tool_transactions(nodes)
    check_size(nodes)

    native_system_enabled = any(r["kind"] == "native-system" and r["enabled"] for r in strategy["rules"])
    revision = normalized_strategy_revision(strategy)
    step = f"{len(durable)}:{','.join(m['id'] for m in inputs)}"
    ordered_nodes = nodes
    st_budget_report: dict[str, Any] | None = None

    def build_request(nodes: list[Node]) -> list[RequestMessage]:
        nonlocal ordered_nodes, st_budget_report
        if st_rules:
            messages, ordered_nodes, st_diagnostics, st_budget_report = st_request(
                nodes, resources=resources, names={"user": req.names.user, "char": char_name},
                generation=req.generation, tokenizer=req.tokenizer)
            diagnostics.extend(d for d in st_diagnostics if d not in diagnostics)
            return messages
        ordered_nodes = nodes
        if backend == "native":
            return native_request(nodes, system_text=native_system_text(nodes, host_text, native_system_enabled),
                                  contexts=[c["text"] for c in contexts], history=durable,
                                  system_update=req.host.system_prompt_update, tokenizer=req.tokenizer, step=step)
        return core_request(nodes, req.tokenizer, step)

    messages = build_request(nodes)
    nodes = ordered_nodes
    node_tokens = {n.id: count_tokens(n.text, req.tokenizer) for n in nodes}
    total = sum(m.tokens for m in messages)
    budget = _budget_report(req, nodes, node_tokens, total, diagnostics)
    if budget is not None and budget["applied"] and budget["eviction_plan"]:
        dropped = {d["id"] for d in budget["eviction_plan"]}
        nodes = [n for n in nodes if n.id not in dropped]
        for node in nodes:
            node.request_index = None
        messages = build_request(nodes)
        nodes = ordered_nodes
        node_tokens.update({n.id: count_tokens(n.text, req.tokenizer) for n in nodes if n.id not in node_tokens})
        total = budget["total_after"] = sum(m.tokens for m in messages)
    if not messages:
        diagnostics.append({"code": "ASSEMBLY_EMPTY"})
    elif all(m.role == "system" for m in messages):
        diagnostics.append({"code": "ASSEMBLY_SYSTEM_ONLY"})
    by_module: dict[str, int] = {}
    for node in nodes:
        by_module[node.module] = by_module.get(node.module, 0) + node_tokens[node.id]
    return AssemblyResult(
        backend=backend,
        placement=strategy.get("placement", "modules"),
        strategy=StrategyRef(id=strategy_id, name=strategy["name"], revision=revision),
        request=RequestView(messages=messages, starts_request_series=starts_request_series(
            backend=backend, history=durable, revision=revision, adaptive=logical.adaptive,
            system_text=native_system_text(nodes, host_text, native_system_enabled),
            native_system_enabled=native_system_enabled)),
        nodes=[_node_view(n, node_tokens[n.id]) for n in nodes],
        diagnostics=diagnostics,
        runtime_context_controls=controls,
        placement_controls=placement_controls(logical.rules, nodes, SLOT_OWNERS),
        positions=position_rows(strategy, nodes, logical.position_decisions),
        durable_events=durable_events(messages, nodes, backend=backend, inputs=inputs, strategy_id=strategy_id,
                                      revision=revision),
        tokens=TokenSummary(total=total, by_module=by_module, tokenizer=req.tokenizer),
        budget=({**budget, "preset_budget": st_budget_report} if budget is not None and st_budget_report
                else budget if budget is not None else st_budget_report),
        layout={"policy": strategy.get("layout"), "slots": logical.slots, "blocks": layout_blocks(nodes, backend)},
        world_info=logical.world_info.model_dump(mode="json") if logical.world_info is not None else None,
    )


def _world_info_context(req: AssemblyRequest, resources: Resources) -> int:
    """The context size the world-info budget is a share of: the request's budget, else the preset's own window."""
    if req.budget is not None:
        return max(1, req.budget.context_window - req.budget.reserve_output)
    if resources.preset is not None:
        return max(1, resources.preset.openai_max_context - resources.preset.openai_max_tokens)
    return 8192


_RESOURCE_CACHE: OrderedDict[str, Resources] = OrderedDict()
_RESOURCE_CACHE_SIZE = 64
_RESOURCE_LOCK = threading.Lock()


def _normalized_resources(raw: dict[str, Any]) -> Resources:
    """normalize_resources, memoized by content: a re-preview after a drag sends the same resources again, and the
    models are frozen, so the parsed copy can be shared."""
    key = hashlib.sha256(json.dumps(raw, sort_keys=True, ensure_ascii=False, default=repr).encode()).hexdigest()
    with _RESOURCE_LOCK:
        cached = _RESOURCE_CACHE.get(key)
        if cached is not None:
            _RESOURCE_CACHE.move_to_end(key)
            return cached
    parsed = normalize_resources(raw)
    with _RESOURCE_LOCK:
        _RESOURCE_CACHE[key] = parsed
        if len(_RESOURCE_CACHE) > _RESOURCE_CACHE_SIZE:
            _RESOURCE_CACHE.popitem(last=False)
    return parsed


def _check_unique_ids(messages: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message["id"] in seen:
            raise AssemblyError("ASSEMBLY_REQUEST_INVALID",
                                f"conversation: message id {message['id']!r} (message {index}) is used twice")
        seen.add(message["id"])


def _node_view(node: Node, tokens: int) -> NodeView:
    return build_trusted(
        NodeView, id=node.id, rule_id=node.rule_id, module=node.module, name=node.name, field=node.field, role=node.role,
        original_role=node.original_role, text=node.text, tokens=tokens, trust=node.trust, delivery=node.delivery,
        region=node.region, request_index=node.request_index, locked=node.locked, lock_reason=node.lock_reason,
        position_decision=node.position_decision, slot_id=node.slot_id, depth=node.depth,
        requested_depth=node.requested_depth, position_id=node.position_id, order=node.order, lifetime=node.lifetime,
        activation=node.activation, children=node.children, adjusted_for_tools=node.adjusted_for_tools,
        original_slot_id=node.original_slot_id,
    )


def _budget_report(req: AssemblyRequest, nodes: list[Node], node_tokens: dict[str, int], total: int,
                   diagnostics: list[dict[str, Any]]) -> dict[str, Any] | None:
    """engine.md §8: the eviction plan (oldest history first, then world book by ascending order)."""
    if req.budget is None:
        return None
    limit = max(0, req.budget.context_window - req.budget.reserve_output)
    evictable = [n for n in nodes if (n.module == "history" and n.message is not None) or
                 (n.module == "worldbook" and not (n.locked and n.lock_reason == "native-depth-boundary"))]
    keep_cost = total - sum(node_tokens[n.id] for n in evictable)
    history_count = sum(1 for n in evictable if n.module == "history")
    items = []
    for position, node in enumerate(n for n in evictable if n.module == "history"):
        items.append({"id": node.id, "text": node.name, "cost": node_tokens[node.id], "relevant": True,
                      "priority": position})
    for node in sorted((n for n in evictable if n.module == "worldbook"), key=lambda n: n.order):
        items.append({"id": node.id, "text": node.name, "cost": node_tokens[node.id], "relevant": True,
                      "priority": history_count + node.order})
    over_by = max(0, total - limit)
    if over_by:
        diagnostics.append({"code": "CONTEXT_BUDGET_EXCEEDED", "limit": limit, "total": total, "over_by": over_by})
    dropped: list[dict[str, Any]] = []
    if over_by and keep_cost <= limit:
        selection = select_within_budget("fixed", items, limit, goal_cost=keep_cost)
        by_id = {n.id: n for n in evictable}
        dropped = [{"id": s.id, "module": by_id[s.id].module, "tokens": s.cost, "reason": s.reason}
                   for s in sorted(selection.skipped, key=lambda s: s.index)]
    return {"limit": limit, "total": total, "over_by": over_by, "eviction_plan": dropped,
            "applied": bool(req.budget.apply and over_by), "fixed_tokens": keep_cost}
