"""assembly.api: `assemble()` as its stages, one pass down; each stage returns a new value and changes nothing an
earlier stage handed over."""

import copy
import dataclasses
import gc

import pytest

from assembly import api
from assembly.blocks import node_values
from bench.fixtures import assemble_request


def _stages(request):
    run = api._resolve(api._parse(request))
    logical = api._logical(run)
    return run, logical


@pytest.mark.parametrize("strategy", ["builtin-st", "builtin-native-slots", "builtin-native-roles"])
def test_order_and_build_leave_the_nodes_they_were_handed_as_they_were(strategy):
    request = assemble_request(strategy, history=6, worldbook=6)
    request["host"]["native_available"] = True
    run, logical = _stages(request)
    emitted = [copy.copy(node_values(n)) for n in logical.nodes]
    ordered = api._order(run, logical)
    assert [node_values(n) for n in logical.nodes] == emitted
    placed = [node_values(n) for n in ordered.nodes]
    built = api._build(run, ordered.nodes, [])
    assert [node_values(n) for n in ordered.nodes] == placed
    assert built.messages and set(built.placed) == {n.id for n in built.nodes}


@pytest.mark.parametrize("scripts", [False, True])
def test_sillytavern_s_build_changes_its_own_copy_of_a_chat_message_and_shares_the_ones_it_leaves(scripts):
    request = assemble_request("builtin-st", history=4, worldbook=1)
    history = request["conversation"]["history"]
    history[1]["content"] = "Ask {{char}} about the gate."  # its macros run again as the history is filled
    if scripts:  # a regex script rewrites every chat message
        request["resources"]["regex_scripts"] = [{"scriptName": "gate", "findRegex": "/gate/g", "replaceString":
                                                  "GATE", "placement": [1, 2],
                                                  "promptOnly": True}]
    run, logical = _stages(request)
    ordered = api._order(run, logical)
    handed = [node_values(n) for n in ordered.nodes]
    built = api._build(run, ordered.nodes, [])
    assert [node_values(n) for n in ordered.nodes] == handed
    asked = next(n for n in built.nodes if n.message is not None and n.message["id"] == history[1]["id"])
    assert asked.text == ("Ask Seraphina about the GATE." if scripts else "Ask Seraphina about the gate.")
    before = {id(n) for n in ordered.nodes}
    chat = [n for n in built.nodes if n.message is not None]
    assert id(asked) not in before
    # the others are shared with the order stage unless the scripts rewrote every one
    assert any(id(n) in before for n in chat) is not scripts


def test_each_stage_reports_its_own_findings_once_in_stage_order():
    request = assemble_request("builtin-st", history=4, worldbook=2)
    request["budget"] = {"context_window": 700, "reserve_output": 0, "apply": True}  # the fixed prompts fit
    result = api.assemble(request)
    codes = [d.code for d in result.diagnostics]
    assert codes.count("CONTEXT_BUDGET_EXCEEDED") == 1
    assert result.budget.applied and result.budget.total_after is not None
    assert result.tokens.total == result.budget.total_after
    dropped = {item.id for item in result.budget.eviction_plan}
    assert dropped and not dropped & {n.id for n in result.nodes}


def test_a_node_the_order_stage_moves_is_a_new_node_and_logical_keeps_its_own():
    from assembly.catalogue import get_builtin_strategy

    request = assemble_request("builtin-st", history=2, worldbook=2)
    strategy = copy.deepcopy(get_builtin_strategy("builtin-st"))
    strategy["layout"]["positions"] = [{"sourceId": "character", "positionId": "description", "enabled": True,
                                        "placement": "list", "anchor": "end"}]
    request["strategy"] = strategy
    run, logical = _stages(request)
    emitted = [copy.copy(node_values(n)) for n in logical.nodes]
    ordered = api._order(run, logical)
    assert [node_values(n) for n in logical.nodes] == emitted
    moved = [n for n in ordered.nodes if n.position_decision == "user"]
    assert [n.id for n in moved] == ["character:description"] and ordered.nodes[-1] is moved[0]
    before = next(n for n in logical.nodes if n.id == "character:description")
    assert before is not moved[0] and before.position_decision != "user"
    untouched = [n for n in ordered.nodes if n.position_decision != "user"]
    assert all(any(n is m for m in logical.nodes) for n in untouched)  # under st the others pass through


def test_a_node_view_carries_each_value_of_its_node_under_the_same_name():
    # every field of the node given a value of its own, so a value written to another field shows
    values = {"id": "n1", "rule_id": "r", "module": "m", "name": "nm", "field": "fd", "role": "user",
              "original_role": "system", "text": "tx", "trust": "operator", "delivery": "dl", "region": "rg",
              "request_index": 4, "locked": True, "lock_reason": "lr", "position_decision": "pd", "slot_id": "sl",
              "depth": 2, "requested_depth": 3, "position_id": "pi", "order": 7, "lifetime": "lt",
              "activation": "ac", "children": [{"id": "c"}], "adjusted_for_tools": True, "original_slot_id": "os"}
    node = api.Node(**{**values, "request_index": None, "region": None, "delivery": None})
    [view], by_module = api._node_views([node], {"n1": (4, "rg", "dl")}, {"n1": 11})  # where the build placed it
    assert {f.name: getattr(view, f.name) for f in dataclasses.fields(view)} == {**values, "tokens": 11}
    assert view.children is not node.children
    assert by_module == {"m": 11}


@pytest.mark.parametrize("strategy", ["builtin-st", "builtin-native-slots"])
def test_an_answer_leaves_nothing_for_the_cyclic_collector(strategy):
    # what a request builds is freed as soon as its last reference goes: a long chat kept alive by a reference cycle
    # until a collection was work for every later request
    request = assemble_request(strategy, history=6, worldbook=6)
    request["host"]["native_available"] = True
    api.assemble(copy.deepcopy(request))
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = api.assemble(request)
        del result
        gc.collect()
        left = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []


def _world_info_request(strategy: str, *, preset: bool) -> dict:
    book = {"activation": "keywords", "budget_percent": 1, "entries": [
        {"uid": 1, "constant": True, "content": "The harbour lantern burns green.", "position": "before"},
        {"uid": 2, "constant": True, "content": "The chapel bell rings twice.", "position": "before"}]}
    resources = {"worldbook": book, "character": {"name": "Pell", "description": "A keeper."}}
    if preset:
        resources["preset"] = {"prompts": [{"identifier": "main", "role": "system", "content": "Be Pell."},
                                           {"identifier": "worldInfoBefore", "marker": True},
                                           {"identifier": "chatHistory", "marker": True}],
                               "openai_max_context": 100_000, "openai_max_tokens": 300}
    return {"strategy": strategy, "host": {"core_available": True}, "resources": resources,
            "budget": {"context_window": 100, "reserve_output": 0},
            "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello."}]}}


def test_under_sillytaverns_rules_the_world_info_budget_is_the_presets_share_not_the_requests_budget():
    """engine.md §5/§8: SillyTavern's world-info budget is a share of its preset's window; a request's budget is a
    check beside it and leaves the entries SillyTavern would send in place."""
    result = api.assemble(_world_info_request("builtin-st", preset=True))
    assert sorted(a.uid for a in result.world_info.active) == [1, 2]
    assert result.budget.limit == 100  # the request's budget is still reported


def test_without_a_preset_the_request_budget_is_the_window_world_info_shares():
    result = api.assemble(_world_info_request("builtin-st", preset=False))
    assert result.world_info is None or not result.world_info.active


def test_an_applied_plan_under_sillytaverns_rules_sends_each_injection_once_and_fits():
    """engine.md §8 with `apply`: the ordered nodes are built again without the evicted ones; SillyTavern's build
    adds its in-chat injections (here the author's note) again, so none may come from the first build too."""
    history = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Message {i} about the storm over the harbour tonight."} for i in range(8)]
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Be Mira."},
                                                    {"identifier": "chatHistory", "marker": True}],
                                        "openai_max_context": 100_000, "openai_max_tokens": 300},
                             "character": {"name": "Mira", "description": "A keeper."},
                             "author_note": {"content": "[Style: {{char}} is terse.]", "position": "in_chat",
                                             "depth": 2}},
               "conversation": {"history": history, "input": [{"id": "now", "role": "user", "content": "Go."}]}}
    roomy = api.assemble(request)
    limit = roomy.tokens.total - 30
    applied = api.assemble({**request, "budget": {"context_window": limit, "apply": True}})
    contents = [m.content for m in applied.request.messages]
    assert applied.budget.applied and applied.budget.eviction_plan
    assert contents.count("[Style: Mira is terse.]") == 1 and not any("{{char}}" in c for c in contents)
    assert applied.budget.total_after <= limit and applied.tokens.total == applied.budget.total_after
    note = contents.index("[Style: Mira is terse.]")  # depth 2 of the chat that is sent: before its last two
    assert contents[note + 1:note + 3] == [history[-1]["content"], "Go."]
