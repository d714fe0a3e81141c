"""`host.conversation_message`, the builder of a conversation message's request message (issue 19): it must give
exactly what `request_message` gives for the same node, and each message must own its mutable parts."""

import pytest

from assembly.blocks import Node
from assembly.host import conversation_message, request_message
from assembly.tokens import count_tokens


def _node(native: dict, module: str = "history", trust: str = "user") -> Node:
    return Node(id=f"{module}:{native['id']}", rule_id=module, module=module, name=module, role=native["role"],
                original_role=native["role"], text=native.get("content") or "", trust=trust, message=native)


NATIVES = [
    {"id": "m0", "role": "user", "content": "Hello there"},
    {"id": "m1", "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}]},
    {"id": "m2", "role": "tool", "content": "42", "tool_call_id": "c1"},
]


@pytest.mark.parametrize("native", NATIVES)
@pytest.mark.parametrize("status", ["native", "appended"])
def test_a_conversation_message_is_the_request_message_of_its_node(native, status):
    node = _node(native)
    content = native["content"]
    fresh = request_message([node], node.role, content, "history", "request", status, "o200k_base", None, "Ann")
    built = conversation_message(node, content, "history", "request", status, "o200k_base", "Ann")
    assert built.model_dump() == fresh.model_dump()
    assert built.model_fields_set == fresh.model_fields_set
    counted = conversation_message(node, content, "input", "input", status, "o200k_base", None,
                                   count_tokens(content))
    assert counted.tokens == fresh.tokens and counted.delivery == counted.region == "input"


def test_each_conversation_message_owns_its_parts_and_extras():
    node = _node(NATIVES[0])
    one = conversation_message(node, "Hello there", "history", "request", "native", "o200k_base")
    two = conversation_message(node, "Hello there", "history", "request", "native", "o200k_base")
    one.parts.append("later")
    one.note = "x"  # RequestMessage allows extras
    assert two.parts == ["history:m0"] and two.model_extra == {}
    assert one.id == "m0" and one.enters_history and one.trust == "user"
