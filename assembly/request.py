"""The engine's request (engine.md §1): what `assemble()` reads, validated by pydantic before anything runs."""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NotRequired, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
    with_config,
)
from typing_extensions import TypedDict  # pydantic reads TypedDicts from typing_extensions before 3.12

from assembly.errors import AssemblyError
from assembly.model_catalogue import model_entry
from assembly.reading import MAX_JSON_DEPTH, find_unsafe
from assembly.sillytavern.macro_variables import parse_macro_variables
from assembly.tokens import ENCODINGS


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
    turn: int | None = Field(default=None, ge=0)  # the generation's index in its chat session (0 = the first)
    # world info chance: rolls drawn from this seed and the turn; None: the preview's fixed, most likely rolls
    seed: int | None = Field(default=None, ge=0, le=2**53 - 1)
    # the moment of the generation, ISO 8601 with its UTC offset ("2026-12-06T15:05:00+08:00"): SillyTavern's time
    # and date macros read it (sillytavern/macro_clock.py); None: they stay as written (UNSUPPORTED_MACRO)
    now: AwareDatetime | None = None

    @field_validator("now", mode="before")
    @classmethod
    def _written_now(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, datetime) and not (isinstance(value, str) and len(value) <= 64):
            raise ValueError("expected an ISO 8601 date and time with its UTC offset")
        return value


class Names(_Model):
    user: str = "User"
    char: str | None = None


MAX_CONTEXT_WINDOW = 100_000_000  # tokens: a hundred times the largest window a model offers today


class BudgetRequest(_Model):
    context_window: int = Field(gt=0, le=MAX_CONTEXT_WINDOW)
    reserve_output: int = Field(default=0, ge=0, le=MAX_CONTEXT_WINDOW)
    apply: bool = False


class AssemblyRequest(_Model):
    api: Literal["chat"] = "chat"  # "text" (SillyTavern's text completion) is dispatched before this model
    strategy: str | dict[str, Any] = "builtin-native-slots"
    resources: dict[str, Any] = Field(default_factory=dict)
    generation: Generation = Field(default_factory=Generation)
    conversation: Conversation = Field(default_factory=Conversation)
    host: HostSettings = Field(default_factory=HostSettings)
    names: Names = Field(default_factory=Names)
    budget: BudgetRequest | None = None
    tokenizer: Literal["o200k_base", "cl100k_base", "llama3", "mistral-tekken", "mistral-v3", "qwen2",
                       "deepseek"] = "o200k_base"
    # The model the request is for (a catalogue name or any name, matched as SillyTavern does): it picks the
    # encoding unless `tokenizer` is given too, the chat framing, and the window when nothing else sets one.
    model: str | None = Field(default=None, min_length=1, max_length=200)
    # SillyTavern's macro engine (engine.md §10): "legacy" (evaluateMacros) or "v2" (Macros 2.0)
    macro_engine: Literal["legacy", "v2"] = "legacy"
    # the chat's macro variables before this generation: {"local": {...}, "global": {...}} (None: none set)
    macro_variables: dict[str, Any] | None = None

    @field_validator("macro_variables")
    @classmethod
    def _known_variables(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else parse_macro_variables(value)

    @field_validator("tokenizer")
    @classmethod
    def _known_tokenizer(cls, value: str) -> str:
        assert value in ENCODINGS
        return value

    @model_validator(mode="after")
    def _model_encoding(self) -> Self:
        if self.model is not None and "tokenizer" not in self.model_fields_set:
            self.tokenizer = model_entry(self.model).encoding  # type: ignore[assignment]
        return self


@with_config(ConfigDict(extra="allow"))
class _MessageData(TypedDict):
    """`ConversationMessage` read into a plain dict: the same fields, types and checks (and its extra fields after
    them), without a model (and its field set and extras dict) per message of a long chat."""

    id: NotRequired[str | None]
    role: Literal["system", "user", "assistant", "tool"]
    content: NotRequired[str]
    name: NotRequired[str | None]
    source: NotRequired[dict[str, Any] | None]
    tool_calls: NotRequired[list[ToolCall] | None]
    tool_call_id: NotRequired[str | None]


@with_config(ConfigDict(extra="forbid"))
class _ConversationData(TypedDict):
    history: NotRequired[list[_MessageData]]
    input: NotRequired[list[_MessageData]]


_CONVERSATION_DATA = TypeAdapter(_ConversationData)
_OPTIONAL_FIELDS = ("name", "source", "tool_calls", "tool_call_id")


# The conversation of a request whose messages were read into dicts (`ReadRequest`): empty, and shared, so its
# message lists are tuples (nothing can add to them).
READ_CONVERSATION = Conversation.model_construct(history=(), input=())


@dataclass(slots=True)  # read only, but not frozen: a frozen one sets each field through object.__setattr__
class ReadRequest:
    """A request as `assemble()` reads it: the model, and the conversation's messages as the engine's dicts (each
    with its id) when they were read without models; None when they are in `request.conversation`."""

    request: AssemblyRequest
    history: list[dict[str, Any]] | None = None
    inputs: list[dict[str, Any]] | None = None


def read_request(request: dict[str, Any] | AssemblyRequest) -> ReadRequest:
    """`parse_request`, with a request dict's conversation read into the engine's message dicts (no model per
    message). Anything that reading refuses goes through `parse_request` whole, so a refusal names the same field
    with the same message."""
    if not isinstance(request, dict) or not isinstance(request.get("conversation", {}), dict):
        return ReadRequest(parse_request(request))
    read = _conversation_records(request.get("conversation", {}))
    if read is None:
        return ReadRequest(parse_request(request))
    rest = {k: v for k, v in request.items() if k != "conversation"}
    rest["conversation"] = READ_CONVERSATION  # a model instance is taken as it is: no empty one made per request
    try:
        model = parse_request(rest)
    except AssemblyError:
        return ReadRequest(parse_request(request))
    return ReadRequest(model, *read)


def _conversation_records(raw: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Any conversation `_CONVERSATION_DATA` takes, read into message dicts; None for one it or the check for
    unsafe values refuses (the whole request is read by `parse_request` then, to name the field)."""
    try:
        conversation = _CONVERSATION_DATA.validate_python(raw)
    except ValidationError:
        return None
    # the check parse_request makes on the whole request, here on the raw conversation (one level down)
    if find_unsafe(raw, "conversation", max_depth=MAX_JSON_DEPTH - 1, nul=False):
        return None
    return message_records(conversation.get("history", []), "h"), message_records(conversation.get("input", []), "i")


def message_records(messages: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """Validated message dicts (our own) made the engine's messages in place, as `ConversationMessage` would give
    them: its fields that are not None in field order, its extra fields, the id (`h1`, `h2`, ... when it has none)
    last when it was not given, tool calls as dicts."""
    for index, data in enumerate(messages):
        if "content" not in data:
            content_at = 2 if "id" in data else 1
            items = list(data.items())
            data.clear()
            data.update(items[:content_at])
            data["content"] = ""
            data.update(items[content_at:])
        if None in data.values():
            for name in _OPTIONAL_FIELDS:
                if name in data and data[name] is None:
                    del data[name]
        if data.get("id") is None:
            data.pop("id", None)
            data["id"] = f"{prefix}{index + 1}"
        tool_calls = data.get("tool_calls")
        if tool_calls is not None:
            data["tool_calls"] = [c.model_dump() for c in tool_calls]
    return messages


def parse_request(request: dict[str, Any] | AssemblyRequest) -> AssemblyRequest:
    """The request as a model; a refused one is ASSEMBLY_REQUEST_INVALID naming the first bad field."""
    if isinstance(request, AssemblyRequest):
        return request
    if not isinstance(request, dict):
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"request: expected a JSON object, got {type(request).__name__}")
    refuse_unsafe(request)
    return _validated(request)


def refuse_unsafe(request: dict[str, Any]) -> None:
    """ASSEMBLY_REQUEST_INVALID for (part of) a request with NaN, a lone surrogate or JSON nested too deep."""
    unsafe = find_unsafe(request, nul=False)  # the engine stores nothing: NUL is the studio's concern
    if unsafe is not None:
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"{unsafe.path}: expected {unsafe.expected}",
                            detail={"path": unsafe.path, "expected": unsafe.expected})


def _validated(request: dict[str, Any]) -> AssemblyRequest:
    """The model of a request dict already checked for unsafe values."""
    try:
        return AssemblyRequest.model_validate(request)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "request"
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"{path}: {first['msg']}",
                            detail={"errors": [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                                               for e in exc.errors()[:20]]}) from None
