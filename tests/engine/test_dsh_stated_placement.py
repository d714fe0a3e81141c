"""Rules the last dsh oracle cases showed (issue 14): how a core preset-slots layout claims its slots, and what a
strategy document's own placement still decides after a layout replaced it (reference A.2 step 7, A.8 step 7, A.9).

Small data of our own; the expected values follow the reference's text and the library's answers.
"""

import pytest

from assembly import assemble

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
