"""Depth insertion, tool transactions and the size bound (assembly.conversation; reference A.9 "Depth insertion")."""

import pytest

from assembly.blocks import Node
from assembly.conversation import (
    MAX_EXTRA_BYTES,
    check_size,
    extra_bytes,
    insert_depth_nodes,
    validate_tool_transactions,
)
from assembly.errors import AssemblyError


def said(message_id, role, **fields):
    message = {"id": message_id, "role": role, "content": message_id, **fields}
    return Node(id=f"history:{message_id}", rule_id="history", module="history", name="history", role=role,
                original_role=role, text=message_id, trust="user", message=message)


def text(node_id, depth=None, order=100):
    return Node(id=node_id, rule_id="custom", module="custom", name=node_id, role="system", original_role="system",
                text=node_id, trust="operator", depth=depth, order=order)


def order(nodes):
    return [n.text for n in nodes]


def test_depth_counts_from_the_end_and_zero_goes_last():
    nodes = [text("top"), said("u1", "user"), said("a1", "assistant"), said("u2", "user"),
             text("d1", depth=1), text("d0", depth=0)]
    placed = insert_depth_nodes(nodes)
    assert order(placed) == ["top", "u1", "a1", "d1", "u2", "d0"]
    depth_one = next(n for n in placed if n.text == "d1")
    assert (depth_one.locked, depth_one.lock_reason, depth_one.position_decision) == (True, "depth",
                                                                                     "resource-depth")
    assert not depth_one.adjusted_for_tools


def test_nodes_without_a_depth_come_back_unchanged():
    nodes = [text("a"), said("u1", "user")]
    assert insert_depth_nodes(nodes) is nodes


def test_one_depth_keeps_the_order_field():
    placed = insert_depth_nodes([said("u1", "user"), text("late", depth=0, order=5), text("early", depth=0, order=1)])
    assert order(placed) == ["u1", "early", "late"]


def test_a_depth_inside_a_tool_call_moves_past_its_result():
    nodes = [said("u1", "user"), said("a1", "assistant", tool_calls=[{"id": "c1"}]),
             said("t1", "tool", tool_call_id="c1"), said("u2", "user"), text("d", depth=2)]
    placed = insert_depth_nodes(nodes)
    assert order(placed) == ["u1", "a1", "t1", "d", "u2"]
    assert next(n for n in placed if n.text == "d").adjusted_for_tools


def test_an_unfinished_tool_call_refuses_a_depth_after_it():
    nodes = [said("u1", "user"), said("a1", "assistant", tool_calls=[{"id": "c1"}]), text("d", depth=0)]
    with pytest.raises(AssemblyError) as caught:
        insert_depth_nodes(nodes)
    assert caught.value.code == "ASSEMBLY_TOOL_TRANSACTION"


@pytest.mark.parametrize(("nodes", "message"), [
    ([said("a1", "assistant", tool_calls=[{"id": "c1"}]), text("x"), said("t1", "tool", tool_call_id="c1")],
     "x lands inside"),
    ([said("t1", "tool", tool_call_id="c1")], "must follow its corresponding call"),
    ([said("a1", "assistant", tool_calls=[{"id": "c1"}]), said("a2", "assistant")], "incomplete"),
])
def test_tool_transactions_stay_whole(nodes, message):
    with pytest.raises(AssemblyError, match=message) as caught:
        validate_tool_transactions(nodes)
    assert caught.value.code == "ASSEMBLY_TOOL_TRANSACTION"


def test_a_whole_transaction_passes():
    validate_tool_transactions([said("a1", "assistant", tool_calls=[{"id": "c1"}, {"id": "c2"}]),
                                said("t1", "tool", tool_call_id="c1"), said("t2", "tool", tool_call_id="c2"),
                                text("after")])


def test_only_text_outside_the_conversation_counts_towards_the_size_bound():
    nodes = [said("u" * 10, "user"), text("é" * 3)]
    assert extra_bytes(nodes) == 6
    check_size(nodes, limit=6)
    with pytest.raises(AssemblyError) as caught:
        check_size(nodes, limit=5)
    assert (caught.value.code, caught.value.status, caught.value.detail) == ("ASSEMBLY_TOO_LARGE", 413,
                                                                             {"bytes": 6, "limit": 5})
    assert MAX_EXTRA_BYTES == 2 * 1024 * 1024


def _refusal(check):
    try:
        check()
    except AssemblyError as error:
        return error.code, str(error)
    return None


def test_check_order_refuses_as_the_three_checks_in_order():
    """`check_order` against the three checks it stands for, over random orders of every kind of node."""
    import random

    from assembly.conversation import check_order, validate_system_boundary

    def surface():
        message = {"id": "assembler-native-system", "role": "system", "content": "s"}
        return Node(id="native-system:s", rule_id="native-system", module="native-system", name="s", role="system",
                    original_role="system", text="s", trust="system", message=message)

    def inputs(message_id):
        node = said(message_id, "user")
        node.module = "input"
        return node

    makers = [
        lambda: text("t"), lambda: text("é" * 40), surface, lambda: said("u", "user"), lambda: inputs("i"),
        lambda: said("a", "assistant"), lambda: said("a", "assistant", tool_calls=[{"id": "c1"}]),
        lambda: said("a", "assistant", tool_calls=[]), lambda: said("t", "tool", tool_call_id="c1"),
        lambda: said("t", "tool", tool_call_id="c2"), lambda: said("s", "system"),
    ]
    rng = random.Random(19)
    refused = 0
    seen = []
    for _ in range(3000):
        nodes = [rng.choice(makers)() for _ in range(rng.randint(0, 7))]
        limit = rng.choice([MAX_EXTRA_BYTES, 0, 10, 100, 200])

        def by_three(nodes=nodes, limit=limit):
            validate_system_boundary(nodes)
            validate_tool_transactions(nodes)
            check_size(nodes, limit)

        expected = _refusal(by_three)
        seen.append(expected)
        refused += expected is not None
        assert _refusal(lambda nodes=nodes, limit=limit: check_order(nodes, limit)) == expected
    assert refused > 500
    assert {code for code, _ in filter(None, seen)} == {"ASSEMBLY_NATIVE_SYSTEM_ORDER", "ASSEMBLY_TOOL_TRANSACTION",
                                                        "ASSEMBLY_TOO_LARGE"}


def test_a_conversation_message_placed_twice_is_named():
    from assembly.conversation import check_native_once

    check_native_once([said("u1", "user"), text("t"), said("a1", "assistant")])
    with pytest.raises(AssemblyError, match="a1 appears twice"):
        check_native_once([said("u1", "user"), said("a1", "assistant"), text("t"), said("a1", "assistant")])
