"""What the engine shares or drops to keep a long request's objects few (issue 19): never visible in an answer."""

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


def test_the_next_request_with_the_same_resources_answers_as_a_fresh_run():
    from assembly.resource_memo import _parsed
    from assembly.source_memo import clear_source_memo

    first = assemble(_st_request()).model_dump(mode="json")
    again = assemble(_st_request()).model_dump(mode="json")  # the preset, card and persona blocks from memory
    clear_source_memo()
    _parsed.clear()
    assert again == first == assemble(_st_request()).model_dump(mode="json")


def test_remembered_blocks_follow_the_settings_they_were_made_under():
    from assembly.source_memo import clear_source_memo

    normal = assemble(_st_request())
    impersonate = assemble(_st_request(generation={"type": "impersonate"}))
    clear_source_memo()
    assert impersonate.model_dump(mode="json") == assemble(_st_request(generation={"type": "impersonate"})
                                                           ).model_dump(mode="json")
    assert normal.model_dump(mode="json") != impersonate.model_dump(mode="json")


def test_a_source_diagnostic_is_reported_again_on_a_remembered_answer():
    raw = fixture_request(strategy())
    raw["resources"]["preset"]["prompts"].append({"identifier": "madeUpMarker", "marker": True})
    codes = [[d.code for d in assemble(raw).diagnostics if d.code == "UNSUPPORTED_MARKER"] for _ in range(2)]
    assert codes == [["UNSUPPORTED_MARKER"], ["UNSUPPORTED_MARKER"]]


def test_the_memo_keeps_no_resources_alive():
    import gc

    from assembly.sillytavern.resource_set import normalize_resources
    from assembly.source_memo import _remembered

    raw = fixture_request(strategy())
    models = normalize_resources(raw["resources"])
    # as a preview sends them: the engine's models, parsed into a new resource set on every request
    raw["resources"] = {"preset": models.preset, "character": models.character, "worldbook": models.worldbook}
    before = set(_remembered)
    assemble(raw)
    added = [entry for key, entry in _remembered.items() if key not in before]
    gc.collect()
    assert added and all(entry[0]() is None for entry in added)
