"""`assemble(request) -> AssemblyResult`: the engine's single entry point (engine.md §0, §1).

`assemble()` runs named stages, each a function below taking and returning typed values:
parse (assembly.request) -> resolve (strategy, availability, resources, conversation) -> logical (assembly.logical)
-> order (backend order, positions, outlets, transaction and size checks) -> build (the request messages) -> count
(tokens) -> budget (report; eviction builds again) -> result. A request dict whose settings (all but its
conversation) an earlier request had already gets what parse and resolve decided from them, and reads only its
conversation (`_remembered_run`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from assembly.blocks import NO_CHILDREN, Node
from assembly.budget import select_within_budget
from assembly.catalogue import resolve_strategy, resolved_revision
from assembly.conversation import check_order
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
    READ_CONVERSATION,
    AssemblyRequest,
    ConversationMessage,
    HostSettings,
    Section,
    read_conversation,
    read_request,
)
from assembly.resource_memo import (
    Settings,
    recalled_settings,
    remember,
    remember_settings,
    remembered,
    resources_key,
    settings_key,
)
from assembly.results import (
    AssemblyResult,
    BudgetReport,
    Diagnostic,
    EvictionItem,
    LayoutView,
    NodeView,
    PresetBudget,
    RequestMessage,
    RequestView,
    StrategyRef,
    TokenSummary,
    adopt_complete,
    blank_values,
    build_trusted,
    complete_shape,
    new_instance,
    set_extra,
    set_fields_set,
    set_private,
    set_values,
)
from assembly.sillytavern.macro_environment import request_environment
from assembly.sillytavern.models import Resources
from assembly.sillytavern.outlets import fill_every_outlet
from assembly.sillytavern.regex_changes import RegexChange
from assembly.sillytavern.request import st_request
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.text_request import assemble_text
from assembly.sources import SLOT_OWNERS
from assembly.strategy import stated_placement
from assembly.tokens import count_each, count_tokens

_VAR_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_VAR_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def assemble(request: dict[str, Any] | AssemblyRequest) -> AssemblyResult:
    if type(request) is dict and request.get("api") == "text":
        return assemble_text(request)  # SillyTavern's text completion: its own stages
    settings = settings_key(request) if type(request) is dict else None
    run = _remembered_run(request, settings.key) if settings is not None else None
    if run is None:
        run = _read_run(settings.copy_of(request) if settings is not None else request, settings)
    logical = _logical(run)
    nodes = _order(run, logical)
    built = _build(run, nodes, logical.diagnostics)
    counted = _count(run, built)
    counted, budget = _budget(run, built, counted, logical.diagnostics)
    return _result(run, logical, counted, budget)


def _remembered_run(request: dict[str, Any], key: bytes) -> _Run | None:
    """The run of a request whose settings were decided before: only its conversation is read. None when they were
    not, or when the conversation is one the whole request's reading must read (or refuse)."""
    decided = recalled_settings(key)
    if decided is None:
        return None
    read = read_conversation(request.get("conversation", {}))
    if read is None:
        return None
    return _conversation_run(decided, _own_strategy(decided), *read)


def _read_run(request: dict[str, Any] | AssemblyRequest, settings: Settings | None) -> _Run:
    """The run of a request read whole. `settings`: a plain request dict's settings, of which `request` holds a copy
    (with the caller's conversation); what they decide is remembered under their key when it refuses nothing."""
    key = resources_key(request.get("resources")) if isinstance(request, dict) else None
    known = remembered(key)
    read = read_request(request, resources_checked=known is not None)
    req = read.request
    decided, strategy = _decide(req, key, known, kept=settings is not None)
    if read.history is not None and read.inputs is not None:
        durable, inputs = read.history, read.inputs
    else:
        durable = _messages_with_ids(req.conversation.history, "h")
        inputs = _messages_with_ids(req.conversation.input, "i")
    if req is not request:
        # Our own parse: its message models are read into `run` once, so drop them rather than have the collector
        # walk one model per message for the rest of a long run (a caller's AssemblyRequest is left as it is).
        req.conversation = READ_CONVERSATION
    run = _conversation_run(decided, strategy, durable, inputs)
    if settings is not None and decided.host_error is None:
        remember_settings(settings.key, decided)
    return run


# stages -------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)  # read only, but not frozen: a frozen one sets each field through object.__setattr__
class _Run:
    """What every stage after `resolve` reads: the request, its strategy (normalized once) and its conversation."""

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


@dataclass(frozen=True)
class _Built:
    """The request messages and the nodes in request order (st adds synthetic ones), with st's budget report."""

    messages: list[RequestMessage]
    nodes: list[Node]
    st_budget: dict[str, Any] | None
    regex_changes: list[RegexChange] = field(default_factory=list)  # st: what regex scripts changed in the chat


@dataclass(frozen=True)
class _Counted:
    built: _Built
    node_tokens: dict[str, int]
    total: int


@dataclass(frozen=True, slots=True)
class _Decided:
    """What `resolve` decides from a request's settings alone (all but its conversation), remembered by their content
    (assembly.resource_memo) and shared by every run with those settings: read only. `req` is the engine's own model
    (parsed from a copy of the settings, its conversation dropped); the strategy is not kept, as every run gets its
    own (`_own_strategy`): a built-in's per-request copy, or a load of the normalized document (`document`)."""

    req: AssemblyRequest
    strategy_id: str | None
    document: bytes | None  # a strategy document normalized and pickled; None for a built-in id
    revision: str
    backend: str
    resources: Resources
    in_history: bool
    stated_placement: str
    st_rules: bool
    char_name: str
    host_text: str
    host_error: AssemblyError | None  # raised after the conversation's checks, as it was found after them
    native_system_enabled: bool


def _decide(req: AssemblyRequest, key: bytes | None = None, known: Resources | None = None, *, kept: bool = False
            ) -> tuple[_Decided, dict[str, Any]]:
    """The strategy (a built-in, or the document normalized here and never again), the host's permission to run it,
    the resources (`known`: already parsed, by content `key`) and what follows from them; and this run's strategy.
    `kept`: the decision is to be remembered, so a strategy document is pickled for the runs that recall it."""
    strategy_id, strategy = resolve_strategy(req.strategy)
    require_available(strategy, req.host)
    try:
        resources = known if known is not None else _normalized_resources(req.resources, key)
    except ImportInvalid as exc:  # the path is named within the request
        raise AssemblyError("IMPORT_INVALID", f"resources.{exc.path}: expected {exc.expected}", status=exc.status,
                            detail={"path": f"resources.{exc.path}"}) from None
    backend = strategy.get("backend", "core")
    stated = stated_placement(req.strategy, strategy)
    host_text, host_error = "", None
    try:
        host_text = render_official_sections(req.host.official_sections, req.host.variables)
    except AssemblyError as exc:
        host_error = exc
    decided = _Decided(
        req=req, strategy_id=strategy_id,
        # pickled before any stage reads it: what every later run loads is the document as normalized
        document=pickle.dumps(strategy, pickle.HIGHEST_PROTOCOL) if kept and not isinstance(req.strategy, str)
        else None,
        revision=resolved_revision(req.strategy, strategy), backend=backend, resources=resources,
        in_history=backend == "native" and req.host.system_prompt_update == "in-history", stated_placement=stated,
        st_rules=backend != "native" and strategy.get("placement") == stated == "st" and resources.preset is not None,
        char_name=req.names.char or (resources.character.name if resources.character else ""),
        host_text=host_text, host_error=host_error,
        native_system_enabled=any([r["kind"] == "native-system" and r["enabled"] for r in strategy["rules"]]),
    )
    return decided, strategy


def _own_strategy(decided: _Decided) -> dict[str, Any]:
    """A run's own strategy, equal to the one `_decide` resolved (the result's layout policy is a part of it)."""
    if decided.document is None:
        return resolve_strategy(decided.req.strategy)[1]  # a built-in's per-request copy
    return pickle.loads(decided.document)


def _conversation_run(decided: _Decided, strategy: dict[str, Any], durable: list[dict[str, Any]],
                      inputs: list[dict[str, Any]]) -> _Run:
    """The run of these settings on this conversation (`durable`, `inputs`: its messages with ids)."""
    req = decided.req
    _check_unique_ids(durable, inputs)
    if decided.host_error is not None:
        raise decided.host_error
    history = conversation_history(durable, keep_system_records=decided.in_history)
    swiped = None
    if decided.st_rules and req.generation.type == "swipe":
        history, inputs, swiped = _swipe(history, inputs)
    # a context's two fields as its model_dump gives them, without pydantic's serializer per context and request
    controls, contexts = runtime_context_controls(strategy, [{"name": c.name, "text": c.text}
                                                             for c in req.host.contexts])
    macro_env = request_environment(req, decided.resources, decided.char_name, history + inputs, len(inputs)) \
        if decided.st_rules else None
    if macro_env is not None:  # the greeting and the messages sent now, as SillyTavern stores them
        history, inputs = macro_env.sent[:len(history)], macro_env.sent[len(history):]
    return _Run(
        req=req, strategy_id=decided.strategy_id, strategy=strategy, revision=decided.revision,
        backend=decided.backend, resources=decided.resources, durable=durable, history=history, inputs=inputs,
        swiped=swiped, st_rules=decided.st_rules, stated_placement=decided.stated_placement, controls=controls,
        contexts=contexts, names={"user": req.names.user, "char": decided.char_name}, host_text=decided.host_text,
        native_system_enabled=decided.native_system_enabled,
        step=f"{len(durable)}:{','.join([m['id'] for m in inputs])}", macro_env=macro_env,
    )


def _logical(run: _Run) -> LogicalResult:
    """Rules -> blocks -> nodes (assembly.logical), and the request-level diagnostics."""
    req = run.req
    logical = assemble_logical(
        run.strategy, run.resources, run.history, run.inputs, names=run.names,
        host_system_text=run.host_text,
        variables={k: v for k, v in req.host.variables.items() if isinstance(v, str)},
        max_context=_world_info_context(req, run.resources), tokenizer=req.tokenizer,
        generation_type=req.generation.type, quiet_prompt=req.generation.quiet_prompt or "",
        swiped=run.swiped is not None, sillytavern=run.stated_placement == "st", turn=req.generation.turn or 0,
        seed=req.generation.seed,
        builtin_id=run.strategy_id if isinstance(req.strategy, str) else None, macro_env=run.macro_env,
    )
    if run.swiped is not None:
        logical.diagnostics.append({"code": "ST_SWIPE_LEFT_OUT", "id": run.swiped["id"], "role": run.swiped["role"]})
    if not run.st_rules:
        logical.diagnostics.extend(_chat_extensions_unused(run.resources))
    return logical


def _order(run: _Run, logical: LogicalResult) -> list[Node]:
    """The backend's order (native regions, or core's with depths), positions and overrides, outlets filled; then
    the order must keep tool transactions whole and stay within the size bound."""
    strategy, diagnostics = run.strategy, logical.diagnostics
    if run.backend == "native":
        # the library sorts by resource after the projection and the overrides (inside the projection only with
        # identity `position`), and maps to the host last: their refusals come in that order (reference A.9 "after
        # emission" steps 1-4, A.8 step 7)
        later = [] if (strategy.get("layout") or {}).get("identity") != "position" else None
        last: list[AssemblyError] = []
        nodes = apply_resource_anchors(logical.nodes, strategy, diagnostics, refusals=later)
        nodes = native_regions(nodes, strategy, diagnostics, emitted=logical.nodes, refusals=last,
                               module_order=run.stated_placement not in ("native-roles", "native-slots"))
        nodes = apply_layout_overrides(nodes, strategy, run.backend, diagnostics)
        if later or last:
            raise (later or last)[0]
    else:
        nodes = apply_layout_overrides(core_order(logical.nodes, run.durable, logical.rules,
                                                  insert_depths=not run.st_rules),
                                       strategy, run.backend, diagnostics)
        nodes = apply_resource_anchors(nodes, strategy, diagnostics)
        nodes = apply_manual_positions(nodes, strategy, diagnostics)
    marked = fill_outlets(nodes, logical.outlet_blocks, diagnostics)
    if run.st_rules:
        fill_every_outlet(marked, logical.outlet_blocks, diagnostics)
    check_order(nodes)  # the system boundary, whole tool transactions, the size bound
    return nodes


def _build(run: _Run, nodes: list[Node], diagnostics: list[dict[str, Any]]) -> _Built:
    """The request messages: SillyTavern's steps for `st` with a preset, else the native or core request."""
    req = run.req
    if run.st_rules:
        messages, ordered, st_diagnostics, st_budget, regex_changes = st_request(
            nodes, resources=run.resources, names=run.names, generation=req.generation, tokenizer=req.tokenizer,
            macro_env=run.macro_env)
        diagnostics.extend(d for d in st_diagnostics if d not in diagnostics)
        return _Built(messages, ordered, st_budget, regex_changes)
    if run.backend == "native":
        messages = native_request(
            nodes, system_text=native_system_text(nodes, run.host_text, run.native_system_enabled),
            contexts=[c["text"] for c in run.contexts], history=run.durable,
            system_update=req.host.system_prompt_update, tokenizer=req.tokenizer, step=run.step)
        return _Built(messages, nodes, None)
    return _Built(core_request(nodes, req.tokenizer, run.step), nodes, None)


def _count(run: _Run, built: _Built) -> _Counted:
    tokenizer = run.req.tokenizer
    nodes = built.nodes
    counts = count_each([n.text for n in nodes], tokenizer)
    node_tokens = {node.id: tokens for node, tokens in zip(nodes, counts, strict=True)}  # no list of ids
    return _Counted(built, node_tokens, sum([m.tokens for m in built.messages]))


def _token_summary(run: _Run, counted: _Counted, by_module: dict[str, int]) -> TokenSummary:
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
    total = counted.total + framing_total(counted.built.messages, req.tokenizer, framing)
    # every value is the engine's own, of its field's type: adopted, not validated again
    return adopt_complete(TokenSummary, {
        "total": counted.total, "by_module": by_module, "tokenizer": req.tokenizer, "model": req.model,
        "family": entry.family, "exact": entry.exact and own_encoding if req.model is not None else True,
        "framing": framing.name, "request_total": total, "context_window": window, "reply_reserve": reserve,
        "window_source": source, "fits": None if window is None else total + (reserve or 0) <= window})


def _budget(run: _Run, built: _Built, counted: _Counted, diagnostics: list[dict[str, Any]]
            ) -> tuple[_Counted, dict[str, Any] | None]:
    """The budget report; when it is applied, the request is built again without the evicted nodes."""
    budget = _budget_report(run.req, built.nodes, counted.node_tokens, counted.total, diagnostics)
    if budget is None or not (budget["applied"] and budget["eviction_plan"]):
        return counted, budget
    dropped = {d["id"] for d in budget["eviction_plan"]}
    nodes = [n for n in built.nodes if n.id not in dropped]
    for node in nodes:
        node.request_index = None
    rebuilt = _build(run, nodes, diagnostics)
    kept = {n.id for n in nodes}  # the first build already ran the scripts on the nodes that stay
    rebuilt.regex_changes[:0] = [c for c in built.regex_changes if c.part in kept]
    node_tokens = dict(counted.node_tokens)
    node_tokens.update({n.id: count_tokens(n.text, run.req.tokenizer) for n in rebuilt.nodes
                        if n.id not in node_tokens})
    total = budget["total_after"] = sum(m.tokens for m in rebuilt.messages)
    return _Counted(rebuilt, node_tokens, total), budget


def _result(run: _Run, logical: LogicalResult, counted: _Counted, budget: dict[str, Any] | None) -> AssemblyResult:
    messages, nodes, node_tokens = counted.built.messages, counted.built.nodes, counted.node_tokens
    diagnostics, st_budget = logical.diagnostics, counted.built.st_budget
    if not messages:
        diagnostics.append({"code": "ASSEMBLY_EMPTY"})
    elif all(m.role == "system" for m in messages):
        diagnostics.append({"code": "ASSEMBLY_SYSTEM_ONLY"})
    views, by_module = _node_views(nodes, node_tokens)
    strategy, backend, revision = run.strategy, run.backend, run.revision
    return build_trusted(
        AssemblyResult,
        ok=True,
        backend=backend,
        placement=strategy.get("placement", "modules"),
        # the engine's own values, of their fields' types: built as they are, not validated (nor the list copied)
        strategy=build_trusted(StrategyRef, id=run.strategy_id, name=strategy["name"], revision=revision),
        request=build_trusted(RequestView, messages=messages, starts_request_series=starts_request_series(
            backend=backend, history=run.durable, revision=revision, adaptive=logical.adaptive,
            # only a native request reconciles its system surface (core's series follows the strategy revision)
            system_text=native_system_text(nodes, run.host_text, run.native_system_enabled)
            if backend == "native" else "", native_system_enabled=run.native_system_enabled)),
        nodes=views,
        diagnostics=[Diagnostic.of(d) for d in diagnostics],
        runtime_context_controls=run.controls,
        placement_controls=placement_controls(logical.rules, nodes, SLOT_OWNERS),
        positions=position_rows(strategy, nodes, logical.position_decisions, revision=revision),
        durable_events=durable_events(messages, nodes, backend=backend, inputs=run.inputs,
                                      strategy_id=run.strategy_id, revision=revision),
        tokens=_token_summary(run, counted, by_module),
        budget=_budget_view(budget, st_budget),
        layout=build_trusted(LayoutView, policy=strategy.get("layout"), slots=logical.slots,
                             blocks=layout_blocks(nodes, backend)),
        world_info=logical.world_info,
        regex_changes=counted.built.regex_changes,
        macro_variables=run.macro_env.view(requested=bool(run.req.macro_variables)) if run.macro_env else None,
    )


def _budget_view(budget: dict[str, Any] | None, st_budget: dict[str, Any] | None
                 ) -> BudgetReport | PresetBudget | None:
    """The request's budget report with SillyTavern's preset budget nested in it, or the preset's alone."""
    preset = build_trusted(PresetBudget, **st_budget) if st_budget else None
    if budget is None:
        return preset
    return build_trusted(BudgetReport, **{
        **budget, "eviction_plan": [build_trusted(EvictionItem, **item) for item in budget["eviction_plan"]],
        "preset_budget": preset})


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


def _normalized_resources(raw: dict[str, Any], key: bytes | None = None) -> Resources:
    """The request's resources as the engine's model. A set already holding the engine's models (previews build them
    from rows) is taken as it is: no hash, and `normalize_resources` keeps each model.
    Raw JSON (the HTTP API) is parsed once per content: a re-preview after a drag sends the same resources again,
    and the models are frozen, so the parsed copy can be shared. `key`: the content key of a checked request's
    resources (assembly.resource_memo); other raw JSON is remembered by a hash of its JSON text."""
    if any(isinstance(value, BaseModel) for value in raw.values()):
        return normalize_resources(raw)
    if key is not None:
        parsed = normalize_resources(raw)
        remember(key, parsed)
        return parsed
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


def _node_views(nodes: list[Node], node_tokens: dict[str, int]) -> tuple[list[NodeView], dict[str, int]]:
    """The result's node views and the tokens by module, in one pass. One view per node of every request, so
    `results.adopt_complete` is inlined, and each view's dict is a copy of `results.blank_values`, filled."""
    fields_set, _ = complete_shape(NodeView)  # NodeView allows extras: each view gets its own empty extras dict
    blank, new, own_values, own_fields_set, own_extra, own_private = (
        _BLANK_VIEW.copy, new_instance, set_values, set_fields_set, set_extra, set_private)
    views = []
    by_module: dict[str, int] = {}
    for node in nodes:
        tokens = node_tokens[node.id]
        module = node.module
        by_module[module] = by_module.get(module, 0) + tokens
        values = blank()
        values["id"] = node.id
        values["rule_id"] = node.rule_id
        values["module"] = module
        values["name"] = node.name
        values["field"] = node.field
        values["role"] = node.role
        values["original_role"] = node.original_role
        values["text"] = node.text
        values["tokens"] = tokens
        values["trust"] = node.trust
        values["delivery"] = node.delivery
        values["region"] = node.region
        values["request_index"] = node.request_index
        values["locked"] = node.locked
        values["lock_reason"] = node.lock_reason
        values["position_decision"] = node.position_decision
        values["slot_id"] = node.slot_id
        values["depth"] = node.depth
        values["requested_depth"] = node.requested_depth
        values["position_id"] = node.position_id
        values["order"] = node.order
        values["lifetime"] = node.lifetime
        values["activation"] = node.activation
        # blocks.NO_CHILDREN is shared by every request: a view gets its own (any other list is this request's)
        children = node.children
        values["children"] = [] if children is NO_CHILDREN else children
        values["adjusted_for_tools"] = node.adjusted_for_tools
        values["original_slot_id"] = node.original_slot_id
        view = new(NodeView)
        own_values(view, values)
        own_fields_set(view, fields_set)
        own_extra(view, {})
        own_private(view, None)
        views.append(view)
    return views, by_module


_BLANK_VIEW = blank_values(NodeView)


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
