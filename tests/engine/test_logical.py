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
