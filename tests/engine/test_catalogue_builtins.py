"""What `resolve_strategy` shares between requests naming a built-in: its rules, read only, never in a result."""

import pickle

import pytest
from pydantic import BaseModel

from assembly import assemble
from assembly.catalogue import _BUILTIN_RESOLVED, BUILTIN_STRATEGY_IDS, get_builtin_strategy, resolve_strategy
from tests.engine.test_assemble import B_LORE, B_PROMPTS, request


def _containers(value, found):
    if isinstance(value, (dict, list)):
        found[id(value)] = value
        for child in value.values() if isinstance(value, dict) else value:
            _containers(child, found)
    return found


def _reached(value, found, seen):
    if id(value) in seen:
        return found
    seen.add(id(value))
    if isinstance(value, BaseModel):
        children = [*value.__dict__.values(), *(value.__pydantic_extra__ or {}).values()]
    elif isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple)):
        children = list(value)
    else:
        return found
    found.add(id(value))
    for child in children:
        _reached(child, found, seen)
    return found


def test_a_resolved_builtin_equals_a_fresh_copy_and_shares_only_its_rules():
    for builtin_id in BUILTIN_STRATEGY_IDS:
        fresh = get_builtin_strategy(builtin_id)
        del fresh["id"]
        strategy_id, strategy = resolve_strategy(builtin_id)
        again = resolve_strategy(builtin_id)[1]
        assert strategy_id == builtin_id and strategy == fresh and list(strategy) == list(fresh)
        assert strategy is not again and strategy["rules"] is again["rules"]
        if "layout" in strategy:
            assert strategy["layout"] is not again["layout"]
            assert strategy["layout"]["priority"] is not again["layout"]["priority"]
            assert strategy["layout"]["overrides"] is not again["layout"]["overrides"]


@pytest.mark.parametrize("builtin_id", BUILTIN_STRATEGY_IDS)
def test_no_shared_part_of_a_builtin_reaches_a_result_or_is_changed(builtin_id):
    before = pickle.dumps(_BUILTIN_RESOLVED[builtin_id])
    shared = _containers(_BUILTIN_RESOLVED[builtin_id], {})
    result = assemble(request(builtin_id, B_PROMPTS, lore=B_LORE, character={"name": "C", "description": "D"}))
    assert not shared.keys() & _reached(result, set(), set())
    if result.layout.policy is not None:  # the result's policy is its own: changing it changes no later answer
        result.layout.policy["priority"].reverse()
        result.layout.policy["overrides"].append({"changed": True})
    assert pickle.dumps(_BUILTIN_RESOLVED[builtin_id]) == before
    second = assemble(request(builtin_id, B_PROMPTS, lore=B_LORE, character={"name": "C", "description": "D"}))
    assert second.layout.model_dump() != result.layout.model_dump() or result.layout.policy is None
