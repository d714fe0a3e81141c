"""Turn projection: what the next N turns of the host will send and keep, simulated through the engine itself.

Each projected turn assembles the request, commits it as the host would (`host.commit_turn`: the durable events,
then a reply) and asks the next one, as the chat's next generation: `generation.turn` one more (so seeded
world-info rolls are drawn anew) and `resources.world_state` the timed world-info state the previous turn's result
left (so sticky, cooldown and delay run their course). Future turns are built like real ones: each repeats the
session's real last input and its real last reply (so world info, macros and the history scans see real text, as in
the chat); only a conversation without one of them falls back to a placeholder, and `future_turns` says which.
Nothing is stored: the result says, per turn, the request's size, what the durable history holds (pre-step copies,
context snapshots appended or reused, system prompt records), the world-info entries it activates and whether it
still fits the window; `PRE_STEP_ACCUMULATES` names each pre-step text that piles up, with its projected cost. Pure:
no I/O, the request is never mutated.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assembly.api import assemble
from assembly.core import SNAPSHOT_KIND
from assembly.errors import AssemblyError
from assembly.host import CONTEXT_KIND, LOG_KIND, PRE_STEP_KIND, SYSTEM_KIND, commit_turn
from assembly.request import AssemblyRequest
from assembly.results import AssemblyResult, Diagnostic

DEFAULT_TURNS = 5
MAX_TURNS = 20
PLACEHOLDER_USER = "(projected user message {turn})"
PLACEHOLDER_REPLY = "(projected assistant reply {turn})"


class ProjectedTurn(BaseModel):
    """One request of the projection: turn 0 is the request as it stands, turn n the one after n more turns."""

    model_config = ConfigDict(frozen=True)
    turn: int
    messages: int
    tokens: int  # the request as the model's API counts it (message tokens plus the chat format's framing)
    history_messages: int  # the durable history this request was built on
    pre_step_copies: int  # pre-step messages in the request (copies kept from earlier turns included)
    snapshots_reused: int
    records_appended: int  # what sending this request adds to the durable history, its user message aside
    system_records: int  # system prompt records in the durable history
    # keyword world info: the uids of the entries this request activates, in emission order (None: no such book)
    world_info: tuple[int | str, ...] | None = None
    fits: bool | None  # against the window less the reply's reserve (None: no window known)


class TurnProjection(BaseModel):
    model_config = ConfigDict(frozen=True)
    turns: list[ProjectedTurn]
    context_window: int | None
    overflow_turn: int | None  # the first projected turn whose request no longer fits
    diagnostics: list[Diagnostic]
    # how later turns were built: "repeat" (the real last input and reply again), "placeholder" (neither exists),
    # "input-only" / "reply-only" (one is real, the other a placeholder)
    future_turns: Literal["repeat", "placeholder", "input-only", "reply-only"] = "placeholder"
    repeated_input: str | None = None  # the text each future turn sends as the user's input
    repeated_reply: str | None = None  # the text each projected turn records as the model's reply


def _placeholder_input(turn: int) -> list[dict[str, Any]]:
    return [{"id": f"projected-user-{turn}", "role": "user", "content": PLACEHOLDER_USER.format(turn=turn)}]


HOST_RECORD_KINDS = frozenset({SYSTEM_KIND, CONTEXT_KIND, PRE_STEP_KIND, LOG_KIND, SNAPSHOT_KIND})


def _text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    return content if isinstance(content, str) and content.strip() else None


def _real_input(inputs: list[dict[str, Any]], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The input a real next turn would send: the current input, else the last user message the user typed."""
    if any(_text(m) for m in inputs):
        return inputs
    last = next((m for m in reversed(history) if m.get("role") == "user" and _kind(m) not in HOST_RECORD_KINDS
                 and _text(m)), None)
    return [last] if last else []


def _real_reply(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The model's last real reply in the history (host records aside)."""
    return next((m for m in reversed(history) if m.get("role") == "assistant" and _kind(m) not in HOST_RECORD_KINDS
                 and _text(m)), None)


def _repeat_input(real: list[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    if not real:
        return _placeholder_input(turn)
    return [{**m, "id": f"projected-user-{turn}-{i}"} for i, m in enumerate(real)]


def _repeat_reply(real: dict[str, Any] | None, turn: int) -> dict[str, Any]:
    content = real["content"] if real else PLACEHOLDER_REPLY.format(turn=turn)
    reply = {"id": f"projected-reply-{turn}", "role": "assistant", "content": content, "source": {"kind": "model"}}
    if real and real.get("name"):
        reply["name"] = real["name"]
    return reply


def _pre_steps(result: AssemblyResult) -> list[tuple[str, int]]:
    """Every request message carrying a pre-step text: this request's pre-step and the copies earlier turns left in
    the history (sent again as history messages)."""
    texts = {m.content for m in result.request.messages if m.delivery == "pre-step"}
    return [(m.content, m.tokens) for m in result.request.messages if m.content in texts]


def _kind(message: dict[str, Any]) -> str | None:
    return (message.get("source") or {}).get("kind")


def _turn(turn: int, result: AssemblyResult, history: list[dict[str, Any]]) -> ProjectedTurn:
    messages = result.request.messages
    return ProjectedTurn(
        turn=turn, messages=len(messages), tokens=result.tokens.request_total or result.tokens.total,
        history_messages=len(history), pre_step_copies=len(_pre_steps(result)),
        snapshots_reused=sum(1 for m in messages if m.history_status == "reused"),
        records_appended=sum(1 for e in result.durable_events if e.kind not in ("user",)),
        system_records=sum(1 for m in history if _kind(m) == SYSTEM_KIND), fits=result.tokens.fits,
        world_info=_world_info(result))


def _world_info(result: AssemblyResult) -> tuple[int | str, ...] | None:
    info = result.world_info
    return tuple(entry.uid for entry in info.active) if info is not None and info.mode == "keywords" else None


def _next_generation(data: dict[str, Any], result: AssemblyResult) -> dict[str, Any]:
    """`data` (a request the engine accepted) as the chat's next generation after `result`: a normal one (the
    placeholder user message is typed), its `generation.turn` one more, and the timed world-info state `result`
    left carried into it."""
    generation = dict(data.get("generation") or {})
    generation.update(type="normal", turn=int(generation.get("turn") or 0) + 1)
    generation.pop("quiet_prompt", None)
    state = result.world_info.world_state if result.world_info is not None else None
    if state is None:
        return {**data, "generation": generation}
    resources = {**(data.get("resources") or {}), "world_state": state.model_dump(mode="json")}
    return {**data, "generation": generation, "resources": resources}


def _accumulating(first: AssemblyResult, last: AssemblyResult, turns: int) -> list[Diagnostic]:
    """PRE_STEP_ACCUMULATES per pre-step text with more copies in the last projected request than in the first."""
    before = Counter(text for text, _ in _pre_steps(first))
    after = Counter(text for text, _ in _pre_steps(last))
    tokens = dict(_pre_steps(last))
    found = []
    for text, copies in after.items():  # request order: the first copy of each text decides its place
        if copies > before.get(text, 0):
            added = copies - before.get(text, 0)
            found.append(Diagnostic.of({
                "code": "PRE_STEP_ACCUMULATES", "text": text, "kind": PRE_STEP_KIND, "copies_now": before.get(text, 0),
                "copies_after": copies, "turns": turns, "tokens_each": tokens[text],
                "projected_tokens": added * tokens[text]}))
    return found


def project_turns(request: dict[str, Any] | AssemblyRequest, turns: int = DEFAULT_TURNS, *,
                  repeat: bool = True) -> TurnProjection:
    """Simulate `turns` more turns of the host after `request` (1 to MAX_TURNS), each repeating the real last input
    and reply (placeholders only where the conversation has none); `repeat=False` sends placeholders throughout
    (what a turn adds when nothing it says matches a key)."""
    if not isinstance(turns, int) or isinstance(turns, bool) or not 1 <= turns <= MAX_TURNS:
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", f"turns: expected a whole number from 1 to {MAX_TURNS}",
                            status=400, detail={"path": "turns"})
    data = request.model_dump(mode="json", exclude_none=True) if isinstance(request, AssemblyRequest) else request
    conversation = dict(data.get("conversation") or {})
    history = list(conversation.get("history") or [])
    real_input = _real_input(list(conversation.get("input") or []), history) if repeat else []
    real_reply = _real_reply(history) if repeat else None
    inputs = list(conversation.get("input") or []) or _repeat_input(real_input, 0)
    projected: list[ProjectedTurn] = []
    first = last = None
    for turn in range(turns + 1):
        result = assemble({**data, "conversation": {**conversation, "history": history, "input": inputs}})
        first = first or result
        last = result
        projected.append(_turn(turn, result, history))
        history = commit_turn(history, result, _repeat_reply(real_reply, turn))
        inputs = _repeat_input(real_input, turn + 1)
        data = _next_generation(data, result)
    overflow = next((t.turn for t in projected if t.fits is False), None)
    future = {(True, True): "repeat", (True, False): "input-only", (False, True): "reply-only",
              (False, False): "placeholder"}[(bool(real_input), real_reply is not None)]
    return TurnProjection(turns=projected, context_window=last.tokens.context_window, overflow_turn=overflow,
                          diagnostics=_accumulating(first, last, turns), future_turns=future,
                          repeated_input="\n".join(_text(m) or "" for m in real_input) or None,
                          repeated_reply=_text(real_reply) if real_reply else None)
