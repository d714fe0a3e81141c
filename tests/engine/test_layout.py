"""Resource layout blocks and overrides (reference A.11, cases A.14.6 L1–L6)."""

import pytest

from assembly import AssemblyError, assemble
from assembly.blocks import Node
from assembly.layout import layout_blocks, with_block_move

RULES = ["native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi"]


def strategy(backend=None, **layout_extra):
    doc = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "layout fixture",
           "rules": [{"id": k, "kind": k} for k in RULES],
           "layout": {"version": 1, "source": "preset-slots", "identity": "preserve", "fallback": "source-order",
                      "overrides": [], **layout_extra}}
    if backend:
        doc["backend"] = backend
    return doc


LORE = [{"uid": "a", "content": "A", "position": "before"}, {"uid": "b", "content": "B", "position": "after"},
        {"uid": "c", "content": "C", "position": "after"}]


def req(doc, prompts=None, lore=LORE):
    prompts = prompts if prompts is not None else [
        {"identifier": "p", "role": "system", "content": "HEAD{{worldInfoBefore}}{{history}}{{input}}TAIL"}]
    return {"strategy": doc, "resources": {"preset": {"prompts": prompts},
                                           "worldbook": {"activation": "all", "entries": list(lore)}},
            "conversation": {"history": [{"id": "old", "role": "user", "content": "OLD"}],
                             "input": [{"id": "now", "role": "user", "content": "NOW"}]},
            "host": {"core_available": True}}


def texts_of(result, block):
    nodes = {n.id: n for n in result.nodes}
    return [nodes[i].text for i in block.node_ids]


def block_of(result, text):
    return next(b for b in result.layout.blocks if text in texts_of(result, b))


def contents(result):
    return [m.content for m in result.request.messages]


def test_l1_slot_blocks_are_fixed_free_blocks_move():
    doc = strategy()
    result = assemble(req(doc))
    a, b = block_of(result, "A"), block_of(result, "B")
    assert a.binding == "slot" and not a.movable
    assert b.binding == "free" and texts_of(result, b) == ["B", "C"]
    assert all(s["emitsText"] is False for s in result.layout.slots)
    head = block_of(result, "HEAD")
    with pytest.raises(AssemblyError, match="follows a slot"):
        with_block_move(doc, result.layout.blocks, a.id, head.id)


def test_l2_a_moved_free_block_takes_new_entries_with_it():
    doc = strategy()
    result = assemble(req(doc))
    moved = with_block_move(doc, result.layout.blocks, block_of(result, "B").id, block_of(result, "HEAD").id)
    lore = LORE + [{"uid": "new", "content": "NEW", "position": "after"}]
    after = assemble(req(moved, lore=lore))
    assert contents(after)[:4] == ["B", "C", "NEW", "HEAD"]
    assert len(moved["layout"]["overrides"]) == 1 and "worldbook:new" not in str(moved["layout"])


def test_l3_detach_moves_a_slot_block_and_remembers_its_slot():
    doc = strategy()
    result = assemble(req(doc))
    a = block_of(result, "A")
    moved = with_block_move(doc, result.layout.blocks, a.id, block_of(result, "B").id, "after", detach=True)
    after = assemble(req(moved))
    assert contents(after)[-3:] == ["B", "C", "A"]
    node = next(n for n in after.nodes if n.text == "A")
    assert node.original_slot_id == a.slot_id and not node.locked


def test_l4_override_target_gone():
    doc = strategy()
    result = assemble(req(doc))
    moved = with_block_move(doc, result.layout.blocks, block_of(result, "B").id, block_of(result, "HEAD").id)
    emptied = assemble(req(moved, prompts=[{"identifier": "chatHistory", "marker": True}]))
    assert any(d.code == "LAYOUT_TARGET_MISSING" for d in emptied.diagnostics)
    strict = {**moved, "layout": {**moved["layout"], "fallback": "error"}}
    with pytest.raises(AssemblyError, match="no longer available"):
        assemble(req(strict, prompts=[{"identifier": "chatHistory", "marker": True}]))


def test_moving_without_a_layout_policy_is_refused():
    doc = {k: v for k, v in strategy().items() if k != "layout"}
    with pytest.raises(AssemblyError, match="adopt a resource layout policy"):
        with_block_move(doc, [], "x", "y")


def test_l5_core_roles_follow_the_items():
    prompts = [{"identifier": "a", "role": "user", "content": "A"},
               {"identifier": "b", "role": "system", "content": "{{history}}{{input}}"},
               {"identifier": "c", "role": "assistant", "content": "C"}]
    result = assemble(req(strategy(), prompts=prompts, lore=[]))
    assert [m.role for m in result.request.messages] == ["user", "user", "user", "assistant"]


def test_l6_native_system_text_cannot_cross_the_input():
    # States its adaptive placement: a native document stating none (modules) refuses CTX before history (dsh r7-0246)
    doc = {**strategy("native", source="manual"), "placement": "native-roles"}
    prompts = [{"identifier": "a", "role": "system", "content": "SYS"}, {"identifier": "b", "role": "user",
                                                                         "content": "CTX"}]
    result = assemble(req(doc, prompts=prompts, lore=[]))
    ctx = block_of(result, "CTX")
    assert "NATIVE_CONTEXT_REUSES_HISTORY_POSITION" in ctx.limitations
    moved = with_block_move(doc, result.layout.blocks, block_of(result, "SYS").id, block_of(result, "NOW").id,
                            "after")
    with pytest.raises(AssemblyError, match="boundary"):
        assemble(req(moved, prompts=prompts, lore=[]))


def test_a_block_names_its_nodes_by_id_in_their_order():
    nodes = [Node(id=f"n{i}", rule_id="r", module="m", name="nm", role="user", original_role="system", text=f"t{i}",
                  trust="system", field="f") for i in (1, 2)]
    [block] = layout_blocks(nodes, "core")
    assert block.node_ids == ["n1", "n2"] and not hasattr(block, "entries")
