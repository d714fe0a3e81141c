"""assembly.logical: a text node that takes nothing in carries the shared blocks.NO_CHILDREN, so a remembered plan's
reads copy no empty list; every view still gets a list of its own, and the shared one stays empty."""

import copy

from assembly import assemble
from assembly.blocks import NO_CHILDREN
from tests.engine.test_assemble import B_LORE, B_PROMPTS, request


def test_views_own_their_children_and_the_shared_empty_list_stays_empty():
    req = copy.deepcopy(request("builtin-st", B_PROMPTS, lore=B_LORE,
                                character={"name": "C", "description": "D"}))
    first = assemble(req)
    second = assemble(req)  # from the remembered plan
    assert first.model_dump_json() == second.model_dump_json()
    views = [*first.nodes, *second.nodes]
    assert all(view.children == [] and view.children is not NO_CHILDREN for view in views)
    assert len({id(view.children) for view in views}) == len(views)
    second.nodes[0].children.append({"id": "x"})
    assert NO_CHILDREN == []
    assert assemble(req).model_dump_json() == first.model_dump_json()


def test_a_macro_target_is_still_a_child_of_its_own():
    prompts = [{"identifier": "main", "name": "main", "role": "system", "content": "About: {{description}}"}]
    req = copy.deepcopy(request("builtin-st", prompts, character={"name": "C", "description": "D"}))
    for _ in range(2):
        main = next(n for n in assemble(req).nodes if n.id == "preset:main")
        assert [c["lock_reason"] for c in main.children] == ["macro:description"]
        main.children.clear()
    assert NO_CHILDREN == []


def _claim_state(entries):
    from assembly.logical_state import Entry, State
    from assembly.macros import MacroContext

    rule_entries = [Entry(rule={"id": f"r-{kind}", "kind": kind, "enabled": True}, index=i, blocks=blocks)
                    for i, (kind, blocks) in enumerate(entries.items())]
    return State(strategy={}, backend="core", placement="st", layout=None, adaptive=False, list_placement=False,
                 priority=("preset", "resource", "default"), settings={},
                 entries={e.rule["kind"]: e for e in rule_entries}, rule_entries=rule_entries, diagnostics=[],
                 macro_ctx=MacroContext(), conversation={})


def test_references_that_pull_each_other_in_are_refused_as_a_cycle():
    import pytest

    from assembly.blocks import Block
    from assembly.errors import AssemblyError
    from assembly.logical import _claim_from

    a = Block(id="a", source="one", type="reference", target_source="two", honor_enabled=False)
    b = Block(id="b", source="two", type="reference", target_source="one", honor_enabled=False)
    state = _claim_state({"one": [a], "two": [b]})
    with pytest.raises(AssemblyError) as refused:
        _claim_from(state, a, ("one", "a"), frozenset())
    assert refused.value.code == "ASSEMBLY_REFERENCE_CYCLE"


def test_a_block_that_replaces_a_card_field_claims_it_and_a_plain_block_claims_nothing():
    from assembly.blocks import Block
    from assembly.logical import _claim_from

    main = Block(id="main", source="preset", type="text", text="x", extra=(("field_claims", ("system",)),))
    plain = Block(id="other", source="preset", type="text", text="y")
    system = Block(id="system", source="character", type="text", text="card", field="system")
    state = _claim_state({"preset": [main, plain], "character": [system]})
    _claim_from(state, plain, (plain.source, plain.id), frozenset())
    assert state.claimed_by == {}
    _claim_from(state, main, (main.source, main.id), frozenset())
    assert state.claimed_by == {("character", "system"): ("preset", "main")}


def test_a_text_node_in_a_slot_carries_the_slot_and_its_lock_and_one_at_its_own_place_none():
    from tests.engine.test_assemble import marker

    prompts = [*B_PROMPTS, marker("charDescription")]
    req = copy.deepcopy(request("builtin-st", prompts, lore=B_LORE, character={"name": "C", "description": "D"}))
    nodes = {n.id: n for n in assemble(req).nodes}
    placed = [(n.slot_id, n.locked, n.lock_reason, n.position_decision, n.rule_id)
              for n in (nodes["worldbook:w"], nodes["character:description"], nodes["preset:main"])]
    assert placed == [("preset:worldInfoBefore:before", True, "reference:preset", "preset", "worldbook"),
                      ("preset:charDescription", True, "reference:preset", "preset", "character"),
                      (None, False, None, "source", "preset")]
