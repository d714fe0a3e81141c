"""`assemble(request) -> AssemblyResult`: the engine's single entry point (engine.md §0, §1).

`assemble()` runs named stages, one pass down, each a function below taking typed values and returning a new one
with its own diagnostics: parse (assembly.request) -> resolve (strategy, availability, resources, conversation) ->
logical (assembly.logical) -> order (backend order, positions, outlets, transaction and size checks) -> build (the
request messages) -> count (tokens) -> budget (report; an applied eviction builds again) -> result.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from assembly.blocks import Node, node_values
from assembly.catalogue import resolve_strategy, resolved_revision
from assembly.conversation import check_order
from assembly.core import core_order, retain_snapshots
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
from assembly.logical import LogicalResult, assemble_logical
from assembly.model_catalogue import ENCODING_FRAMING, FRAMINGS, encoding_entry, framing_total, model_entry
from assembly.native import native_regions, runtime_context_controls, validate_native
from assembly.positions import (
    apply_manual_positions,
    apply_resource_anchors,
    fill_outlets,
    placement_controls,
    position_rows,
)
from assembly.reading import ImportInvalid
from assembly.request import (
    AssemblyRequest,
    ConversationMessage,
    HostSettings,
    Section,
    read_request,
)
from assembly.results import (
    AssemblyResult,
    BudgetReport,
    Diagnostic,
    LayoutView,
    NodeView,
    PresetBudget,
    RequestMessage,
    RequestView,
    StrategyRef,
    TokenSummary,
)
from assembly.sillytavern.macro_environment import request_environment
from assembly.sillytavern.models import Resources
from assembly.sillytavern.outlets import fill_every_outlet
from assembly.sillytavern.regex_changes import RegexChange
from assembly.sillytavern.request import st_request
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sources import SLOT_OWNERS
from assembly.strategy import stated_placement
from assembly.tokens import count_tokens

_VAR_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_VAR_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def assemble(request: dict[str, Any] | AssemblyRequest) -> AssemblyResult:
    """The request's stages, one pass down; each returns a new value with its own diagnostics."""
    if type(request) is dict and request.get("api") == "text":
        # SillyTavern's text completion: its own stages, loaded by the first request that asks for them
        from assembly.sillytavern.text_request import assemble_text

        return assemble_text(request)
    parsed = _parse(request)
    run = _resolve(parsed)
    logical = _logical(run)
    ordered = _order(run, logical)
    built = _build(run, ordered.nodes, [*logical.diagnostics, *ordered.diagnostics], logical.regexed_chat)
    counted = _count(run, built)
    budgeted = _budget(run, ordered, built, counted, [*logical.diagnostics, *ordered.diagnostics, *built.diagnostics])
    return _result(run, logical, ordered, built, budgeted)


# the values the stages hand down -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parsed:
    """parse: the request model and its conversation's messages as the engine's dicts, each with its id."""

    req: AssemblyRequest
    durable: list[dict[str, Any]]  # the whole recorded history
    inputs: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Run:
    """resolve: what every later stage reads: the request, its strategy (normalized once), its resources and its
    conversation."""

    req: AssemblyRequest
    strategy_id: str | None
    strategy: dict[str, Any]
    revision: str
    backend: str
    resources: Resources
    durable: list[dict[str, Any]]  # the whole recorded history, with ids
    history: list[dict[str, Any]]  # the part of it that takes part in assembly
    inputs: list[dict[str, Any]]
    swiped: dict[str, Any] | None  # the message a swipe asks again for, left out
    st_rules: bool  # SillyTavern's message rules: the `st` placement with a preset to take them from
    stated_placement: str  # what the document asked for before its layout decided (assembly.strategy)
    controls: list[dict[str, Any]]
    contexts: list[dict[str, Any]]
    names: dict[str, str]
    host_text: str
    native_system_enabled: bool
    step: str
    macro_env: Any = None  # builtin-st: SillyTavern's macros for this generation, its variables changing as they run


@dataclass(frozen=True, slots=True)
class _Ordered:
    """order: the nodes in the backend's order, positions and outlets applied."""

    nodes: list[Node]
    diagnostics: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Built:
    """build: the request messages and the nodes in request order (st adds synthetic ones) with where each went,
    st's budget report and what regex scripts changed in the chat."""

    messages: list[RequestMessage]
    nodes: list[Node]
    placed: dict[str, tuple[int | None, str | None, str | None]]  # node id -> (request index, region, delivery)
    st_budget: dict[str, Any] | None
    regex_changes: list[RegexChange]
    diagnostics: list[dict[str, Any]]
    macro_env: Any = None  # builtin-st: SillyTavern's macros as this build left them (its variables after)


@dataclass(frozen=True, slots=True)
class _Counted:
    """count: each node's tokens and the messages' total."""

    node_tokens: dict[str, int]
    total: int


@dataclass(frozen=True, slots=True)
class _Budgeted:
    """budget: the report, and the request as it is sent (built again without the evicted nodes when applied); its
    findings are the report's and the second build's."""

    built: _Built
    counted: _Counted
    report: dict[str, Any] | None
    diagnostics: list[dict[str, Any]]


# stages --------------------------------------------------------------------------------------------------------------


def _parse(request: dict[str, Any] | AssemblyRequest) -> _Parsed:
    """The request model (`ASSEMBLY_REQUEST_INVALID` naming the field) and its messages with ids (`h1..`, `i1..`)."""
    read = read_request(request)
    req = read.request
    if read.history is not None and read.inputs is not None:
        return _Parsed(req, read.history, read.inputs)
    return _Parsed(req, _messages_with_ids(req.conversation.history, "h"),
                   _messages_with_ids(req.conversation.input, "i"))


def _resolve(parsed: _Parsed) -> _Run:
    """The strategy (a built-in, or the document normalized here), the host's permission to run it, the resources,
    the official sections, and the conversation as it takes part (ids checked, records left out, a swipe's)."""
    req = parsed.req
    strategy_id, strategy = resolve_strategy(req.strategy)
    require_available(strategy, req.host)
    try:
        resources = normalize_resources(req.resources)
    except ImportInvalid as exc:  # the path is named within the request
        raise AssemblyError("IMPORT_INVALID", f"resources.{exc.path}: expected {exc.expected}", status=exc.status,
                            detail={"path": f"resources.{exc.path}"}) from None
    backend = strategy.get("backend", "core")
    stated = stated_placement(req.strategy, strategy)
    st_rules = backend != "native" and strategy.get("placement") == stated == "st" and resources.preset is not None
    durable, inputs = parsed.durable, parsed.inputs
    _check_unique_ids(durable, inputs)
    host_text = render_official_sections(req.host.official_sections, req.host.variables)
    in_history = backend == "native" and req.host.system_prompt_update == "in-history"
    history = conversation_history(durable, keep_system_records=in_history)
    swiped = None
    if st_rules and req.generation.type == "swipe":
        history, inputs, swiped = _swipe(history, inputs)
    controls, contexts = runtime_context_controls(strategy, [{"name": c.name, "text": c.text}
                                                             for c in req.host.contexts])
    char = req.names.char or (resources.character.name if resources.character else "")
    macro_env = request_environment(req, resources, char, history + inputs, len(inputs)) if st_rules else None
    if macro_env is not None:  # the greeting and the messages sent now, as SillyTavern stores them
        history, inputs = macro_env.sent[:len(history)], macro_env.sent[len(history):]
    return _Run(
        req=req, strategy_id=strategy_id, strategy=strategy, revision=resolved_revision(req.strategy, strategy),
        backend=backend, resources=resources, durable=durable, history=history, inputs=inputs, swiped=swiped,
        st_rules=st_rules, stated_placement=stated, controls=controls, contexts=contexts,
        names={"user": req.names.user,
               "char": req.names.char or (resources.character.name if resources.character else "")},
        host_text=host_text,
        native_system_enabled=any([r["kind"] == "native-system" and r["enabled"] for r in strategy["rules"]]),
        step=f"{len(durable)}:{','.join([m['id'] for m in inputs])}", macro_env=macro_env,
    )


def _logical(run: _Run) -> LogicalResult:
    """Rules -> blocks -> nodes (assembly.logical), and the request-level diagnostics."""
    req = run.req
    logical = assemble_logical(
        run.strategy, run.resources, run.history, run.inputs, names=run.names,
        host_system_text=run.host_text,
        variables={k: v for k, v in req.host.variables.items() if isinstance(v, str)},
        max_context=_world_info_context(req, run.resources, run.st_rules), tokenizer=req.tokenizer,
        generation_type=req.generation.type, quiet_prompt=req.generation.quiet_prompt or "",
        swiped=run.swiped is not None, sillytavern=run.stated_placement == "st", turn=req.generation.turn or 0,
        seed=req.generation.seed,
        macro_env=run.macro_env,
    )
    found = []
    if run.swiped is not None:
        found.append({"code": "ST_SWIPE_LEFT_OUT", "id": run.swiped["id"], "role": run.swiped["role"]})
    if not run.st_rules:
        found += _chat_extensions_unused(run.resources)
    return dataclasses.replace(logical, diagnostics=[*logical.diagnostics, *found]) if found else logical


def _order(run: _Run, logical: LogicalResult) -> _Ordered:
    """The backend's order (native regions, or core's with depths), positions and overrides, outlets filled; then
    the order must keep tool transactions whole and stay within the size bound. Logical's nodes stay as it made
    them: a step that changes a node places a new one."""
    strategy = run.strategy
    diagnostics = list(logical.diagnostics)  # the overrides read what logical found; this stage's own follow
    if run.backend == "native":
        # the library sorts by resource after the projection and the overrides (inside the projection only with
        # identity `position`), and maps to the host last: their refusals come in that order (reference A.9 "after
        # emission" steps 1-4, A.8 step 7). The projection sets every node's region and delivery: on its own copies.
        emitted = _copies(logical.nodes)
        later = [] if (strategy.get("layout") or {}).get("identity") != "position" else None
        last: list[AssemblyError] = []
        nodes = apply_resource_anchors(emitted, strategy, diagnostics, refusals=later)
        nodes = native_regions(nodes, strategy, diagnostics, emitted=emitted, refusals=last,
                               module_order=run.stated_placement not in ("native-roles", "native-slots"))
        nodes = apply_layout_overrides(nodes, strategy, run.backend, diagnostics)
        if later or last:
            raise (later or last)[0]
    else:
        # core sets every node's delivery (on its own copies); SillyTavern's build sets each sent node's itself
        nodes = (retain_snapshots(logical.nodes, run.durable, logical.rules) if run.st_rules else
                 core_order(_copies(logical.nodes), run.durable, logical.rules))
        nodes = apply_layout_overrides(nodes, strategy, run.backend, diagnostics)
        nodes = apply_resource_anchors(nodes, strategy, diagnostics)
        nodes = apply_manual_positions(nodes, strategy, diagnostics)
    nodes = fill_outlets(nodes, logical.outlet_blocks, diagnostics)
    if run.st_rules:
        nodes = fill_every_outlet(nodes, logical.outlet_blocks, diagnostics)
    check_order(nodes)  # the system boundary, whole tool transactions, the size bound
    return _Ordered(nodes, diagnostics[len(logical.diagnostics):])


def _build(run: _Run, nodes: list[Node], earlier: list[dict[str, Any]], regexed_chat: Any = None) -> _Built:
    """The request messages: SillyTavern's steps for `st` with a preset (it copies what it changes and says where
    each node went), else the native or core request on copies of the ordered nodes (each step sets where its node
    went on it). A finding the stages before reported already is not reported again. `regexed_chat`: the chat
    through the regex scripts as the world info scan read it."""
    req = run.req
    if run.st_rules:
        # the macros run on the build's own environment: a second build (an applied plan) starts where this one did
        macro_env = run.macro_env.fork()
        st = st_request(nodes, resources=run.resources, names=run.names, generation=req.generation,
                        tokenizer=req.tokenizer, regexed_chat=regexed_chat, macro_env=macro_env)
        own: list[dict[str, Any]] = []
        for diagnostic in st.diagnostics:
            if diagnostic not in earlier and diagnostic not in own:
                own.append(diagnostic)
        return _Built(st.messages, st.nodes, st.placed, st.budget, st.regex_changes, own, macro_env)
    nodes = _copies(nodes)
    if run.backend == "native":
        messages = native_request(
            nodes, system_text=native_system_text(nodes, run.host_text, run.native_system_enabled),
            contexts=[c["text"] for c in run.contexts], history=run.durable,
            system_update=req.host.system_prompt_update, tokenizer=req.tokenizer, step=run.step)
    else:
        messages = core_request(nodes, req.tokenizer, run.step)
    return _Built(messages, nodes, {n.id: (n.request_index, n.region, n.delivery) for n in nodes}, None, [], [])


def _count(run: _Run, built: _Built) -> _Counted:
    """Each node's tokens in the request's encoding; the total of the messages (each counted as it was built). A
    node whose text is a message's content takes that message's count: most nodes are a message of their own."""
    tokenizer = run.req.tokenizer
    built_counts = {m.content: m.tokens for m in built.messages}
    node_tokens = {}
    for node in built.nodes:
        tokens = built_counts.get(node.text)
        node_tokens[node.id] = count_tokens(node.text, tokenizer) if tokens is None else tokens
    return _Counted(node_tokens, sum([m.tokens for m in built.messages]))


def _budget(run: _Run, ordered: _Ordered, built: _Built, counted: _Counted, earlier: list[dict[str, Any]]
            ) -> _Budgeted:
    """The budget report (engine.md §8); when it is applied, the ordered nodes are built again without the evicted
    ones (not the first build's nodes: SillyTavern's build adds its injections and example blocks again)."""
    report, diagnostics = _budget_report(run.req, built.nodes, counted.node_tokens, counted.total)
    if report is None or not (report["applied"] and report["eviction_plan"]):
        return _Budgeted(built, counted, report, diagnostics)
    dropped = {d["id"] for d in report["eviction_plan"]}
    # the kept chat goes through the regex scripts once, as the request it now is (their depths count from its end)
    rebuilt = _build(run, [n for n in ordered.nodes if n.id not in dropped], [*earlier, *diagnostics])
    node_tokens = dict(counted.node_tokens)
    node_tokens.update({n.id: count_tokens(n.text, run.req.tokenizer) for n in rebuilt.nodes
                        if n.id not in node_tokens})
    total = sum(m.tokens for m in rebuilt.messages)
    return _Budgeted(rebuilt, _Counted(node_tokens, total), {**report, "total_after": total},
                     [*diagnostics, *rebuilt.diagnostics])


def _result(run: _Run, logical: LogicalResult, ordered: _Ordered, first: _Built, budgeted: _Budgeted
            ) -> AssemblyResult:
    """The answer: the request as it is sent (`budgeted.built`), every node with why it is where it is, the editor's
    rows and blocks, the counts; every stage's findings in stage order (`first`: the first build's)."""
    built, counted = budgeted.built, budgeted.counted
    messages, nodes = built.messages, built.nodes
    diagnostics = [*logical.diagnostics, *ordered.diagnostics, *first.diagnostics, *budgeted.diagnostics]
    if not messages:
        diagnostics.append({"code": "ASSEMBLY_EMPTY"})
    elif all(m.role == "system" for m in messages):
        diagnostics.append({"code": "ASSEMBLY_SYSTEM_ONLY"})
    views, by_module = _node_views(nodes, built.placed, counted.node_tokens)
    strategy, backend, revision = run.strategy, run.backend, run.revision
    return AssemblyResult(
        ok=True, backend=backend, placement=strategy.get("placement", "modules"),
        strategy=StrategyRef(id=run.strategy_id, name=strategy["name"], revision=revision),
        request=RequestView(messages=messages, starts_request_series=starts_request_series(
            backend=backend, history=run.durable, revision=revision, adaptive=logical.adaptive,
            # only a native request reconciles its system surface (core's series follows the strategy revision)
            system_text=native_system_text(nodes, run.host_text, run.native_system_enabled)
            if backend == "native" else "", native_system_enabled=run.native_system_enabled)),
        nodes=views,
        diagnostics=[Diagnostic.of(d) for d in diagnostics],
        runtime_context_controls=run.controls,
        placement_controls=placement_controls(logical.rules, nodes, SLOT_OWNERS),
        positions=position_rows(strategy, nodes, logical.position_decisions),
        durable_events=durable_events(messages, nodes, backend=backend, inputs=run.inputs,
                                      strategy_id=run.strategy_id, revision=revision),
        tokens=_token_summary(run, built, counted, by_module),
        budget=_budget_view(budgeted.report, built.st_budget),
        layout=LayoutView(policy=dict(policy) if (policy := strategy.get("layout")) is not None else None,
                          slots=logical.slots, blocks=layout_blocks(nodes, backend)),
        world_info=logical.world_info,
        regex_changes=built.regex_changes,
        macro_variables=built.macro_env.view(requested=bool(run.req.macro_variables)) if built.macro_env else None,
    )


def _copies(nodes: list[Node]) -> list[Node]:
    return [Node(*node_values(node)) for node in nodes]


def _node_views(nodes: list[Node], placed: dict[str, tuple[int | None, str | None, str | None]],
                tokens: dict[str, int]) -> tuple[list[NodeView], dict[str, int]]:
    """Each node's view (its own children list: a page may shape the result it is handed), with where the build
    placed it, and the tokens by module (tallied in the same pass). By position, in NodeView's field order: keyword
    arguments took three times as long."""
    views = []
    by_module: dict[str, int] = {}
    for node in nodes:
        request_index, region, delivery = placed[node.id]
        module, count = node.module, tokens[node.id]
        by_module[module] = by_module.get(module, 0) + count
        views.append(NodeView(
            node.id, node.rule_id, module, node.name, node.field, node.role, node.original_role, node.text,
            count, node.trust, delivery, region, request_index, node.locked, node.lock_reason,
            node.position_decision, node.slot_id, node.depth, node.requested_depth, node.position_id, node.order,
            node.lifetime, node.activation, list(node.children), node.adjusted_for_tools, node.original_slot_id))
    return views, by_module


def _token_summary(run: _Run, built: _Built, counted: _Counted, by_module: dict[str, int]) -> TokenSummary:
    """The counts, and the request as the model's API counts it against its window: the request's budget, else
    SillyTavern's context settings for `st` with a preset, else the model's window from the catalogue."""
    req = run.req
    entry = model_entry(req.model) if req.model is not None else encoding_entry(req.tokenizer)
    own_encoding = entry.encoding == req.tokenizer
    framing = FRAMINGS[entry.framing if own_encoding else ENCODING_FRAMING[req.tokenizer]]
    window = reserve = source = None
    if req.budget is not None:
        window, reserve, source = req.budget.context_window, req.budget.reserve_output, "budget"
    elif run.st_rules:
        preset = run.resources.preset
        window, reserve, source = preset.openai_max_context, preset.openai_max_tokens, "preset"
    elif req.model is not None and entry.context_window is not None:
        window, reserve, source = entry.context_window, entry.reply_reserve, "model"
    # Every message's tokens were counted in the request's encoding when it was built (`counted.total` sums them).
    total = counted.total + framing_total(built.messages, req.tokenizer, framing)
    return TokenSummary(
        total=counted.total, by_module=by_module, tokenizer=req.tokenizer, model=req.model, family=entry.family,
        exact=entry.exact and own_encoding if req.model is not None else True, framing=framing.name,
        request_total=total, context_window=window, reply_reserve=reserve, window_source=source,
        fits=None if window is None else total + (reserve or 0) <= window)


def _budget_view(budget: dict[str, Any] | None, st_budget: dict[str, Any] | None
                 ) -> BudgetReport | PresetBudget | None:
    """The request's budget report with SillyTavern's preset budget nested in it, or the preset's alone."""
    preset = PresetBudget(**st_budget) if st_budget else None
    if budget is None:
        return preset
    return BudgetReport(**{**budget, "preset_budget": preset})


# helpers of the stages ---------------------------------------------------------------------------------------------


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


def _check_unique_ids(history: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> None:
    ids = [m["id"] for m in history]
    ids += [m["id"] for m in inputs]
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for index, message in enumerate(history + inputs):
        if message["id"] in seen:
            raise AssemblyError("ASSEMBLY_REQUEST_INVALID",
                                f"conversation: message id {message['id']!r} (message {index}) is used twice")
        seen.add(message["id"])


def _swipe(history: list[dict[str, Any]], inputs: list[dict[str, Any]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
    """A swipe asks again for the chat's last message, so SillyTavern leaves that message out (sillytavern.md §3)."""
    if inputs:
        return history, inputs[:-1], inputs[-1]
    if history:
        return history[:-1], inputs, history[-1]
    return history, inputs, None


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


def _chat_extensions_unused(resources: Resources) -> list[dict[str, Any]]:
    """The author's note and extension prompts are SillyTavern injections: only the `st` placement (with a preset)
    places them, so elsewhere each one with text is named rather than silently left out."""
    unused = []
    if resources.author_note is not None and resources.author_note.content.strip():
        unused.append({"code": "CHAT_EXTENSION_UNUSED", "resource": "author_note", "name": "Author's note"})
    unused += [{"code": "CHAT_EXTENSION_UNUSED", "resource": "extension_prompts", "name": prompt.key}
               for prompt in resources.extension_prompts if prompt.content.strip()]
    return unused


def _world_info_context(req: AssemblyRequest, resources: Resources, st_rules: bool) -> int:
    """The context size the world-info budget is a share of: under SillyTavern's rules its preset's window, as
    SillyTavern has no other (a request's budget is then checked beside it, §8); else the request's budget, else
    the preset's window."""
    if req.budget is not None and not st_rules:
        return max(1, req.budget.context_window - req.budget.reserve_output)
    if resources.preset is not None:
        return max(1, resources.preset.openai_max_context - resources.preset.openai_max_tokens)
    return 8192


def _budget_report(req: AssemblyRequest, nodes: list[Node], node_tokens: dict[str, int], total: int
                   ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """engine.md §8: the eviction plan (oldest history first, then world book by ascending order), and the finding
    that the request is over its budget."""
    diagnostics: list[dict[str, Any]] = []
    if req.budget is None:
        return None, diagnostics
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
        from assembly.budget import select_within_budget  # the selector loads with the first request over budget

        selection = select_within_budget("fixed", items, limit, goal_cost=keep_cost)
        by_id = {n.id: n for n in evictable}
        dropped = [{"id": s.id, "module": by_id[s.id].module, "tokens": s.cost, "reason": s.reason}
                   for s in sorted(selection.skipped, key=lambda s: s.index)]
    return {"limit": limit, "total": total, "over_by": over_by, "eviction_plan": dropped,
            "applied": bool(req.budget.apply and over_by), "fixed_tokens": keep_cost}, diagnostics


# the host ----------------------------------------------------------------------------------------------------------


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
