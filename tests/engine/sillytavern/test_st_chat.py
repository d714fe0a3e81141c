"""The `st` request's in-chat injections: the world info at one depth and role is one injection, whether its group
holds one entry (its own text) or several (joined), as SillyTavern's customDepthWI prompts are."""

from assembly.blocks import Node
from assembly.sillytavern.st_chat import depth_injections as _injections


def _world(node_id: str, text: str, depth: int, role: str = "system") -> Node:
    return Node(id=node_id, rule_id="worldbook", module="worldbook", name=node_id, role=role, original_role=role,
                text=text, trust="operator", depth=depth)


def test_world_info_at_one_depth_and_role_is_one_injection():
    nodes = [_world("worldbook:1", "one", 2), _world("worldbook:2", "two", 4), _world("worldbook:3", "three", 2),
             _world("worldbook:4", "four", 4, "user")]
    made = {i.key: i for i in _injections(nodes)}
    assert set(made) == {"customDepthWI_2_0", "customDepthWI_4_0", "customDepthWI_4_1"}
    assert (made["customDepthWI_2_0"].sources, made["customDepthWI_2_0"].content) == (
        ("worldbook:1", "worldbook:3"), "one\nthree")
    alone = made["customDepthWI_4_0"]
    assert (alone.sources, alone.content, alone.depth, alone.order) == (("worldbook:2",), "two", 4, 100)
    assert made["customDepthWI_4_1"].role == "user"
    assert _injections(nodes) == _injections(nodes)


class _Upper:
    """A stand-in for SillyTavern's macros: `{{up}}` becomes UP; the order of the texts it saw is kept."""

    def __init__(self):
        self.seen = []

    def evaluate(self, text):
        self.seen.append(text)
        return text.replace("{{up}}", "UP")


def test_extension_prompts_go_through_the_macros_depth_by_depth_and_keep_an_untouched_one_as_it_is():
    from assembly.sillytavern.messages import StInjection
    from assembly.sillytavern.request import in_chat_macros

    deep = StInjection(sources=("a",), content="deep {{up}}", depth=3, key="a")
    plain = StInjection(sources=("b",), content="plain", depth=1, key="b")
    unkeyed = StInjection(sources=("c",), content="c {{up}}", depth=0)
    env = _Upper()
    out = in_chat_macros([deep, plain, unkeyed], env)
    assert env.seen == ["plain", "deep {{up}}"]  # depth 1 before depth 3; a preset prompt (no key) is not read
    assert out[0].content == "deep UP" and out[0].depth == 3
    assert out[1] is plain and out[2] is unkeyed


def test_without_extension_prompts_the_resources_serve_as_they_are_under_sillytavern_macros():
    from assembly.sillytavern.models import AuthorNote, Resources
    from assembly.sillytavern.st_chat import expanded_injections

    res = Resources(author_note=AuthorNote(content="{{up}} note"))
    assert expanded_injections(res, "U", "C", macro_env=_Upper()) is res


def test_a_chat_message_goes_where_its_first_conversation_part_is_and_unknown_sources_are_no_parts():
    from assembly.sillytavern.messages import StMessage
    from assembly.sillytavern.request import _to_request

    note = _world("worldbook:1", "lore", 0)
    said = Node(id="input:m1", rule_id="input", module="input", name="input", role="user", original_role="user",
                text="hi", trust="user", message={"id": "m1", "role": "user", "content": "hi"})
    plan = [StMessage("m1", "user", "lore hi", kind="chat", sources=("worldbook:1", "gone", "input:m1")),
            StMessage("p", "system", "", kind="prompt", sources=("worldbook:1",))]  # empty: not sent
    messages, order, placed = _to_request(plan, {n.id: n for n in (note, said)}, "o200k_base", {"m1": 2})
    assert [(m.id, m.delivery, m.history_status, m.parts, m.tokens) for m in messages] == [
        ("m1", "input", "appended", ["worldbook:1", "input:m1"], 2)]
    assert order == [note, said]
    assert placed == {"worldbook:1": (0, "request", "request"), "input:m1": (0, "request", "input")}
    assert note.request_index is None and said.delivery is None  # the nodes handed in stay as they were


def test_an_injection_inside_a_tool_transaction_waits_and_the_node_handed_in_stays_as_it_was():
    from assembly.sillytavern.messages import StMessage
    from assembly.sillytavern.st_chat import _outside_tool_transactions

    deep = _world("worldbook:1", "lore", 1)
    call = Node(id="history:a", rule_id="history", module="history", name="a", role="assistant",
                original_role="assistant", text="", trust="user",
                message={"id": "a", "role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]})
    result = Node(id="history:t", rule_id="history", module="history", name="t", role="tool", original_role="tool",
                  text="sunny", trust="tool", message={"id": "t", "role": "tool", "content": "sunny",
                                                       "tool_call_id": "c1"})
    history = [StMessage("a", "assistant", "", kind="chat", sources=("history:a",)),
               StMessage("injection@1", "system", "lore", kind="injection", sources=("worldbook:1",)),
               StMessage("t", "user", "sunny", kind="chat", sources=("history:t",))]
    by_id = {n.id: n for n in (deep, call, result)}
    out = _outside_tool_transactions(history, [call, result], by_id)
    assert [m.id for m in out] == ["a", "t", "injection@1"]
    assert by_id["worldbook:1"].adjusted_for_tools and by_id["worldbook:1"].text == "lore"
    assert not deep.adjusted_for_tools  # the request's node is a copy
