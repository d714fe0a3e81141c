"""Rules the last dsh oracle cases showed (the dsh oracle): how a core preset-slots layout claims its slots, and what a
strategy document's own placement still decides after a layout replaced it (reference A.2 step 7, A.8 step 7, A.9).

Small data of our own; the expected values follow the reference's text and the library's answers.
"""

import pytest

from assembly import AssemblyError, assemble, normalize_strategy

SLOTS = {"version": 1, "source": "preset-slots", "identity": "preserve", "fallback": "source-order", "overrides": []}


def document(rules, *, backend="core", placement="modules", layout=SLOTS):
    doc = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "fixture", "placement": placement,
           "backend": backend, "rules": rules}
    if layout:
        doc["layout"] = layout
    return doc


def prompt(identifier, content, role="system", **extra):
    return {"identifier": identifier, "name": identifier, "role": role, "content": content, "enabled": True, **extra}


def run(doc, prompts, *, history=("OLD",)):
    return assemble({
        "strategy": doc,
        "resources": {"preset": {"prompts": list(prompts)}},
        "conversation": {"history": [{"id": f"h{i}", "role": "user", "content": t} for i, t in enumerate(history)],
                         "input": [{"id": "i0", "role": "user", "content": "NOW"}]},
        "host": {"core_available": True},
    })


def pairs(result):
    return [(n.role, n.text) for n in result.nodes if n.text]


CUSTOM_FIRST = [{"id": "c0", "kind": "custom", "inputMode": "text", "text": "HEAD{{chatHistory}}TAIL", "role": "system"},
                {"id": "preset", "kind": "preset"}, {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]


@pytest.mark.parametrize("history", [("OLD",), ()])
def test_core_preset_slots_claim_in_rule_order_so_a_custom_slot_ahead_of_the_preset_wins(history):
    # Only adaptive (native) placements let slot owners claim first; a core layout claims in one pass (A.9).
    result = run(document(CUSTOM_FIRST), [prompt("main", "MAIN{{chatHistory}}END")], history=history)
    assert result.placement == "st"
    assert pairs(result) == [("system", "HEAD"), *[("user", t) for t in history], ("user", "NOW"),
                             ("system", "TAIL"), ("system", "MAIN"), ("system", "END")]
    assert sorted((d.code, d.slotId) for d in result.diagnostics) == [
        ("LAYOUT_DUPLICATE_SLOT", "preset:main:4:history"), ("LAYOUT_DUPLICATE_SLOT", "preset:main:4:input")]


def test_native_slot_owners_still_claim_first():
    doc = document(CUSTOM_FIRST, backend="native", placement="native-slots",
                   layout={**SLOTS, "identity": "position"})
    result = run(doc, [prompt("main", "MAIN{{chatHistory}}END")])
    assert [t for _, t in pairs(result)][:4] == ["HEAD", "TAIL", "MAIN", "OLD"]
    assert [d.slotId for d in result.diagnostics if d.code == "LAYOUT_DUPLICATE_SLOT"] == []


# What the document states still counts after its layout replaced the placement --------------------------------------

DEPTH_PRESET = [{"id": "preset", "kind": "preset", "role": "user", "depth": 3},
                {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]
TWO_PROMPTS = [prompt("main", "ONE", role="user"), prompt("p1", "TWO", role="user")]


def test_a_core_document_that_states_modules_keeps_one_message_per_node_when_its_layout_makes_it_st():
    # dsh inserts the depth rule's texts one node each; SillyTavern's in-chat rules (which merge one depth's texts
    # into one message) belong to a document that asks for `st` itself.
    result = run(document(DEPTH_PRESET), TWO_PROMPTS)
    assert result.placement == "st"
    assert [(m.role, m.content) for m in result.request.messages] == [
        ("user", "ONE"), ("user", "TWO"), ("user", "OLD"), ("user", "NOW")]


def test_a_document_that_states_st_follows_sillytavern_and_merges_one_depth_into_one_message():
    result = run(document(DEPTH_PRESET, placement="st"), TWO_PROMPTS)
    assert [(m.role, m.content) for m in result.request.messages] == [
        ("user", "ONE\nTWO"), ("user", "OLD"), ("user", "NOW")]


def test_the_normalized_document_states_st_and_so_follows_sillytavern():
    stored = normalize_strategy(document(DEPTH_PRESET))
    assert stored["placement"] == "st"
    assert [m.content for m in run(stored, TWO_PROMPTS).request.messages][0] == "ONE\nTWO"


@pytest.mark.parametrize(("placement", "text"), [("modules", "KEEP"), ("st", "KEEP{{unknownMacro}}")])
def test_an_unknown_macro_is_kept_only_where_the_document_asks_for_st(placement, text):
    rules = [{"id": "preset", "kind": "preset"}, {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]
    result = run(document(rules, placement=placement), [prompt("main", "KEEP{{unknownMacro}}")])
    assert result.placement == "st"
    assert pairs(result)[0] == ("system", text)
    assert "UNSUPPORTED_MACRO" in {d.code for d in result.diagnostics}


USER_BEFORE_HISTORY = [{"id": "note", "kind": "custom", "inputMode": "text", "text": "NOTE", "role": "user",
                        "delivery": "pre-step"},
                       {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]


def test_a_native_document_that_states_modules_refuses_a_user_text_before_history_even_with_a_layout():
    # The layout makes the placement native-slots, yet the library maps the nodes with its module-order check.
    with pytest.raises(AssemblyError) as refused:
        run(document(USER_BEFORE_HISTORY, backend="native", layout={**SLOTS, "identity": "position"}), [])
    assert refused.value.code == "ASSEMBLY_NATIVE_UNSUPPORTED"
    assert refused.value.status == 409
    assert refused.value.message == "Preserved user-role source content must follow native history."


@pytest.mark.parametrize("placement", ["native-slots", "native-roles"])
def test_a_native_document_that_states_an_adaptive_placement_moves_the_user_text_instead(placement):
    result = run(document(USER_BEFORE_HISTORY, backend="native", placement=placement,
                          layout={**SLOTS, "identity": "position"}), [])
    assert [(n.text, n.region) for n in result.nodes if n.text] == [
        ("OLD", "history"), ("NOTE", "before-input"), ("NOW", "input")]


def test_a_stored_normalized_native_document_answers_as_its_placement_says():
    stored = normalize_strategy(document(USER_BEFORE_HISTORY, backend="native", layout={**SLOTS, "identity": "position"}))
    assert stored["placement"] == "native-slots"
    assert [n.text for n in run(stored, []).nodes if n.text] == ["OLD", "NOTE", "NOW"]
