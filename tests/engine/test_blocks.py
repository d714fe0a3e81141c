"""Blocks and nodes (assembly.blocks): a node with no children shares no list a caller could change, and a request
model keeps its conversation; none of it is visible in an answer."""

from assembly import assemble
from assembly.blocks import NO_CHILDREN
from assembly.request import parse_request
from tests.engine.test_positions import fixture_request, strategy

_LORE = [{"uid": "o1", "content": "The gate opens at dawn", "position": "outlet", "outlet_name": "gate"}]


def test_filling_an_outlet_leaves_the_shared_empty_children_empty():
    req = fixture_request(strategy(), main="Lore: {{outlet::gate}}.", lore=_LORE)
    req["conversation"]["history"] = [{"id": "old", "role": "user", "content": "OLD"},
                                      {"id": "older", "role": "assistant", "content": "Plain."}]
    result = assemble(req)
    host = next(n for n in result.nodes if n.text.startswith("Lore:"))
    assert host.text == "Lore: The gate opens at dawn."
    assert {"id": "worldbook:o1", "source": "worldbook", "locked": True,
            "lock_reason": "macro:outlet::gate"} in host.children
    assert [n.children for n in result.nodes if n.module == "history"] == [[], []]
    assert NO_CHILDREN == []


def test_history_nodes_without_children_answer_an_empty_list():
    result = assemble(fixture_request(strategy()))
    history = [n for n in result.nodes if n.module in ("history", "input")]
    assert history and all(n.children == [] for n in history)
    assert result.model_dump(mode="json")["nodes"][-1]["children"] == []


def test_a_request_model_keeps_its_conversation_and_answers_as_its_dict():
    raw = fixture_request(strategy())
    model = parse_request(raw)
    assert assemble(model).model_dump(mode="json") == assemble(raw).model_dump(mode="json")
    assert [m.id for m in model.conversation.history] == ["old"]
    assert [m.id for m in model.conversation.input] == ["now"]


def _st_request(**changes):
    from bench.fixtures import assemble_request
    return {**assemble_request("builtin-st", history=3, worldbook=3), **changes}


def test_a_source_diagnostic_is_reported_by_every_request():
    raw = fixture_request(strategy())
    raw["resources"]["preset"]["prompts"].append({"identifier": "madeUpMarker", "marker": True})
    codes = [[d.code for d in assemble(raw).diagnostics if d.code == "UNSUPPORTED_MARKER"] for _ in range(2)]
    assert codes == [["UNSUPPORTED_MARKER"], ["UNSUPPORTED_MARKER"]]
