"""Native validation (reference A.6, cases A.14.2 V1–V3)."""

import copy

import pytest

from assembly import AssemblyError, assemble, builtin_strategies
from tests.engine.reference_rules import NATIVE_RULES


def module_order(rules=None):
    return {"format": "dsh-tavern-request-assembly", "version": 1, "name": "native module order", "backend": "native",
            "placement": "modules", "rules": copy.deepcopy(list(rules or NATIVE_RULES))}


def run(strategy):
    return assemble({"strategy": strategy, "conversation": {"history": [{"id": "o", "role": "user", "content": "OLD"}],
                                                             "input": [{"id": "n", "role": "user", "content": "NOW"}]}})


def test_v1_native_builtins_pass_and_the_advanced_one_needs_core():
    for builtin in builtin_strategies():
        if builtin.get("backend") == "native":
            assert run(builtin["id"]).backend == "native"
    assert run(module_order()).backend == "native"


def mutate(path_value):
    doc = module_order()
    index, key, value = path_value
    doc["rules"][index][key] = value
    return doc


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (mutate((6, "enabled", False)), "preserve history"),
        (mutate((7, "enabled", False)), "preserve input"),
        (mutate((1, "role", "assistant")), "Assistant-role contributions require core"),
        (mutate((1, "depth", 1)), "insertion depth require core"),
        (mutate((1, "lifetime", "snapshot")), "snapshots and insertion depth require core"),
        (module_order(list(NATIVE_RULES) + [{"id": "tail", "kind": "dsh.text", "role": "system"}]),
         "system contributions must precede native history"),
        (module_order(list(NATIVE_RULES) + [{"id": "pre", "kind": "dsh.text", "role": "user", "delivery": "pre-step"},
                                      {"id": "ctx", "kind": "dsh.text", "role": "user", "delivery": "context"}]),
         "context snapshots precede post-input pre-step"),
    ],
)
def test_v2_v3_mutations_are_refused_and_the_strategy_is_untouched(strategy, message):
    before = copy.deepcopy(strategy)
    with pytest.raises(AssemblyError) as error:
        run(strategy)
    assert error.value.code == "ASSEMBLY_NATIVE_UNSUPPORTED" and error.value.status == 409
    assert message in str(error.value)
    assert strategy == before
