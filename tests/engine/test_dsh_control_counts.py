"""Placement controls count text blocks as dsh-prompt-assembler counts them (reference A.9 `placementControls`;
the counts of all 158 controls of the dsh oracle): small data of our own."""

from assembly import assemble

RULES = [{"id": kind, "kind": kind}
         for kind in ("native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi")]


def prompt(identifier, content):
    return {"identifier": identifier, "name": identifier, "role": "system", "content": content, "enabled": True}


def counts(prompts, *, sections=(), character=None, persona=None):
    resources = {"preset": {"prompts": prompts}}
    if character:
        resources["character"] = character
    if persona:
        resources["persona"] = persona
    result = assemble({
        "strategy": {"format": "dsh-tavern-request-assembly", "version": 1, "name": "counts", "backend": "native",
                     "placement": "native-roles", "rules": RULES},
        "resources": resources,
        "conversation": {"history": [{"id": "h0", "role": "user", "content": "OLD"}],
                         "input": [{"id": "i0", "role": "user", "content": "NOW"}]},
        "host": {"core_available": True, "official_sections": list(sections)},
    })
    return {c.rule_id: (c.control, c.owned, c.independent) for c in result.placement_controls}


WITH_EVERYTHING = dict(
    sections=[{"name": "host", "text": "HOST"}],
    character={"name": "Ada", "description": "DESC", "post_history_instructions": "CARD PHI"},
    persona={"name": "Sam", "description": "PERSONA"})
PROMPTS = [prompt("main", "ONE {{persona}}"), prompt("p1", "TWO {{persona}}"),
           {"identifier": "chatHistory", "name": "chatHistory", "marker": True, "enabled": True}]


def test_the_official_sections_are_one_independent_block_of_the_native_system_rule():
    assert counts(PROMPTS, **WITH_EVERYTHING)["native-system"] == ("independent", 0, 1)
    assert counts(PROMPTS)["native-system"] == ("empty", 0, 0)


def test_a_slot_owners_own_blocks_count_as_owned_and_as_independent():
    assert counts(PROMPTS, **WITH_EVERYTHING)["preset"] == ("preset", 2, 2)
    assert counts([prompt("main", "ONE")])["preset"] == ("preset", 1, 1)


def test_a_block_taken_in_by_macros_twice_is_owned_once():
    assert counts(PROMPTS, **WITH_EVERYTHING)["persona"] == ("preset", 1, 0)


def test_the_cards_post_history_field_counts_for_the_phi_rule_that_pulls_it_not_for_the_character():
    controls = counts(PROMPTS, **WITH_EVERYTHING)
    assert controls["character"] == ("independent", 0, 1)  # the description alone
    assert controls["phi"] == ("independent", 0, 1)
