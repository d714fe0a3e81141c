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


def test_capabilities_and_availability():
    from assembly.api import capabilities, require_available

    caps = capabilities({"core_available": False})
    assert caps["native"] and not caps["core"] and caps["available"] and caps["defaultBackend"] == "native"
    assert caps["nativeRoles"] == ["system", "user"] and caps["nativeUserDelivery"] == ["context", "pre-step"]
    with pytest.raises(AssemblyError) as error:
        require_available({"rules": [], "name": "legacy"}, {"core_available": False})  # no backend means core
    assert error.value.code == "REQUEST_ASSEMBLY_CORE_REQUIRED"
    with pytest.raises(AssemblyError) as error:
        require_available(module_order(), {"native_available": False})
    assert error.value.code == "ASSEMBLY_NATIVE_UNAVAILABLE" and error.value.status == 409


def test_v6_official_sections_are_filled_from_host_variables():
    result = assemble({"strategy": "builtin-native-slots",
                       "host": {"official_sections": [{"name": "base", "text": "{{provider}}/{{model}} at {{cwd}}"}],
                                "variables": {"provider": "offline", "model": "draft", "cwd": "/tmp"}},
                       "conversation": {"input": [{"id": "n", "role": "user", "content": "NOW"}]}})
    assert result.backend == "native" and "offline/draft at /tmp" in result.request.messages[0].content


def test_a_missing_section_variable_is_409_naming_it():
    with pytest.raises(AssemblyError) as error:
        assemble({"strategy": "builtin-native-slots",
                  "host": {"official_sections": [{"name": "base", "text": "at {{cwd}}"}]},
                  "conversation": {"input": [{"id": "n", "role": "user", "content": "NOW"}]}})
    assert error.value.code == "NATIVE_PREVIEW_VARIABLE_UNAVAILABLE" and "cwd" in str(error.value)


def test_n2_empty_conversation_keeps_its_anchors_and_fabricates_nothing():
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "n2", "backend": "native",
                "placement": "native-roles",
                "rules": [{**r, "delivery": "pre-step"} if r["kind"] == "preset" else dict(r) for r in NATIVE_RULES]}
    result = assemble({"strategy": strategy,
                       "resources": {"preset": {"prompts": [{"identifier": "lead", "role": "user", "content": "LEAD"}]}},
                       "conversation": {"history": [], "input": []}})
    assert [m.content for m in result.request.messages] == ["LEAD"]
    assert [n.module for n in result.nodes] == ["history", "preset", "input"]
    assert result.request.messages[0].region == "before-input"
