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
