"""assembly.plan_memo: the logical plan of a strategy and resource set, made once and read by every later turn.
Every answer from memory must equal the answer of a fresh run (the memo emptied first)."""

import copy

from assembly import assemble
from assembly.plan_memo import _plans, clear_plan_memo
from assembly.source_memo import clear_source_memo
from tests.engine.test_positions import fixture_request, strategy, texts


def _fresh(request):
    clear_plan_memo()
    clear_source_memo()
    return assemble(copy.deepcopy(request)).model_dump(mode="json")


def _turn(history, now="NOW", main=None):
    request = fixture_request(strategy(), main=main)
    request["conversation"] = {"history": history, "input": [{"id": "now", "role": "user", "content": now}]}
    return request


_SHORT = [{"id": "h1", "role": "user", "content": "first"}]
_LONG = [*_SHORT, {"id": "h2", "role": "assistant", "content": "second"},
         {"id": "h3", "role": "user", "content": "third"}]


def test_the_next_turn_answers_as_a_fresh_run():
    assemble(_turn(_SHORT))
    again = assemble(_turn(_LONG)).model_dump(mode="json")  # the plan of the first turn, three messages now
    assert [n["text"] for n in again["nodes"] if n["module"] == "history"] == ["first", "second", "third"]
    assert again == _fresh(_turn(_LONG))


def test_a_bench_turn_of_another_length_answers_as_a_fresh_run():
    from bench.fixtures import assemble_request

    assemble(assemble_request("builtin-st", history=4, worldbook=3))
    longer = assemble_request("builtin-st", history=9, worldbook=3)
    assert assemble(copy.deepcopy(longer)).model_dump(mode="json") == _fresh(longer)


def test_a_turn_without_history_keeps_its_own_plan():
    # an empty history changes the plan (placement st keeps an empty anchor in the slot): it is part of the key
    from bench.fixtures import assemble_request

    assemble(assemble_request("builtin-st", history=3, worldbook=2))
    empty = assemble_request("builtin-st", history=0, worldbook=2)
    assert assemble(copy.deepcopy(empty)).model_dump(mode="json") == _fresh(empty)


def test_a_macro_that_reads_the_last_message_is_made_again_when_it_changes():
    main = "Reply to: {{lastUserMessage}}"
    first = assemble(_turn(_SHORT, now="open the gate", main=main))
    second = assemble(_turn(_SHORT, now="close the gate", main=main))
    assert "Reply to: open the gate" in texts(first)
    assert "Reply to: close the gate" in texts(second)
    assert second.model_dump(mode="json") == _fresh(_turn(_SHORT, now="close the gate", main=main))


def test_changing_a_returned_node_leaves_the_next_answer_alone():
    request = fixture_request(strategy(), main="Lore: {{outlet::gate}}.",
                              lore=[{"uid": "o1", "content": "The gate opens at dawn", "position": "outlet",
                                     "outlet_name": "gate"}])
    first = assemble(copy.deepcopy(request))
    expected = first.model_dump(mode="json")
    host = next(n for n in first.nodes if n.text.startswith("Lore:"))
    host.children[0]["lock_reason"] = "changed by a caller"
    first.diagnostics.clear()
    assert assemble(copy.deepcopy(request)).model_dump(mode="json") == expected


def test_a_keyword_scan_is_never_remembered():
    # the scan reads the chat, so each turn activates for itself
    request = fixture_request(strategy())
    request["resources"]["worldbook"] = {"activation": "keywords", "entries": [
        {"uid": "g", "key": ["gate"], "content": "The north gate.", "position": "before"}]}
    request["conversation"]["input"][0]["content"] = "what about the gate?"
    assert "The north gate." in texts(assemble(copy.deepcopy(request)))
    request["conversation"]["input"][0]["content"] = "what about the river?"
    assert "The north gate." not in texts(assemble(copy.deepcopy(request)))


def test_the_memo_keeps_no_resources_alive():
    import gc

    from assembly.sillytavern.resource_set import normalize_resources

    raw = fixture_request(strategy())
    models = normalize_resources(raw["resources"])
    raw["resources"] = {"preset": models.preset, "character": models.character, "worldbook": models.worldbook}
    clear_plan_memo()
    assemble(raw)
    added = list(_plans.values())
    gc.collect()
    assert added and all(entry[0]() is None for entry in added)
