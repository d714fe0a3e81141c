"""The result's typed parts dump to the same JSON as the dicts they replaced: the same keys in the same order, and
fields that were absent stay absent."""

import dataclasses
import json
import pickle

import pytest
from pydantic import ValidationError

from assembly import assemble
from assembly.results import (
    AssemblyResult,
    BudgetReport,
    Diagnostic,
    DurableEvent,
    EvictionItem,
    NodeView,
    PresetBudget,
    RequestMessage,
)


def test_a_diagnostic_keeps_its_code_first_and_its_details_in_order():
    found = Diagnostic.of({"code": "NATIVE_ROLE_ADJUSTED", "name": "J", "from": "system", "to": "user"})
    assert found.details == {"name": "J", "from": "system", "to": "user"}
    assert json.dumps(found.model_dump(mode="json")) == (
        '{"code": "NATIVE_ROLE_ADJUSTED", "name": "J", "from": "system", "to": "user"}')


def test_an_input_is_recorded_in_its_own_key_order():
    event = DurableEvent.of({"role": "user", "content": "hi", "name": "Ann", "id": "i1"})
    assert list(event.model_dump(mode="json")) == ["role", "content", "name", "id"]
    assert event.kind == "user" and event.source is None
    result = assemble({"strategy": "builtin-native-roles", "conversation": {"input": [{"role": "user",
                                                                                       "content": "hi"}]}})
    recorded = [e.model_dump(mode="json") for e in result.durable_events]
    assert {"role": "user", "content": "hi", "id": "i1"} in recorded
    assert list(next(e for e in recorded if e.get("id") == "i1")) == ["role", "content", "id"]


def test_budget_fields_that_were_absent_stay_absent():
    plan = [EvictionItem(id="h", module="history", tokens=1, reason="over_budget")]
    report = BudgetReport(limit=5, total=7, over_by=2, eviction_plan=plan, applied=False, fixed_tokens=2)
    assert list(report.model_dump(mode="json")) == ["limit", "total", "over_by", "eviction_plan", "applied",
                                                    "fixed_tokens"]
    preset = PresetBudget(source="preset", limit=70, remaining=3, dropped=[], failure=None)
    report = report.model_copy(update={"total_after": 5, "preset_budget": preset})
    assert list(report.model_dump(mode="json"))[-2:] == ["total_after", "preset_budget"]


def test_a_result_read_back_from_its_json_is_the_same_result():
    # the per-node parts are plain dataclasses: pydantic writes them and reads them back as parts of the result
    result = assemble({"strategy": "builtin-native-roles", "conversation": {
        "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "",
                                                        "tool_calls": [{"id": "c1", "type": "function"}]},
                    {"role": "tool", "content": "done", "tool_call_id": "c1"}],
        "input": [{"role": "user", "content": "and?"}]}})
    dumped = result.model_dump(mode="json")
    again = AssemblyResult.model_validate(json.loads(json.dumps(dumped)))
    assert (again.nodes, again.request, again.positions, again.placement_controls, again.layout) == (
        result.nodes, result.request, result.positions, result.placement_controls, result.layout)
    assert [n["id"] for n in again.model_dump(mode="json")["nodes"]] == [n["id"] for n in dumped["nodes"]]
    assert isinstance(again.nodes[0], NodeView) and isinstance(again.request.messages[0], RequestMessage)
    assert [m["tool_calls"] for m in dumped["request"]["messages"]][1] == [{"id": "c1", "type": "function"}]
    assert list(dumped["nodes"][0])[:3] == ["id", "rule_id", "module"]


def test_a_result_part_is_checked_when_read_back():
    dumped = assemble({"conversation": {"history": [{"role": "user", "content": "hi"}]}}).model_dump(mode="json")
    dumped["nodes"][0]["tokens"] = "many"
    with pytest.raises(ValidationError, match="nodes.0.tokens"):
        AssemblyResult.model_validate(dumped)


def _containers(value, found):
    """Every list and dict a result holds, by id (pydantic models walked through their fields and extras, dataclasses
    through their fields)."""
    if isinstance(value, (list, dict)):
        found[id(value)] = value
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, found)
    elif hasattr(value, "__pydantic_fields_set__"):
        _containers(value.__dict__, found)
        _containers(value.__pydantic_extra__ or {}, found)
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _containers(getattr(value, field.name), found)
    return found


def test_two_answers_to_one_request_share_no_list_or_dict():
    # a caller may change one result; the next must be unaffected (history nodes once shared an empty children list)
    for request in ({"strategy": "builtin-native-roles", "conversation": {"history": [
                        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
                        "input": [{"role": "user", "content": "and?"}]}},
                    {"conversation": {"history": [{"role": "user", "content": "hi"}]}}):
        first, second = _containers(assemble(request), {}), _containers(assemble(request), {})
        assert not set(first) & set(second)
    result = assemble({"strategy": "builtin-native-roles", "conversation": {"history": [
        {"role": "user", "content": "hi"}]}})
    result.nodes[0].children.append({"id": "mine"})
    again = assemble({"strategy": "builtin-native-roles", "conversation": {"history": [
        {"role": "user", "content": "hi"}]}})
    assert all(not n.children for n in again.nodes if n.module == "history")


def test_a_pickled_result_reads_back_equal_with_each_part_as_its_field_values():
    # the studio keeps results as pickles (studio/result_cache.py): a part is written as its values by position
    result = assemble({"strategy": "builtin-native-roles", "conversation": {
        "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "input": [{"role": "user", "content": "and?"}]}})
    again = pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    assert (again.nodes, again.request, again.positions, again.placement_controls, again.layout) == (
        result.nodes, result.request, result.positions, result.placement_controls, result.layout)
    node = result.nodes[0]
    assert node.__reduce__() == (NodeView, tuple(getattr(node, f.name) for f in dataclasses.fields(NodeView)))


def test_a_results_layout_policy_is_its_own_not_the_requests():
    # the layout view takes the engine's policy and slots without validating them again: the policy is a copy
    layout = {"version": 1, "source": "preset-slots", "identity": "preserve", "fallback": "source-order",
              "overrides": []}
    request = {"strategy": {"format": "dsh-tavern-request-assembly", "version": 1, "name": "layout",
                            "rules": [{"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}],
                            "layout": layout},
               "conversation": {"input": [{"role": "user", "content": "hi"}]}, "host": {"core_available": True}}
    result = assemble(request)
    policy = result.layout.policy
    assert {key: policy[key] for key in layout} == layout and result.model_dump(mode="json")["layout"]["policy"] == policy
    result.layout.policy["fallback"] = "error"
    assert layout["fallback"] == "source-order"
    assert assemble(request).layout.policy["fallback"] == "source-order"
