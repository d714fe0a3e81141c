"""assemble() on the reference cases: A.14.7 built-ins, A.14.1 native ordering, A.14.5 positions, A.9 depth.

Expected values are the reference's tables (shared/reference/dsh-prompt-assembler.md A.14), not our output.
"""

import copy

import pytest

from assembly import AssemblyError, assemble, builtin_strategies
from assembly.catalogue import get_builtin_strategy
from assembly.strategy import strategy_revision
from tests.engine.reference_rules import NATIVE_RULES


def prompt(identifier, role, content, **extra):
    return {"identifier": identifier, "name": identifier, "role": role, "content": content, **extra}


def marker(identifier, role="system"):
    return {"identifier": identifier, "name": identifier, "role": role, "content": "", "marker": True}


def request(strategy, prompts, *, lore=(), character=None, history=("OLD",), inputs=("NOW",), core=True, **extra):
    resources = {"preset": {"prompts": list(prompts)}}
    if lore:
        resources["worldbook"] = {"entries": list(lore), "activation": "all"}
    if character:
        resources["character"] = character
    return {
        "strategy": strategy,
        "resources": resources,
        "conversation": {
            "history": [{"id": f"h{i}", "role": "user", "content": t} for i, t in enumerate(history)],
            "input": [{"id": f"i{i}", "role": "user", "content": t} for i, t in enumerate(inputs)],
        },
        "host": {"core_available": core},
        **extra,
    }


def native(placement, *, rules=None, layout=None):
    """The reference's native fixture: NATIVE_RULES (A.13.4) with the given placement."""
    rules = rules or copy.deepcopy(list(NATIVE_RULES))
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "fixture", "backend": "native",
                "placement": placement, "rules": rules}
    if layout:
        strategy["layout"] = layout
    return strategy


def texts_roles(result):
    return [(n.text, n.role) for n in result.nodes]


# A.14.7 -----------------------------------------------------------------------------------------------------------

B_PROMPTS = [prompt("main", "user", "HEAD"), marker("worldInfoBefore"), marker("chatHistory"),
             prompt("jailbreak", "system", "TAIL")]
B_LORE = [{"uid": "w", "content": "LORE", "position": "before", "role": "system"}]


@pytest.mark.parametrize(
    ("strategy_id", "expected"),
    [
        ("builtin-native-slots", [("HEAD", "system"), ("LORE", "system"), ("OLD", "user"), ("NOW", "user"),
                                  ("TAIL", "user")]),
        ("builtin-st", [("HEAD", "user"), ("LORE", "system"), ("OLD", "user"), ("NOW", "user"), ("TAIL", "system")]),
        ("builtin-native-roles", [("LORE", "system"), ("TAIL", "system"), ("OLD", "user"), ("NOW", "user"),
                                  ("HEAD", "user")]),
    ],
)
def test_builtin_catalogue_outputs(strategy_id, expected):
    result = assemble(request(strategy_id, B_PROMPTS, lore=B_LORE))
    assert texts_roles(result) == expected


def test_builtin_ids_are_exactly_three():
    assert sorted(s["id"] for s in builtin_strategies()) == ["builtin-native-roles", "builtin-native-slots",
                                                             "builtin-st"]


def test_builtins_give_pairwise_distinct_outputs_also_under_a_reordered_preset():
    for prompts in (B_PROMPTS, list(reversed(B_PROMPTS))):
        outputs = [tuple(texts_roles(assemble(request(s["id"], prompts, lore=B_LORE)))) for s in builtin_strategies()]
        assert len(set(outputs)) == 3


def test_native_slots_request_puts_system_text_in_one_head_and_tail_as_pre_step():
    result = assemble(request("builtin-native-slots", B_PROMPTS, lore=B_LORE))
    messages = result.request.messages
    assert [(m.role, m.content) for m in messages] == [("system", "HEAD\n\nLORE"), ("user", "OLD"), ("user", "NOW"),
                                                       ("user", "TAIL")]
    assert [m.delivery for m in messages] == ["system", "history", "input", "pre-step"]
    assert messages[-1].region == "after-input" and messages[-1].enters_history


def test_core_request_is_request_only_except_the_conversation():
    result = assemble(request("builtin-st", B_PROMPTS, lore=B_LORE))
    statuses = [(m.content, m.delivery, m.history_status, m.enters_history) for m in result.request.messages]
    assert statuses == [
        ("HEAD", "request", "request-only", False),
        ("LORE", "request", "request-only", False),
        ("OLD", "history", "native", True),
        ("NOW", "input", "appended", True),
        ("TAIL", "request", "request-only", False),
    ]


def test_core_strategy_without_the_advanced_backend_is_409():
    with pytest.raises(AssemblyError) as error:
        assemble(request("builtin-st", B_PROMPTS, core=False))
    assert error.value.code == "REQUEST_ASSEMBLY_CORE_REQUIRED" and error.value.status == 409


def test_slot_targets_are_locked_with_the_owner_and_say_why():
    result = assemble(request("builtin-st", B_PROMPTS, lore=B_LORE))
    lore = next(n for n in result.nodes if n.text == "LORE")
    assert lore.locked and lore.lock_reason == "reference:preset" and lore.position_decision == "preset"
    old = next(n for n in result.nodes if n.text == "OLD")
    assert old.locked and old.lock_reason == "runtime" and old.position_decision == "runtime"
    head = next(n for n in result.nodes if n.text == "HEAD")
    assert not head.locked and head.position_decision == "source"


def test_inputs_are_not_mutated():
    req = request("builtin-native-slots", B_PROMPTS, lore=B_LORE)
    before = copy.deepcopy(req)
    assemble(req)
    assert req == before


# A.14.1 native ordering --------------------------------------------------------------------------------------------


def test_n1_roles_first_item_roles_win_over_the_module_role():
    prompts = [prompt("lead", "user", "LEAD"), prompt("sys", "system", "SYS"), marker("chatHistory"),
               marker("charDescription", "user"), prompt("jailbreak", "user", "TAIL")]
    result = assemble(request(native("native-roles"), prompts, character={"name": "C", "description": "CHAR"}))
    assert texts_roles(result) == [("SYS", "system"), ("OLD", "user"), ("NOW", "user"), ("LEAD", "user"),
                                   ("CHAR", "user"), ("TAIL", "user")]
    lead = next(n for n in result.nodes if n.text == "LEAD")
    assert lead.delivery == "context"


def test_n3_roles_first_rejects_an_assistant_entry_by_name():
    with pytest.raises(AssemblyError) as error:
        assemble(request(native("native-roles"), [prompt("Assistant entry", "assistant", "A")]))
    assert error.value.code == "ASSEMBLY_NATIVE_UNSUPPORTED" and "Assistant entry" in str(error.value)


def test_n4_depth_is_approximated_in_native():
    prompts = [prompt("Depth entry", "system", "D", injection_position=1, injection_depth=2)]
    result = assemble(request(native("native-roles"), prompts))
    assert [n.text for n in result.nodes] == ["D", "OLD", "NOW"]
    diag = [d.details for d in result.diagnostics if d.code == "NATIVE_DEPTH_APPROXIMATED"]
    assert diag and diag[0]["name"] == "Depth entry" and diag[0]["depth"] == 2


def test_n5_slots_adjust_roles_around_history():
    prompts = [prompt("open", "user", "OPEN"), marker("chatHistory"), prompt("close", "system", "CLOSE")]
    result = assemble(request(native("native-slots"), prompts))
    assert texts_roles(result) == [("OPEN", "system"), ("OLD", "user"), ("NOW", "user"), ("CLOSE", "user")]
    adjusted = [(d.details["name"], d.details["from"], d.details["to"]) for d in result.diagnostics
                if d.code == "NATIVE_ROLE_ADJUSTED"]
    assert adjusted == [("open", "user", "system"), ("close", "system", "user")]


@pytest.mark.parametrize(
    ("history", "inputs", "expected"),
    [(("OLD",), ("NOW",), ["START", "OLD", "MIDDLE", "NOW", "END"]), ((), (), ["START", "MIDDLE", "END"])],
)
def test_n6_a_wrapper_prompt_splits_around_history_and_input(history, inputs, expected):
    prompts = [prompt("wrapper", "user", "START{{history}}MIDDLE{{input}}END")]
    result = assemble(request(native("native-slots"), prompts, history=history, inputs=inputs))
    assert [m.content for m in result.request.messages] == expected
    middle = next(m for m in result.request.messages if m.content == "MIDDLE")
    end = next(m for m in result.request.messages if m.content == "END")
    assert middle.region == "before-input" and end.region == "after-input"


@pytest.mark.parametrize(
    ("content", "expected"),
    [("BEFORE{{input}}AFTER", ["OLD", "BEFORE", "NOW", "AFTER"]),
     ("BEFORE{{history}}AFTER", ["BEFORE", "OLD", "AFTER", "NOW"])],
)
def test_n7_n8_single_slots(content, expected):
    result = assemble(request(native("native-slots"), [prompt("p", "user", content)]))
    assert [n.text for n in result.nodes] == expected


def test_n9_input_before_history_is_refused():
    with pytest.raises(AssemblyError, match="input precedes history"):
        assemble(request(native("native-slots"), [prompt("p", "user", "{{input}}{{history}}")]))


def test_n10_no_slots_falls_back_to_roles_first():
    prompts = [prompt("prefix", "user", "USER"), prompt("suffix", "system", "SYSTEM")]
    result = assemble(request(native("native-slots"), prompts))
    assert [n.text for n in result.nodes] == ["SYSTEM", "OLD", "NOW", "USER"]
    assert any(d.code == "NATIVE_SLOTS_ABSENT" for d in result.diagnostics)


def test_n11_repeated_slots_expand_once():
    result = assemble(request(native("native-slots"), [prompt("p", "user", "A{{chatHistory}}B{{chatHistory}}C")]))
    assert [n.text for n in result.nodes] == ["A", "OLD", "NOW", "B", "C"]


def test_n12_disabled_preset_rule():
    strategy = native("native-slots")
    strategy["rules"][1]["enabled"] = False
    result = assemble(request(strategy, [prompt("p", "user", "A{{chatHistory}}B")]))
    assert [n.text for n in result.nodes] == ["OLD", "NOW"]


# A.9 depth insertion (core) ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        (0, ["HEAD", "A", "B", "C", "D"]),  # depth 0: after everything so far
        (1, ["HEAD", "A", "B", "D", "C"]),  # before the last conversation message
        (2, ["HEAD", "A", "D", "B", "C"]),
        (9, ["HEAD", "D", "A", "B", "C"]),  # deeper than the chat: before the earliest message
    ],
)
def test_depth_counts_conversation_messages_from_the_end(depth, expected):
    prompts = [prompt("main", "system", "HEAD"), marker("chatHistory"),
               prompt("deep", "system", "D", injection_position=1, injection_depth=depth)]
    result = assemble(request("builtin-st", prompts, history=("A", "B"), inputs=("C",)))
    assert [m.content for m in result.request.messages] == expected
    deep = next(n for n in result.nodes if n.text == "D")
    assert deep.locked and deep.lock_reason == "depth" and deep.depth == depth


def test_depth_never_splits_a_tool_call_from_its_result():
    req = request("builtin-st", [marker("chatHistory"), prompt("deep", "system", "D", injection_position=1,
                                                                   injection_depth=2)], history=(), inputs=("Q",))
    req["conversation"]["history"] = [
        {"id": "u", "role": "user", "content": "weather?"},
        {"id": "a", "role": "assistant", "content": "", "tool_calls": [{"id": "call1"}]},
        {"id": "t", "role": "tool", "content": "sunny", "tool_call_id": "call1"},
    ]
    result = assemble(req)
    contents = [m.content for m in result.request.messages]
    # depth 2 asks for "before the tool result"; the transaction pushes it after the result
    assert contents == ["weather?", "", "sunny", "D", "Q"]
    assert next(n for n in result.nodes if n.text == "D").adjusted_for_tools


def test_tokens_are_counted_per_message_and_module():
    result = assemble(request("builtin-st", B_PROMPTS, lore=B_LORE))
    # o200k_base: HEAD, OLD, NOW, TAIL are one token each; LORE is two ("LO" "RE")
    assert [m.tokens for m in result.request.messages] == [1, 2, 1, 1, 1]
    assert result.tokens.total == 6
    assert result.tokens.by_module == {"preset": 2, "worldbook": 2, "history": 1, "input": 1}


def test_unknown_builtin_is_an_error_naming_it():
    with pytest.raises(AssemblyError, match="builtin-nope"):
        assemble(request("builtin-nope", B_PROMPTS))


def test_bad_request_names_the_field():
    with pytest.raises(AssemblyError) as error:
        assemble({"strategy": "builtin-st", "conversation": {"history": [{"role": "robot", "content": "x"}]},
                  "host": {"core_available": True}})
    assert error.value.code == "ASSEMBLY_REQUEST_INVALID" and "conversation.history.0.role" in str(error.value)


def test_oversize_text_is_413():
    big = "x" * (2 * 1024 * 1024 + 1)
    with pytest.raises(AssemblyError) as error:
        assemble(request("builtin-st", [prompt("main", "system", big)]))
    assert error.value.status == 413


# engine.md §8 budget -------------------------------------------------------------------------------------------------


def budget_request(apply):
    prompts = [prompt("main", "system", "HEAD"), marker("worldInfoBefore"), marker("worldInfoAfter"),
               marker("chatHistory")]
    lore = [{"uid": "w1", "content": "LORE", "position": "before", "order": 5},
            {"uid": "w2", "content": "TAIL", "position": "after", "order": 1}]
    # o200k_base token counts: HEAD 1, LORE 2, TAIL 1, OLD 1, NOW 1
    return request("builtin-st", prompts, lore=lore, history=("OLD", "HEAD"), inputs=("NOW",),
                   budget={"context_window": 6, "reserve_output": 1, "apply": apply})


def test_budget_plan_drops_oldest_history_first_and_never_the_input():
    result = assemble(budget_request(apply=False))
    # messages HEAD 1, LORE 2, TAIL 1, OLD 1, HEAD 1, NOW 1 -> total 7; limit 6 - 1 = 5; over by 2.
    # Fixed: main HEAD + input NOW = 2, leaving 3 for the rest; world book outranks history, so both history
    # messages (1 + 1 = the 2 tokens over) are planned for eviction, oldest first.
    assert (result.budget.limit, result.budget.total, result.budget.over_by) == (5, 7, 2)
    dropped = [d.id for d in result.budget.eviction_plan]
    assert dropped == ["history:h0", "history:h1"]
    assert all(not d.id.startswith("input") for d in result.budget.eviction_plan)
    assert any(d.code == "CONTEXT_BUDGET_EXCEEDED" for d in result.diagnostics)
    assert len(result.request.messages) == 6  # a plan only


def test_budget_apply_removes_the_planned_messages():
    result = assemble(budget_request(apply=True))
    planned = {d.id for d in result.budget.eviction_plan}
    assert planned and not planned & {n.id for n in result.nodes}
    assert result.tokens.total <= result.budget.limit


# A.9 step 5: retained snapshots (core, lifetime "snapshot") ---------------------------------------------------------


def snapshot_strategy():
    rules = [{"id": k, "kind": k} for k in ("native-system", "preset", "character", "history", "input")]
    rules.insert(2, {"id": "lore", "kind": "worldbook", "lifetime": "snapshot"})
    return {"format": "dsh-tavern-request-assembly", "version": 1, "name": "snapshots", "placement": "modules",
            "rules": rules}


def test_a_snapshot_is_recorded_once_then_reused_then_emptied():
    lore = [{"uid": "w", "content": "LORE", "position": "before"}]
    first = assemble(request(snapshot_strategy(), [prompt("main", "system", "HEAD")], lore=lore))
    snap = next(m for m in first.request.messages if m.content == "LORE")
    assert (snap.delivery, snap.history_status, snap.enters_history) == ("snapshot", "snapshot", True)
    event = next(e for e in first.durable_events if e.content == "LORE")
    assert event.kind == "assembly-snapshot"

    # next turn: the recorded snapshot is part of durable history; unchanged content is not sent again
    second_req = request(snapshot_strategy(), [prompt("main", "system", "HEAD")], lore=lore)
    second_req["conversation"]["history"].append(event.model_dump())
    second = assemble(second_req)
    assert [m.content for m in second.request.messages].count("LORE") == 1
    assert next(m for m in second.request.messages if m.content == "LORE").history_status == "native"

    # the entry is gone: an "empty" record supersedes the old snapshot
    third_req = request(snapshot_strategy(), [prompt("main", "system", "HEAD")], lore=[])
    third_req["conversation"]["history"].append(event.model_dump())
    third = assemble(third_req)
    empty = [m for m in third.request.messages if m.history_status == "snapshot"]
    assert len(empty) == 1 and "Current context is empty for entry w." in empty[0].content


def test_host_runtime_contexts_alone_make_one_snapshot_after_the_input():
    req = request("builtin-native-slots", [marker("chatHistory")])
    req["host"]["contexts"] = [{"name": "sandbox:policy", "text": "S"}]
    messages = assemble(req).request.messages
    assert messages[-1].delivery == "context" and messages[-1].region == "after-input"
    assert messages[-1].content == ("Current runtime context. This snapshot supersedes earlier runtime-context "
                                    "snapshots.\n\nS")


def test_bad_resources_name_the_path():
    req = request("builtin-st", [{"identifier": "main", "role": "robot", "content": "x"}])
    with pytest.raises(AssemblyError) as error:
        assemble(req)
    assert error.value.code == "IMPORT_INVALID" and error.value.status == 400
    assert str(error.value).startswith("resources.preset.prompts[0].role: expected")


@pytest.mark.parametrize("strategy_id", ["builtin-st", "builtin-native-slots"])
def test_tool_calls_and_results_reach_the_request_unchanged(strategy_id):
    req = request(strategy_id, [marker("chatHistory")], history=(), inputs=("Q",))
    req["conversation"]["history"] = [
        {"id": "a", "role": "assistant", "content": "", "tool_calls": [{"id": "call1", "type": "function"}]},
        {"id": "t", "role": "tool", "content": "sunny", "tool_call_id": "call1"},
    ]
    messages = {m.id: m for m in assemble(req).request.messages}
    assert messages["a"].tool_calls == [{"id": "call1", "type": "function"}]
    assert messages["t"].tool_call_id == "call1" and messages["t"].role == "tool"


def test_keyword_activation_explains_every_entry_through_assemble():
    lore = [{"uid": 1, "content": "The gate is closed at night.", "position": "before", "keys": ["gate"]},
            {"uid": 2, "content": "Dragons sleep in winter.", "position": "before", "keys": ["dragon"]},
            {"uid": 3, "content": "Always true.", "position": "after", "constant": True}]
    req = request("builtin-st", [prompt("main", "system", "HEAD"), marker("worldInfoBefore"),
                                 marker("worldInfoAfter"), marker("chatHistory")], lore=lore,
                  history=("We reach the gate.",), inputs=("What now?",))
    req["resources"]["worldbook"]["activation"] = "keywords"
    result = assemble(req)
    contents = [m.content for m in result.request.messages]
    assert "The gate is closed at night." in contents and "Always true." in contents
    assert "Dragons sleep in winter." not in contents
    active = {e.uid: e.reason.kind for e in result.world_info.active}
    skipped = {e.uid: e.reason.kind for e in result.world_info.skipped}
    assert active == {1: "key", 3: "constant"} and skipped == {2: "no_match"}
    gate = next(n for n in result.nodes if n.text == "The gate is closed at night.")
    assert gate.activation and "gate" in gate.activation


def test_two_custom_rules_both_send_their_text():
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "two customs", "placement": "modules",
                "rules": [{"id": "intro", "kind": "custom", "role": "system", "text": "FIRST"},
                          {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"},
                          {"id": "outro", "kind": "custom", "role": "system", "text": "SECOND"}]}
    result = assemble({"strategy": strategy, "host": {"core_available": True},
                       "conversation": {"input": [{"id": "n", "role": "user", "content": "NOW"}]}})
    assert [m.content for m in result.request.messages] == ["FIRST", "NOW", "SECOND"]


def test_an_author_note_that_allows_scanning_activates_world_info():
    lore = [{"uid": 1, "content": "The moon is red.", "position": "before", "keys": ["moon"]}]
    req = request("builtin-st", [marker("worldInfoBefore"), marker("chatHistory")], lore=lore, history=(),
                  inputs=("Hello",))
    req["resources"]["worldbook"]["activation"] = "keywords"
    assert "The moon is red." not in [m.content for m in assemble(req).request.messages]
    req["resources"]["author_note"] = {"content": "Mention the moon.", "allow_wi_scan": True}
    assert "The moon is red." in [m.content for m in assemble(req).request.messages]


def test_a_second_rule_for_one_source_is_refused_by_name():
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "twice", "placement": "modules",
                "rules": [{"id": "p1", "kind": "persona"}, {"id": "p2", "kind": "persona"},
                          {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]}
    with pytest.raises(AssemblyError) as error:
        assemble({"strategy": strategy, "host": {"core_available": True}})
    assert error.value.code == "ASSEMBLY_DUPLICATE_SOURCE_RULE" and "p2" in str(error.value)


@pytest.mark.parametrize(("rule", "asked"), [
    # reference A.10.1: native-system, history and input take role preserve, lifetime request and no depth
    ({"id": "history", "kind": "history", "role": "system"}, "role 'system'"),
    ({"id": "history", "kind": "history", "depth": 3}, "depth 3"),
    ({"id": "history", "kind": "history", "lifetime": "snapshot"}, "lifetime 'snapshot'"),
    ({"id": "native-system", "kind": "native-system", "role": "user"}, "role 'user'"),
])
def test_host_rules_that_ask_for_what_the_host_cannot_do_are_refused(rule, asked):
    rules = [{"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]
    rules = [rule] + [r for r in rules if r["id"] != rule["id"]]
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "host", "rules": rules}
    with pytest.raises(AssemblyError) as error:
        assemble({"strategy": strategy, "host": {"core_available": True}})
    assert error.value.code == "ASSEMBLY_RULE_UNSUPPORTED"
    assert f"Unsupported rule settings for {rule['kind']}: {asked}" in str(error.value)
    # the same rule switched off is not checked: it sends nothing
    assemble({"strategy": {**strategy, "rules": [{**r, "enabled": False} if r is rule else r for r in rules]},
              "host": {"core_available": True}})


# --- the strategy is normalized once per call -----------------------------------------------------------------------


def counted_normalizations(monkeypatch):
    from assembly import catalogue, strategy

    calls = []
    real = strategy.normalize_strategy

    def counting(document):
        calls.append(document)
        return real(document)

    # every module of the engine that holds the name
    monkeypatch.setattr(strategy, "normalize_strategy", counting)
    monkeypatch.setattr(catalogue, "normalize_strategy", counting)
    return calls


def test_a_strategy_document_is_normalized_once_per_assemble(monkeypatch):
    stored = {**builtin_strategies()[2], "id": "stored-draft"}  # normalized, with the id a store attaches
    calls = counted_normalizations(monkeypatch)
    result = assemble(request(stored, [prompt("main", "system", "MAIN")]))
    assert len(calls) == 1
    assert result.strategy.id == "stored-draft"
    assert result.strategy.revision == strategy_revision(stored)


def test_a_builtin_is_not_normalized_again(monkeypatch):
    calls = counted_normalizations(monkeypatch)
    result = assemble(request("builtin-native-slots", [prompt("main", "system", "MAIN")]))
    assert calls == []
    assert result.strategy.revision == strategy_revision(get_builtin_strategy("builtin-native-slots"))
