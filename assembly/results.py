"""The engine's answer (engine.md §1 AssemblyResult): the frozen request, the logical nodes and why they are where
they are. `AssemblyResult.model_dump(mode="json")` is what the HTTP API and `manage.py assemble` print.

The parts made once per message, node, row or block of every request (`RequestMessage`, `NodeView`, `PositionRow`,
`PlacementControl`, `LayoutBlock`) are slotted dataclasses built by the stages from values they have
already checked: pydantic serializes and validates them as fields of `AssemblyResult` (its JSON, a stored result read
back) and takes a built one as it is, so a request pays no validation per part."""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

import dataclasses
import operator
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SkipValidation, model_serializer

from assembly.sillytavern.regex_changes import RegexChange
from assembly.sillytavern.worldinfo_models import WorldInfoActivation

_Part = TypeVar("_Part")


def _pickled_by_position(cls: type[_Part]) -> type[_Part]:
    """`cls` pickled as its field values in order, made again by its constructor: half the time and two thirds of
    the bytes of the default (a dict of every slot per object) for the studio's result cache."""
    values = operator.attrgetter(*(field.name for field in dataclasses.fields(cls)))  # type: ignore[arg-type]

    def __reduce__(self: _Part) -> tuple[type[_Part], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]
    return cls


@_pickled_by_position
@dataclasses.dataclass(slots=True)
class RequestMessage:
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


@_pickled_by_position
@dataclasses.dataclass(slots=True)
class NodeView:
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
    children: list[dict[str, Any]] = dataclasses.field(default_factory=list)
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
    def of(cls, values: dict[str, Any]) -> Self:
        """A diagnostic from the dict an engine stage recorded (code first, as every stage writes it)."""
        return cls.model_validate(values)


@_pickled_by_position
@dataclasses.dataclass(slots=True)
class PositionRow:
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


@_pickled_by_position
@dataclasses.dataclass(slots=True)
class PlacementControl:
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
    _order: tuple[str, ...] = PrivateAttr(default=())  # the keys as the record was written

    @property
    def kind(self) -> str:
        """The record's source kind (assembly.host), else its role."""
        return (self.source or {}).get("kind") or self.role

    @classmethod
    def of(cls, values: dict[str, Any]) -> Self:
        """A record from its dict, which keeps its key order in the JSON."""
        event = cls.model_validate(values)
        event._order = tuple(values)
        return event

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {key: data[key] for key in self._order} if self._order else data


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


@_pickled_by_position
@dataclasses.dataclass(slots=True)
class LayoutBlock:
    """A run of nodes that moves together, with its binding and why it is where it is (reference A.11). Its nodes
    are named by id; their texts, roles, positions and order are the result's `nodes`."""

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


class LayoutView(BaseModel):
    """Reference A.11: the strategy's layout policy, the slots references opened and the movable blocks. The policy
    and the slots are the engine's own dicts, made for this result (the policy a copy of the strategy's): taken as
    they are, not copied again by validation."""

    policy: SkipValidation[dict[str, Any] | None]
    slots: SkipValidation[list[dict[str, Any]]]
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


