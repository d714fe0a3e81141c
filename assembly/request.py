"""The engine's request (engine.md §1): what `assemble()` reads, validated by pydantic before anything runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assembly.errors import AssemblyError
from assembly.model_catalogue import model_entry
from assembly.reading import find_unsafe
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
    tokenizer: Literal["o200k_base", "cl100k_base", "llama3", "mistral-tekken", "mistral-v3", "qwen2",
                       "deepseek"] = "o200k_base"
    # The model the request is for (a catalogue name or any name, matched as SillyTavern does): it picks the
    # encoding unless `tokenizer` is given too, the chat framing, and the window when nothing else sets one.
    model: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("tokenizer")
    @classmethod
    def _known_tokenizer(cls, value: str) -> str:
        assert value in ENCODINGS
        return value

    @model_validator(mode="after")
    def _model_encoding(self) -> AssemblyRequest:
        if self.model is not None and "tokenizer" not in self.model_fields_set:
            self.tokenizer = model_entry(self.model).encoding  # type: ignore[assignment]
        return self


def parse_request(request: dict[str, Any] | AssemblyRequest, *, resources_checked: bool = False) -> AssemblyRequest:
    """The request as a model; a refused one is ASSEMBLY_REQUEST_INVALID naming the first bad field.
    `resources_checked`: its `resources` are content a checked request carried before (assembly.resource_memo), so
    the walk for unsafe values leaves them out (it would find nothing there)."""
    if isinstance(request, AssemblyRequest):
        return request
    if not isinstance(request, dict):
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"request: expected a JSON object, got {type(request).__name__}")
    scanned = {k: v for k, v in request.items() if k != "resources"} if resources_checked else request
    unsafe = find_unsafe(scanned, nul=False)  # the engine stores nothing: NUL is the studio's concern
    if unsafe is not None:
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"{unsafe.path}: expected {unsafe.expected}",
                            detail={"path": unsafe.path, "expected": unsafe.expected})
    try:
        return AssemblyRequest.model_validate(request)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "request"
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"{path}: {first['msg']}",
                            detail={"errors": [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                                               for e in exc.errors()[:20]]}) from None
