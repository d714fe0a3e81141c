"""Where assembled text meets the conversation (reference A.9 "Depth insertion"): nodes with a depth go in counted
from its end, a tool call and its results stay one transaction, and the text outside the conversation is bounded.
"""

from __future__ import annotations

from assembly.blocks import Node
from assembly.errors import AssemblyError

MAX_EXTRA_BYTES = 2 * 1024 * 1024


def insert_depth_nodes(nodes: list[Node]) -> list[Node]:
    """Move nodes with a depth into the conversation, counted from its end (reference A.9 "Depth insertion").

    Depth d asks for "before the d-th conversation message from the end" (0: after everything so far). The place
    then moves forward past an open tool call, so a call and its results stay one transaction.
    """
    deferred = [n for n in nodes if n.depth is not None and n.message is None]
    if not deferred:
        return nodes
    flat = [n for n in nodes if not (n.depth is not None and n.message is None)]
    natives = [n for n in flat if n.message is not None and n.role != "system"]
    closes_at = _transaction_ends(natives)
    groups: dict[int, list[Node]] = {}
    for node in deferred:
        groups.setdefault(node.depth, []).append(node)  # type: ignore[arg-type]
    for depth, group in groups.items():
        for node in sorted(group, key=lambda n: n.order):
            if depth == 0 or not natives:
                requested = index = len(flat)
                if natives and closes_at[-1] is None:
                    raise AssemblyError("ASSEMBLY_TOOL_TRANSACTION",
                                        "Cannot insert into an unfinished tool call transaction")
            else:
                k = max(0, len(natives) - depth)
                requested = index = flat.index(natives[k])  # identity search: nodes compare by identity
                if k > 0:
                    close = closes_at[k - 1]
                    if close is None:
                        raise AssemblyError("ASSEMBLY_TOOL_TRANSACTION",
                                            "Cannot insert into an unfinished tool call transaction")
                    if close >= k:
                        index = flat.index(natives[close]) + 1
            node.locked, node.lock_reason, node.position_decision = True, "depth", "resource-depth"
            node.adjusted_for_tools = index != requested
            node.slot_id = None
            flat.insert(index, node)
    return flat


def _transaction_ends(natives: list[Node]) -> list[int | None]:
    """For each conversation message k: the first message at or after k that leaves no tool call open (k itself
    when none is open after it), or None when the transaction never closes."""
    open_after: list[bool] = []
    pending: set[str] = set()
    for node in natives:
        message = node.message or {}
        if message.get("role") == "assistant" and message.get("tool_calls"):
            pending = {c["id"] for c in message["tool_calls"]}
        elif message.get("role") == "tool":
            pending.discard(message.get("tool_call_id"))
        open_after.append(bool(pending))
    ends: list[int | None] = [None] * len(natives)
    next_closed: int | None = None
    for k in range(len(natives) - 1, -1, -1):
        if not open_after[k]:
            next_closed = k
        ends[k] = next_closed
    return ends


def check_native_once(nodes: list[Node]) -> None:
    """Every enabled conversation message appears exactly once (reference A.9 step 6)."""
    ids = [node.message["id"] for node in nodes if node.message is not None]
    if len(set(ids)) == len(ids):  # nearly always: only a repeat needs the walk that names it
        return
    seen: set[str] = set()
    for node in nodes:
        if node.message is not None:
            if node.message["id"] in seen:
                raise AssemblyError("ASSEMBLY_INVALID", "Assembly must include each enabled native message exactly "
                                    f"once: {node.message['id']} appears twice")
            seen.add(node.message["id"])


def validate_system_boundary(nodes: list[Node]) -> None:
    """The host's system prompt heads the conversation; an order that puts conversation messages before it moves
    them across a system update (reference A.9 step 6)."""
    for node in nodes:
        if node.module == "native-system" and node.message is not None:
            return
        if node.message is not None and node.module in ("history", "input"):
            if any(n.module == "native-system" and n.message is not None for n in nodes):
                raise AssemblyError("ASSEMBLY_NATIVE_SYSTEM_ORDER",
                                    "This layout moves native messages across a system update boundary", status=409)
            return


def validate_tool_transactions(nodes: list[Node]) -> None:
    """A tool call and its results are one transaction: nothing may come between them."""
    pending: dict[str, str] = {}
    for node in nodes:
        message = node.message
        if message is None or message.get("role") not in ("assistant", "tool"):
            if pending:
                raise AssemblyError("ASSEMBLY_TOOL_TRANSACTION",
                                    f"Assembly cannot split a tool call and its results: {node.name} lands inside")
            continue
        if message["role"] == "assistant":
            if pending:
                raise AssemblyError("ASSEMBLY_TOOL_TRANSACTION", "Native tool transaction is incomplete")
            pending = {c["id"]: message["id"] for c in message.get("tool_calls") or []}
        else:
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise AssemblyError("ASSEMBLY_TOOL_TRANSACTION",
                                    f"Tool result {message['id']} must follow its corresponding call")
            del pending[call_id]


def extra_bytes(nodes: list[Node]) -> int:
    return sum(len(n.text.encode("utf-8")) for n in nodes if n.message is None)


def check_size(nodes: list[Node], limit: int = MAX_EXTRA_BYTES) -> None:
    size = extra_bytes(nodes)
    if size > limit:
        raise AssemblyError("ASSEMBLY_TOO_LARGE", f"assembled text is {size} bytes; at most {limit} bytes are allowed "
                            "outside the conversation", status=413, detail={"bytes": size, "limit": limit})


def check_order(nodes: list[Node], limit: int = MAX_EXTRA_BYTES) -> None:
    """`validate_system_boundary`, `validate_tool_transactions` and `check_size`, in that order, after one pass that
    tells which of them can refuse at all: a request without tool messages has no transaction to split, and text
    whose characters times four (UTF-8's longest) fit the bound needs no encoding. Each check that can refuse runs
    as it is, so a refusal is the same error."""
    characters = 0
    conversation_first = surface = tools = False
    for node in nodes:
        message = node.message
        if message is None:
            characters += len(node.text)
            continue
        module = node.module
        if module == "native-system":
            surface = True
        elif not surface and module in ("history", "input"):
            conversation_first = True
        role = message.get("role")
        if role == "tool" or (role == "assistant" and message.get("tool_calls")):
            tools = True
    if conversation_first and surface:
        validate_system_boundary(nodes)
    if tools:
        validate_tool_transactions(nodes)
    if characters * 4 > limit:
        check_size(nodes, limit)
