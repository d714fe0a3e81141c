"""The engine's answer (engine.md §1 AssemblyResult): the frozen request, the logical nodes and why they are where
they are. `AssemblyResult.model_dump(mode="json")` is what the HTTP API and `manage.py assemble` print."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_MODEL_SHAPES: dict[type, tuple[dict[str, Any], dict | None]] = {}


def build_trusted(model: type[BaseModel], **values: Any) -> Any:
    """An instance of `model` from values the engine produced itself: every field given, no validation.

    pydantic's own `model_construct` costs ~30 µs per object, which made a 500-message preview spend most of its time
    building result objects; this sets the same instance state directly.
    """
    shape = _MODEL_SHAPES.get(model)
    if shape is None:
        shape = _MODEL_SHAPES[model] = (dict(model.model_fields),
                                        {} if model.model_config.get("extra") == "allow" else None)
    fields, extra = shape
    if len(values) < len(fields):  # fill the defaults of fields the caller left out
        for name, info in fields.items():
            if name not in values:
                values[name] = info.get_default(call_default_factory=True)
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None if extra is None else {})
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


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


class RequestView(BaseModel):
    messages: list[RequestMessage]
    starts_request_series: bool = False


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
    total: int
    by_module: dict[str, int]
    tokenizer: str


class AssemblyResult(BaseModel):
    ok: bool = True
    backend: str
    placement: str
    strategy: StrategyRef
    request: RequestView
    nodes: list[NodeView]
    diagnostics: list[dict[str, Any]]
    runtime_context_controls: list[dict[str, Any]]
    placement_controls: list[dict[str, Any]]
    positions: list[dict[str, Any]]
    durable_events: list[dict[str, Any]]
    tokens: TokenSummary
    budget: dict[str, Any] | None = None
    layout: dict[str, Any] = Field(default_factory=dict)  # reference A.11: policy, slots and movable blocks
    world_info: dict[str, Any] | None = None  # keyword activation: every entry, active or skipped, with its reason


