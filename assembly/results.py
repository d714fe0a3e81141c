"""The engine's answer (engine.md §1 AssemblyResult): the frozen request, the logical nodes and why they are where
they are. `AssemblyResult.model_dump(mode="json")` is what the HTTP API and `manage.py assemble` print."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from assembly.sillytavern.regex_changes import RegexChange
from assembly.sillytavern.worldinfo import WorldInfoActivation

_MODEL_SHAPES: dict[type, tuple[dict[str, Any], set[str] | None]] = {}

# BaseModel's four instance slots, set through their own descriptors: under half the cost of object.__setattr__ by
# name, and the loops that build one model per node set four per instance. No result model redefines them.
set_values = BaseModel.__dict__["__dict__"].__set__
set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_private = BaseModel.__dict__["__pydantic_private__"].__set__
new_instance = object.__new__  # BaseModel has no __new__ of its own


def build_trusted(model: type[BaseModel], **values: Any) -> Any:
    """An instance of `model` from values the engine produced itself: every field given, no validation.

    pydantic's own `model_construct` costs ~30 µs per object, which made a 500-message preview spend most of its time
    building result objects; this sets the same instance state directly.
    """
    shape = _MODEL_SHAPES.get(model)
    if shape is None:
        # Every field is set, so a model without extra fields can share one fields-set (pydantic only ever adds a
        # name it already holds); models with extra fields get their own, as setting an extra adds its name.
        shared = None if model.model_config.get("extra") == "allow" else set(model.model_fields)
        shape = _MODEL_SHAPES[model] = (dict(model.model_fields), shared)
    fields, shared = shape
    if len(values) < len(fields):  # fill the defaults of fields the caller left out
        for name, info in fields.items():
            if name not in values:
                values[name] = info.get_default(call_default_factory=True)
    instance = new_instance(model)
    set_values(instance, values)
    if shared is None:
        set_fields_set(instance, set(values))
        set_extra(instance, {})
    else:
        set_fields_set(instance, shared)
        set_extra(instance, None)
    set_private(instance, None)
    return instance


def adopt_complete(model: type[BaseModel], values: dict[str, Any]) -> Any:
    """`build_trusted` for a dict the caller built with every field of `model` (and no extra): the dict becomes the
    instance's own, with no keyword call, default filling or shape lookup. For the per-node and per-message models."""
    fields_set, allows_extra = _COMPLETE_SHAPES.get(model) or complete_shape(model)
    instance = new_instance(model)
    set_values(instance, values)
    set_fields_set(instance, fields_set)
    set_extra(instance, {} if allows_extra else None)
    set_private(instance, None)
    return instance


def complete_shape(model: type[BaseModel]) -> tuple[set[str], bool]:
    """The fields-set every complete instance of `model` shares, and whether it allows extras (then each instance
    gets its own empty extras dict). Every field is set, so all instances share one fields-set: pydantic only ever
    adds a name it holds, and nothing sets an extra attribute on these results. A set per instance was a third of
    the objects the collector tracked in a long request. Loops that build one model per node inline
    `adopt_complete` with this shape (a Python call per node is most of what it costs)."""
    shape = _COMPLETE_SHAPES.get(model)
    if shape is None:
        shape = _COMPLETE_SHAPES[model] = (set(model.model_fields), model.model_config.get("extra") == "allow")
    return shape


_COMPLETE_SHAPES: dict[type, tuple[set[str], bool]] = {}


def blank_values(model: type[BaseModel]) -> dict[str, Any]:
    """A dict holding every field of `model` (each None) in the model's order, for a loop that builds one instance
    per node to copy and fill (then adopt as `adopt_complete` does). Copying a table beats building one key by key
    from a literal, and where CPython can, this dict shares its keys with the class's instances: each copy then holds
    only its values, under half a literal's memory (at 10,000 messages a view's memory was most of its cost)."""
    names = list(model.model_fields)
    instance = model.__new__(model)
    for name in names:
        object.__setattr__(instance, name, None)
    values = instance.__dict__
    return values if list(values) == names else dict.fromkeys(names)  # the order is what the JSON keeps


class RequestMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    role: str
    content: str
    tokens: int
    delivery: str
    region: str
    enters_history: bool
    history_status: str
    parts: list[str]
    trust: str = "system"
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class TextSpan(BaseModel):
    """A piece of a text-completion prompt: where it came from and its estimated tokens."""

    source: str
    text: str
    tokens: int


class RequestView(BaseModel):
    messages: list[RequestMessage]
    starts_request_series: bool = False
    # text completion ("api": "text"): the prompt string, its stop strings and its spans; left out of chat results
    prompt: str | None = Field(default=None, exclude_if=lambda v: v is None)
    stop: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    spans: list[TextSpan] | None = Field(default=None, exclude_if=lambda v: v is None)


class NodeView(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    rule_id: str
    module: str
    name: str
    field: str | None
    role: str
    original_role: str
    text: str
    tokens: int
    trust: str
    delivery: str | None
    region: str | None
    request_index: int | None
    locked: bool
    lock_reason: str | None
    position_decision: str
    slot_id: str | None
    depth: int | None
    requested_depth: int | None
    position_id: str
    order: int
    lifetime: str
    activation: str | None = None
    children: list[dict[str, Any]] = Field(default_factory=list)
    adjusted_for_tools: bool = False
    original_slot_id: str | None = None


class StrategyRef(BaseModel):
    id: str | None
    name: str
    revision: str


class TokenSummary(BaseModel):
    """Message tokens (`total`, `by_module`) in `tokenizer`, and the request as the model's API counts it: plus the
    chat format's framing (`request_total`), against the window less the reply's reserve (`fits`)."""

    total: int
    by_module: dict[str, int]
    tokenizer: str
    model: str | None = None  # the request's model, as it named it
    family: str = "openai"
    exact: bool = True  # False where the tokenizer only approximates the model's (Claude, Gemini, unknown names)
    framing: str = "openai"
    request_total: int = 0
    context_window: int | None = None
    reply_reserve: int | None = None
    window_source: str | None = None  # "budget", "preset" (SillyTavern's context settings) or "model"
    fits: bool | None = None


def _absent(value: Any) -> bool:
    return value is None


def _none(value: Any) -> bool:
    return not value


class Diagnostic(BaseModel):
    """A finding of a successful assembly: its code and the details that code carries (each code its own)."""

    model_config = ConfigDict(extra="allow")
    code: str

    @property
    def details(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})

    @classmethod
    def of(cls, values: dict[str, Any]) -> Diagnostic:
        """A diagnostic from the dict an engine stage recorded (code first, as every stage writes it)."""
        instance = cls.__new__(cls)
        extra = {k: v for k, v in values.items() if k != "code"}
        set_values(instance, {"code": values["code"]})
        set_fields_set(instance, {"code"})
        set_extra(instance, extra)
        set_private(instance, None)
        return instance


class PositionRow(BaseModel):
    """One resource position of the editor's list (reference A.5 positionRows) and what holds its output."""

    key: str  # "<source_id>#<position_id>"
    source_id: str
    position_id: str
    name_en: str
    name_zh: str
    enabled: bool
    configurable: bool
    module_available: bool
    placement: str
    anchor: Any  # None, "end" or {sourceId, positionId, side}
    missing: bool
    node_ids: list[str]
    empty: bool
    split: bool
    locked: bool  # every output of the row is locked
    partly_locked: bool
    lock_reasons: list[str]
    held_by: list[str]
    decisions: list[str]


class PlacementControl(BaseModel):
    """Reference A.9: how much of a rule's output a slot owns and how much moves freely."""

    rule_id: str
    control: str  # native, preset, empty, mixed, independent
    owned: int
    independent: int


class RuntimeContextControl(BaseModel):
    """Reference A.4: one of the three DSH runtime contexts and whether the strategy keeps it."""

    name: str
    enabled: bool


class DurableEvent(BaseModel):
    """What sending the request appends to durable history, shaped like a conversation message. An input message
    is recorded as it came (its own fields, in its own key order), so the JSON keeps the order it was built in."""

    model_config = ConfigDict(extra="allow")
    id: str
    role: str
    content: str = ""
    source: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        """The record's source kind (assembly.host), else its role."""
        return (self.source or {}).get("kind") or self.role

    @classmethod
    def of(cls, values: dict[str, Any]) -> DurableEvent:
        instance = new_instance(cls)
        order = tuple(values)
        if order == _EVENT_ORDER:  # the host's own records: every field, in field order, no extra
            set_values(instance, values.copy())
            set_fields_set(instance, _EVENT_FIELDS)  # complete: shared as `complete_shape` shares one
            set_extra(instance, {})
            set_private(instance, {"_order": _EVENT_ORDER})
            return instance
        defaults = _EVENT_DEFAULTS
        set_values(instance, {name: values.get(name, default) for name, default in defaults.items()})
        set_fields_set(instance, {name for name in values if name in defaults})
        set_extra(instance, {k: v for k, v in values.items() if k not in defaults})
        set_private(instance, {"_order": order})
        return instance

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        order = (self.__pydantic_private__ or {}).get("_order")
        if order is None:
            return data
        return {key: data[key] for key in order}


# DurableEvent's fields and their defaults, in order, read once: pydantic's `model_fields` is a property (a call)
_EVENT_DEFAULTS = {name: info.default for name, info in DurableEvent.model_fields.items()}
_EVENT_ORDER = tuple(_EVENT_DEFAULTS)
_EVENT_FIELDS = set(_EVENT_DEFAULTS)


class EvictionItem(BaseModel):
    id: str
    module: str
    tokens: int
    reason: str


class PresetBudget(BaseModel):
    """SillyTavern's own budget from the preset (openai_max_context - openai_max_tokens): what it dropped, and the
    failure when the mandatory prompts do not fit."""

    source: str = "preset"
    limit: int
    remaining: int
    dropped: list[dict[str, Any]]
    failure: dict[str, Any] | None


class BudgetReport(BaseModel):
    """engine.md §8: the request's budget, the eviction plan, and (builtin-st) the preset's budget beside it."""

    limit: int
    total: int
    over_by: int
    eviction_plan: list[EvictionItem]
    applied: bool
    fixed_tokens: int
    total_after: int | None = Field(default=None, exclude_if=_absent)  # set when the plan was applied
    preset_budget: PresetBudget | None = Field(default=None, exclude_if=_absent)


class LayoutEntry(BaseModel):
    id: str
    text: str
    original_role: str
    effective_role: str
    position_id: str
    position_decision: str
    order: int


class LayoutBlock(BaseModel):
    """A run of nodes that moves together, with its binding and why it is where it is (reference A.11)."""

    id: str
    key: list[Any]
    binding: str  # free, slot, runtime
    movable: bool
    overridable: bool
    region: str
    reason: str
    slot_id: str | None
    original_slot_id: str | None
    limitations: list[str]
    node_ids: list[str]
    entries: list[LayoutEntry]


class LayoutView(BaseModel):
    """Reference A.11: the strategy's layout policy, the slots references opened and the movable blocks."""

    policy: dict[str, Any] | None
    slots: list[dict[str, Any]]
    blocks: list[LayoutBlock]


class MacroVariablesView(BaseModel):
    """The chat-local and global variables as a generation found them and as its macros left them."""

    engine: str  # the macro engine that ran: legacy or v2
    before: dict[str, dict[str, Any]]  # {"local": {...}, "global": {...}}
    after: dict[str, dict[str, Any]]


class AssemblyResult(BaseModel):
    ok: bool = True
    backend: str
    placement: str
    strategy: StrategyRef
    request: RequestView
    nodes: list[NodeView]
    diagnostics: list[Diagnostic]
    runtime_context_controls: list[RuntimeContextControl]
    placement_controls: list[PlacementControl]
    positions: list[PositionRow]
    durable_events: list[DurableEvent]
    tokens: TokenSummary
    budget: BudgetReport | PresetBudget | None = None  # PresetBudget alone: builtin-st without a request budget
    layout: LayoutView
    world_info: WorldInfoActivation | None = None  # keyword activation: every entry, active or skipped, with why
    # builtin-st: each regex script that changed a chat text; left out of the JSON when none did (older JSON as it was)
    regex_changes: list[RegexChange] = Field(default_factory=list, exclude_if=_none)
    # builtin-st: SillyTavern's macro variables before and after this generation's macros ran; left out of the JSON
    # when no macro read or changed one
    macro_variables: MacroVariablesView | None = Field(default=None, exclude_if=_absent)


