"""The host simulator: a session's durable history and the request a DSH-like host derives from it (engine.md §7,
reference A.7, A.8 "Delivery semantics").

Durable history is a list of conversation messages. Besides user, assistant and tool messages it holds what the host
recorded for earlier requests, each marked by `source.kind`:
- `system-prompt`: a system surface the host recorded (the request head, or an in-history update);
- `runtime-context`: a runtime-context snapshot (one user message after the input of its step);
- `dsh-prompt-assembler`: a pre-step message accepted before or after an input;
- `assembly-snapshot`: a core snapshot record (assembly.core);
- `request-assembly`: a log-only record of a core request (its strategy revision); never sent.

From that history, the nodes of one assembly and the host settings, this module builds the frozen request, says
for every message whether it is already in history (`native`), recorded by this request (`appended`), an unchanged
snapshot that stays where it stands (`reused`), sent but never recorded (`request-only`) or a core snapshot record
(`snapshot`), and lists the durable events that sending it would append. Preview never commits; `commit_turn` does.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from assembly.blocks import Node
from assembly.core import SNAPSHOT_KIND, core_history_status, snapshot_hash
from assembly.native import CONTEXT_FRAMING, CONTEXT_INVALIDATION
from assembly.results import DurableEvent, RequestMessage
from assembly.tokens import count_tokens

SYSTEM_KIND = "system-prompt"
CONTEXT_KIND = "runtime-context"
PRE_STEP_KIND = "dsh-prompt-assembler"
LOG_KIND = "request-assembly"
EMPTY_SNAPSHOT_PREFIX = "Current context is empty for entry"


def _kind(message: dict[str, Any]) -> str | None:
    return (message.get("source") or {}).get("kind")


def conversation_history(history: list[dict[str, Any]], *, keep_system_records: bool) -> list[dict[str, Any]]:
    """The history messages that take part in assembly: log-only records never do; recorded system surfaces only
    where the host keeps system updates in history (`system_prompt_update: in-history`)."""
    left_out = (LOG_KIND,) if keep_system_records else (LOG_KIND, SYSTEM_KIND)
    # `_kind` inline: this reads every message of the history
    return [m for m in history if not (source := m.get("source")) or source.get("kind") not in left_out]


def _last(history: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    # `_kind` inline: without such a record this reads every message of the history
    return next((m for m in reversed(history) if (source := m.get("source")) and source.get("kind") == kind), None)


def content_id(*parts: str) -> str:
    """`str(uuid.UUID(bytes=sha256(parts)[:16], version=5))`, its version and variant digits set on the hex digest
    (the UUID object's constructor and formatting were most of its cost, paid by every request's log record)."""
    text = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
    # version 5 is the 13th digit; the RFC 4122 variant sets the 17th digit's top two bits to 10
    return f"{text[:8]}-{text[8:12]}-5{text[13:16]}-{_VARIANT_DIGIT[text[16]]}{text[17:20]}-{text[20:32]}"


_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 0x3] for digit in "0123456789abcdef"}


def request_message(
    nodes: list[Node],
    role: str,
    content: str,
    delivery: str,
    region: str,
    status: str,
    tokenizer: str,
    message_id: str | None = None,
    name: str | None = None,
    step: str = "",
    tokens: int | None = None,
) -> RequestMessage:
    """One request message of `nodes`; `tokens`, when the caller already counted `content` with `tokenizer`, is
    taken as its count."""
    tool_calls = tool_call_id = None
    if nodes:  # this runs once per message of the request: one node is the common case, read directly
        first = nodes[0]
        native = first.message
        if message_id is None:
            # Stable for the same content in the same step, distinct across steps: recorded messages never share an
            # id.
            message_id = native["id"] if native is not None else content_id(first.id, first.role, first.text, step)
        if len(nodes) == 1:
            parts, trust = [first.id], first.trust
        else:
            parts, trust = [n.id for n in nodes], _trust(nodes)
        if native is not None:
            calls = native.get("tool_calls")
            # the result's own copies: a page may shape the result it is handed
            tool_calls = [dict(call) for call in calls] if calls is not None else None
            tool_call_id = native.get("tool_call_id")
    else:
        parts, trust = [], "system"  # host-only text (framing, invalidation) is system
        if message_id is None:
            message_id = content_id(delivery, content, step)
    return RequestMessage(  # by position, in the field order: this runs once per message
        message_id, role, content, count_tokens(content, tokenizer) if tokens is None else tokens, delivery, region,
        status != "request-only", status, parts, trust, name, tool_calls, tool_call_id)


_TRUST_RANK = {"system": 0, "operator": 1, "user": 2, "tool": 3}
# The most a host record of each kind is trusted as, read back from history: what the host wrote (its system surface,
# runtime context) or the assembler placed (pre-step instructions, snapshots) was never the end user's writing.
_RECORD_TRUST = {SYSTEM_KIND: "system", CONTEXT_KIND: "system", PRE_STEP_KIND: "operator", SNAPSHOT_KIND: "operator"}


def recorded_trust(source: dict[str, Any]) -> str | None:
    """A host record's trust as it was sent (`source.trust`, written when it was recorded), never more than its
    kind's; a record written without one takes its kind's. None for any other message (its role says it)."""
    ceiling = _RECORD_TRUST.get(source.get("kind"))
    if ceiling is None:
        return None
    claimed = source.get("trust")
    return claimed if claimed in _TRUST_RANK and _TRUST_RANK[claimed] > _TRUST_RANK[ceiling] else ceiling


def _trust(nodes: list[Node]) -> str:
    """A message is as trusted as its least trusted part; host-only text (framing, invalidation) is system."""
    return max((n.trust for n in nodes), key=_TRUST_RANK.__getitem__, default="system")


# core ---------------------------------------------------------------------------------------------------------------


def core_request(nodes: list[Node], tokenizer: str, step: str = "") -> list[RequestMessage]:
    """Core replaces the whole request: one message per node, in the logical order."""
    messages = []
    for node in nodes:
        if node.message is None and node.module in ("history", "input"):
            continue  # an empty conversation's anchor: it orders, it sends nothing
        node.request_index = len(messages)
        name = node.message.get("name") if node.message else None
        # by position: this runs once per node
        messages.append(request_message([node], node.role, node.text, node.delivery or "request", "request",
                                        core_history_status(node), tokenizer, None, name,
                                        step if node.delivery == "snapshot" else ""))
    return messages


# native -------------------------------------------------------------------------------------------------------------


def native_system_text(nodes: list[Node], host_text: str, native_system_enabled: bool) -> str:
    """The official sections stand where the native-system rule's node stands among the system texts (reference
    A.8 step 7); without that node they head the surface."""
    system = [n for n in nodes if n.region == "system"]
    if not any(n.module == "native-system" for n in system):
        sections = [host_text] if native_system_enabled and host_text else []
        return "\n\n".join(sections + [n.text for n in system])
    return "\n\n".join(host_text if n.module == "native-system" else n.text for n in system
                         if n.module != "native-system" or (native_system_enabled and host_text))


def native_request(
    nodes: list[Node],
    *,
    system_text: str,
    contexts: list[str],
    history: list[dict[str, Any]],
    system_update: str,
    tokenizer: str,
    step: str = "",
) -> list[RequestMessage]:
    """Reference A.8: the system surface, history, pre-step before the input, the input, the runtime-context
    snapshot, pre-step after the input; each with its history status. `history` is the whole durable history (its
    records say what the host already holds); `step` tells this step's recorded messages apart from earlier ones."""
    system_nodes = [n for n in nodes if n.region == "system"]
    recorded = _last(history, SYSTEM_KIND)
    out: list[RequestMessage] = []
    pending_update: RequestMessage | None = None
    send = functools.partial(request_message, tokenizer=tokenizer, step=step)
    if system_text:
        unchanged = recorded is not None and recorded.get("content") == system_text
        surface = functools.partial(send, system_nodes, role="system", content=system_text, delivery="system")
        if system_update == "head":
            out.append(surface(region="system", status="native" if unchanged else "appended",
                               message_id=recorded["id"] if unchanged and recorded else None))
        elif recorded is None:
            out.append(surface(region="system", status="appended"))
        elif not unchanged:
            # in-history hosts keep the old surface where it stands and record the change before this step's input
            pending_update = surface(region="history", status="appended")
    for node in system_nodes:
        node.request_index = 0 if out and out[0].delivery == "system" else None

    context_nodes = [n for n in nodes if n.region == "after-input" and n.native_delivery == "context"]
    context_text = ""
    if contexts or context_nodes:
        context_text = CONTEXT_FRAMING + "\n\n" + "\n\n".join(contexts + [n.text for n in context_nodes])
    previous_context = _last(history, CONTEXT_KIND)
    context_done = False
    context = functools.partial(send, role="user", delivery="context", region="after-input", status="appended")

    def add_context() -> None:
        nonlocal context_done
        context_done = True
        if context_text:
            if previous_context is not None and previous_context.get("content") == context_text:
                _reuse(out, previous_context["id"], context_nodes)
                return
            for node in context_nodes:
                node.request_index = len(out)
            out.append(context(context_nodes, content=context_text))
        elif previous_context is not None and previous_context.get("content") != CONTEXT_INVALIDATION:
            out.append(context([], content=CONTEXT_INVALIDATION))

    for node in nodes:
        if node.region in ("history", "input"):
            if node.message is None:
                continue  # an empty history or input anchor: it orders, it sends nothing
            if node.region == "input" and pending_update is not None:
                out.append(pending_update)
                pending_update = None
            node.request_index = len(out)
            # called directly, not through `send`: this runs once per history message
            out.append(request_message([node], node.role, node.text, node.region, node.region,
                                       "native" if node.region == "history" else "appended", tokenizer, None,
                                       node.message.get("name"), step))
        elif node.region == "before-input" or (node.region == "after-input" and node.native_delivery == "pre-step"):
            if node.region == "after-input" and not context_done:
                add_context()  # after the input, context always precedes pre-step
            if node.region == "before-input" and pending_update is not None:
                out.append(pending_update)
                pending_update = None
            node.request_index = len(out)
            out.append(send([node], role="user", content=node.text, delivery="pre-step", region=node.region,
                            status="appended"))
    if pending_update is not None:
        out.append(pending_update)
    if not context_done:
        add_context()
    return out


def _reuse(out: list[RequestMessage], message_id: str, context_nodes: list[Node]) -> None:
    for index, message in enumerate(out):
        if message.id == message_id:
            message.history_status = "reused"
            message.delivery = "context"
            message.parts = [*message.parts, *(n.id for n in context_nodes)]
            for node in context_nodes:
                node.request_index = index
            return


def starts_request_series(
    *,
    backend: str,
    history: list[dict[str, Any]],
    revision: str,
    system_text: str,
    adaptive: bool,
    native_system_enabled: bool,
) -> bool:
    """Core: the strategy revision differs from the last recorded request's (reference A.7 startsSeries).
    Native: reconcileSystem (reference A.8 step 10): in adaptive modes, or without native-system, a recorded system
    surface that differs from the current one asks the host to rebuild the effective system."""
    if backend != "native":
        for message in reversed(history):  # `_last(history, LOG_KIND)` as a loop: every core request reads it
            source = message.get("source")
            if source and source.get("kind") == LOG_KIND:
                return source.get("revision") != revision
        return False
    if not (adaptive or not native_system_enabled):
        return False
    recorded = _last(history, SYSTEM_KIND)
    return recorded is not None and recorded.get("content") != system_text


# durable history ----------------------------------------------------------------------------------------------------


def durable_events(
    messages: list[RequestMessage],
    nodes: list[Node],
    *,
    backend: str,
    inputs: list[dict[str, Any]],
    strategy_id: str | None,
    revision: str,
) -> list[DurableEvent]:
    """What sending this request appends to durable history, each shaped like a conversation message."""
    by_id: dict[str, Node] = {}  # filled on first need: most messages are history, which records nothing
    originals = {m["id"]: m for m in inputs}
    events: list[dict[str, Any]] = []
    for message in messages:
        status = message.history_status
        if status == "snapshot":
            node = (by_id or _by_id(nodes, by_id))[message.parts[0]]
            events.append({
                "id": message.id, "role": message.role, "content": message.content,
                "source": {"kind": SNAPSHOT_KIND, "node_id": node.id, "rule_id": node.rule_id, "name": node.name,
                           "hash": snapshot_hash(node), "empty": node.text.startswith(EMPTY_SNAPSHOT_PREFIX),
                           "trust": message.trust},
            })
            continue
        if status != "appended":
            continue
        if message.delivery == "input":
            events.append(dict(originals.get(message.id) or {"id": message.id, "role": message.role,
                                                             "content": message.content, "source": {"kind": "user"}}))
            continue
        source: dict[str, Any] = {
            "kind": {"system": SYSTEM_KIND, "context": CONTEXT_KIND, "pre-step": PRE_STEP_KIND}[message.delivery]
        }
        if message.delivery == "pre-step":
            node = (by_id or _by_id(nodes, by_id)).get(message.parts[0]) if message.parts else None
            source.update({"form": "instructions", "delivery": "pre-step", "rule_id": node.rule_id if node else None})
        elif message.delivery == "context":
            source["form"] = "snapshot"
        source["trust"] = message.trust  # read back with the record (recorded_trust)
        events.append({"id": message.id, "role": message.role, "content": message.content, "source": source})
    if backend != "native":
        events.append({"id": _log_record_id(revision, tuple([m.id for m in messages])), "role": "system",
                       "content": "", "source": {"kind": LOG_KIND, "strategy_id": strategy_id, "revision": revision}})
    return [DurableEvent.of(event) for event in events]


def _log_record_id(revision: str, message_ids: tuple[str, ...]) -> str:
    """The id of a core request's log record: from the revision and the request's message ids."""
    return content_id(LOG_KIND, revision, *message_ids)


def _by_id(nodes: list[Node], by_id: dict[str, Node]) -> dict[str, Node]:
    by_id.update((n.id, n) for n in nodes)
    return by_id


def commit_turn(history: list[dict[str, Any]], result: Any, assistant_reply: str | dict[str, Any]) -> list[dict]:
    """A new durable history: the old one, what the request recorded, then the model's reply. Never mutates."""
    reply = (
        assistant_reply
        if isinstance(assistant_reply, dict)
        else {"role": "assistant", "content": assistant_reply, "source": {"kind": "model"}}
    )
    reply = {"id": reply.get("id") or content_id("reply", str(len(history)), reply.get("content", "")), **reply}
    return [*history, *(e.model_dump() for e in result.durable_events), reply]
