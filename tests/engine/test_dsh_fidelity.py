"""Rules of dsh-prompt-assembler that its own answers showed (the dsh oracle), each on small data of our own.

Expected values follow the reference's reading (shared/reference/dsh-prompt-assembler.md) and the library's answers.
"""

from assembly import AssemblyError, assemble


def rule(kind, **extra):
    return {"id": extra.pop("id", kind), "kind": kind, **extra}


def strategy(rules, *, backend="native", placement="native-roles", layout=None):
    doc = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "fixture", "placement": placement,
           "rules": rules}
    if backend:
        doc["backend"] = backend
    if layout:
        doc["layout"] = layout
    return doc


def text(identifier, role, content, **extra):
    return {"identifier": identifier, "name": identifier, "role": role, "content": content, "enabled": True, **extra}


def marker(identifier, role="system"):
    return {"identifier": identifier, "name": identifier, "role": role, "content": "", "marker": True,
            "enabled": True}


def lore(uid, content, position, **extra):
    return {"uid": uid, "comment": uid, "content": content, "position": position, "enabled": True, **extra}


def run(doc, prompts=(), *, entries=(), character=None, persona=None, history=("OLD",), inputs=("NOW",),
        sections=(), contexts=()):
    resources = {"preset": {"prompts": list(prompts)}}
    if entries:
        resources["worldbook"] = {"entries": list(entries), "activation": "all"}
    if character:
        resources["character"] = character
    if persona:
        resources["persona"] = persona
    return assemble({
        "strategy": doc,
        "resources": resources,
        "conversation": {
            "history": [{"id": f"h{i}", "role": "user", "content": t} for i, t in enumerate(history)],
            "input": [{"id": f"i{i}", "role": "user", "content": t} for i, t in enumerate(inputs)],
        },
        "host": {"core_available": True, "official_sections": list(sections), "contexts": list(contexts)},
    })


def codes(result):
    return sorted(d.code for d in result.diagnostics)


def texts(result):
    return [n.text for n in result.nodes if n.text]


NATIVE_BASE = [rule("native-system"), rule("preset", role="system"), rule("worldbook", role="system"),
               rule("history"), rule("input")]


# world-book slots (reference A.12) -------------------------------------------------------------------------------


def test_slot_positions_outside_slot_layouts_fall_back_quietly():
    doc = strategy([rule("preset", role="system"), rule("worldbook", role="system"), rule("history"),
                    rule("input")], backend=None, placement="modules")
    result = run(doc, [text("lead", "system", "LEAD")], entries=[lore("a", "NOTE-LORE", "before_author_note")])
    assert "WORLD_BOOK_SLOT_MISSING" not in codes(result)
    assert "NOTE-LORE" in texts(result)


def test_slot_positions_without_their_prompt_are_reported_in_adaptive_placements():
    result = run(strategy(NATIVE_BASE), [text("lead", "system", "LEAD")],
                 entries=[lore("a", "EX-LORE", "after_example_messages")])
    assert codes(result).count("WORLD_BOOK_SLOT_MISSING") == 1


def test_a_plain_author_note_prompt_is_the_author_note_anchor():
    doc = strategy(NATIVE_BASE, placement="native-slots")
    prompts = [marker("chatHistory"), text("authorNote", "user", "NOTE")]
    result = run(doc, prompts, entries=[lore("a", "BEFORE-NOTE", "before_author_note"),
                                        lore("b", "AFTER-NOTE", "after_author_note")])
    assert "WORLD_BOOK_SLOT_MISSING" not in codes(result)
    assert texts(result)[-3:] == ["BEFORE-NOTE", "NOTE", "AFTER-NOTE"]


def test_a_note_prompt_this_generation_type_does_not_send_is_no_anchor():
    doc = strategy(NATIVE_BASE, placement="native-slots")
    prompts = [marker("chatHistory"), text("authorNote", "user", "NOTE", injection_trigger=["normal"])]

    def blocks_for(generation_type):
        result = assemble({
            "strategy": doc, "generation": {"type": generation_type},
            "resources": {"preset": {"prompts": prompts},
                          "worldbook": {"entries": [lore("a", "BEFORE-NOTE", "before_author_note")],
                                        "activation": "all"}},
            "conversation": {"history": [{"id": "h0", "role": "user", "content": "OLD"}],
                             "input": [{"id": "i0", "role": "user", "content": "NOW"}]},
            "host": {"core_available": True}})
        return codes(result), [b.key[2] for b in result.layout.blocks if b.key[0] == "worldbook"]

    assert blocks_for("normal") == ([], ["before_author_note"])
    # a continue sends no note prompt: the entry joins `after` and says its slot is missing
    assert blocks_for("continue") == (["NATIVE_PLACEMENT_ADJUSTED", "WORLD_BOOK_SLOT_MISSING"], ["after"])


def test_a_disabled_book_still_reports_missing_slots_when_the_preset_reads_it():
    rules = [rule("native-system"), rule("preset", role="system"), rule("worldbook", enabled=False),
             rule("history"), rule("input")]
    entries = [lore("a", "EX-LORE", "before_example_messages")]
    assert codes(run(strategy(rules), [text("lead", "system", "LEAD")], entries=entries)) == [
        "WORLD_BOOK_SLOT_MISSING"]
    rules[1]["enabled"] = False  # nothing reads the book any more
    assert "WORLD_BOOK_SLOT_MISSING" not in codes(run(strategy(rules), [text("lead", "system", "LEAD")],
                                                      entries=entries))


# repeated slots (reference A.9) ----------------------------------------------------------------------------------


def test_a_slot_used_twice_expands_once_and_says_so():
    result = run(strategy(NATIVE_BASE, placement="native-slots"),
                 [text("frame", "user", "A{{chatHistory}}B{{chatHistory}}C")])
    assert texts(result) == ["A", "OLD", "NOW", "B", "C"]
    assert codes(result).count("LAYOUT_DUPLICATE_SLOT") == 2  # {{chatHistory}} is two slots: history and input


def test_a_slot_whose_targets_another_source_placed_is_a_repeat():
    # the preset's marker takes the world info first (slot owners claim first); the custom text's slot comes later
    rules = NATIVE_BASE[:2] + [rule("custom", id="late", inputMode="text", text="X{{worldInfoAfter}}Y",
                                    role="system")] + NATIVE_BASE[2:]
    result = run(strategy(rules), [marker("worldInfoAfter")], entries=[lore("a", "LATE-LORE", "after")])
    assert codes(result).count("LAYOUT_DUPLICATE_SLOT") == 1
    assert texts(result).count("LATE-LORE") == 1


# native module order (reference A.8 step 7) ----------------------------------------------------------------------


def test_preserved_user_text_before_history_is_refused_in_module_order():
    rules = [rule("native-system"), rule("worldbook", role="preserve"), rule("history"), rule("input")]
    doc = strategy(rules, placement="modules")
    try:
        run(doc, entries=[lore("a", "USER-LORE", "before", role="user")])
    except AssemblyError as exc:
        assert (exc.code, exc.status) == ("ASSEMBLY_NATIVE_UNSUPPORTED", 409)
        assert "Preserved user-role source content must follow native history." in exc.message
    else:
        raise AssertionError("expected a refusal")
    # the same entry as system text is fine
    assert "USER-LORE" in texts(run(doc, entries=[lore("a", "USER-LORE", "before", role="system")]))


def test_the_jailbreak_takes_the_phi_rule_place_and_delivery_in_module_order():
    rules = [rule("native-system"), rule("preset", role="system", delivery="pre-step"), rule("history"),
             rule("input"), rule("phi", role="user", delivery="context")]
    result = run(strategy(rules, placement="modules"), [text("main", "system", "MAIN"),
                                                        text("jailbreak", "user", "JB")])
    jailbreak = next(n for n in result.nodes if n.text == "JB")
    assert (jailbreak.role, jailbreak.region, jailbreak.delivery) == ("user", "after-input", "context")


# core: the host's system prompt, the preset's lifetime (reference A.9 step 6, A.10) ----------------------------


def test_core_refuses_to_put_the_host_system_prompt_after_the_conversation():
    rules = [rule("preset", role="system"), rule("history"), rule("input"), rule("native-system")]
    try:
        run(strategy(rules, backend="core", placement="modules"), [text("main", "system", "MAIN")],
            sections=[{"name": "head", "text": "OFFICIAL"}])
    except AssemblyError as exc:
        assert (exc.code, exc.status) == ("ASSEMBLY_NATIVE_SYSTEM_ORDER", 409)
    else:
        raise AssertionError("expected a refusal")
    # without official text there is no host system message to move
    run(strategy(rules, backend="core", placement="modules"), [text("main", "system", "MAIN")])


def test_a_preset_rule_cannot_be_a_retained_snapshot():
    rules = [rule("native-system"), rule("preset", role="system", lifetime="snapshot"), rule("history"),
             rule("input")]
    try:
        run(strategy(rules, backend="core", placement="modules"), [text("main", "system", "MAIN")])
    except AssemblyError as exc:
        assert "Unsupported rule settings for preset" in exc.message
    else:
        raise AssertionError("expected a refusal")


# text: slot macros in in-chat prompts, unknown macros (reference A.12) -------------------------------------------


def test_slot_macros_split_an_in_chat_prompt_outside_st():
    rules = [rule("preset", role="system"), rule("worldbook", role="system"), rule("history"), rule("input")]
    prompts = [text("deep", "system", "TOP{{worldInfoBefore}}BOTTOM", injection_position=1, injection_depth=2)]
    result = run(strategy(rules, backend="core", placement="modules"), prompts, entries=[lore("a", "LORE", "before")],
                 history=("A", "B"))
    # module order: the listed book keeps its own place, and the preset's rule (no depth) places the pieces
    assert texts(result) == ["TOP", "BOTTOM", "LORE", "A", "B", "NOW"]
    assert "UNSUPPORTED_MACRO" not in codes(result)


def test_module_order_places_blocks_at_the_rule_depth_not_their_own():
    rules = [rule("worldbook", role="system"), rule("history"), rule("input")]
    entries = [lore("a", "DEEP", "at_depth", depth=1)]
    doc = strategy(rules, backend="core", placement="modules")
    assert texts(run(doc, entries=entries, history=("A", "B"))) == ["DEEP", "A", "B", "NOW"]
    rules[0]["depth"] = 2
    assert texts(run(doc, entries=entries, history=("A", "B"))) == ["A", "DEEP", "B", "NOW"]


def test_unknown_macros_render_empty_outside_st_and_are_reported():
    rules = [rule("preset", role="system"), rule("history"), rule("input")]
    result = run(strategy(rules, backend="core", placement="modules"), [text("main", "system", "A{{nosuch}}B")])
    assert texts(result)[0] == "AB"
    assert codes(result) == ["UNSUPPORTED_MACRO"]


def test_the_card_system_prompt_stands_on_its_own_unless_main_consumes_it():
    rules = [rule("native-system"), rule("preset", role="system"), rule("character", role="system"),
             rule("history"), rule("input")]
    card = {"name": "Card", "description": "DESC", "system_prompt": "CARD-SYSTEM"}
    alone = run(strategy(rules), [text("lead", "system", "LEAD")], character=card)
    assert texts(alone)[:3] == ["LEAD", "DESC", "CARD-SYSTEM"]
    consumed = run(strategy(rules), [text("main", "system", "MAIN")], character=card)
    assert texts(consumed).count("CARD-SYSTEM") == 1 and "MAIN" not in texts(consumed)


def test_a_pulled_block_takes_its_role_from_the_rule_that_places_it():
    # the phi rule (preserve) pulls the card's post-history instructions: they keep their own role, system
    rules = [rule("character", role="user"), rule("history"), rule("input"), rule("phi")]
    card = {"name": "Card", "description": "DESC", "post_history_instructions": "AFTER-ALL"}
    result = run(strategy(rules, backend="core", placement="modules"), character=card)
    assert [(n.text, n.role) for n in result.nodes if n.text in ("DESC", "AFTER-ALL")] == [
        ("DESC", "user"), ("AFTER-ALL", "system")]


# resource macros and markers (reference A.9, A.12) ---------------------------------------------------------------


def test_a_macro_expands_wherever_it_is_written_even_after_a_marker_took_the_block():
    rules = NATIVE_BASE[:2] + [rule("persona", role="system"),
                               rule("custom", id="note", inputMode="text", text="<{{persona}}>", role="system")]
    rules += NATIVE_BASE[2:]
    result = run(strategy(rules), [marker("personaDescription")], persona={"name": "P", "description": "ME"})
    assert texts(result)[:2] == ["ME", "<ME>"]


def test_module_order_gives_no_macro_text_from_a_listed_source_even_disabled():
    rules = [rule("persona", enabled=False), rule("preset", role="system"), rule("history"), rule("input")]
    result = run(strategy(rules, backend="core", placement="modules"), [text("main", "system", "[{{persona}}]")],
                 persona={"name": "P", "description": "ME"})
    assert texts(result)[0] == "[]"


def test_a_persona_marker_pulls_the_persona_although_its_rule_is_off():
    rules = NATIVE_BASE[:2] + [rule("persona", enabled=False)] + NATIVE_BASE[2:]
    result = run(strategy(rules), [marker("personaDescription")], persona={"name": "P", "description": "ME"})
    assert "ME" in texts(result)


def test_official_sections_stand_at_the_native_system_rule_place():
    rules = [rule("custom", id="first", inputMode="text", text="FIRST", role="system"), rule("native-system"),
             rule("preset", role="system"), rule("history"), rule("input")]
    result = run(strategy(rules, placement="modules"), [text("main", "system", "MAIN")],
                 sections=[{"name": "head", "text": "OFFICIAL"}])
    assert result.request.messages[0].content == "FIRST\n\nOFFICIAL\n\nMAIN"


# placement controls (reference A.9 item 8) -----------------------------------------------------------------------


def test_placement_controls_list_every_rule_and_count_what_a_slot_owner_holds():
    rules = [rule("dsh.runtime-context", id="context"), rule("native-system"), rule("preset", role="system"),
             rule("persona", enabled=False), rule("character", role="system"), rule("history"), rule("input"),
             rule("phi", role="user", delivery="pre-step")]
    card = {"name": "Card", "description": "DESC", "personality": "MOOD"}
    result = run(strategy(rules, placement="native-slots"), [text("main", "system", "A {{personality}} B"),
                                                             marker("chatHistory"), marker("charDescription")],
                 character=card, sections=[{"name": "head", "text": "OFFICIAL"}])
    assert [(c.rule_id, c.control) for c in result.placement_controls] == [
        ("context", "empty"), ("native-system", "independent"), ("preset", "preset"),
        ("persona", "empty"), ("character", "preset"), ("history", "native"), ("input", "native"),
        ("phi", "empty")]
    without_sections = run(strategy(rules, placement="native-slots"), [marker("chatHistory")], character=card)
    assert dict((c.rule_id, c.control) for c in without_sections.placement_controls)["native-system"] == "empty"


def test_in_native_slots_lore_a_slot_pulls_takes_the_slot_role_and_place():
    prompts = [marker("chatHistory"), text("after", "user", "AFTER"), marker("worldInfoAfter", role="user")]
    result = run(strategy(NATIVE_BASE, placement="native-slots"), prompts,
                 entries=[lore("a", "LORE", "after", role="system")])
    assert [(n.text, n.role, n.region) for n in result.nodes if n.text in ("AFTER", "LORE")] == [
        ("AFTER", "user", "after-input"), ("LORE", "user", "after-input")]


def test_the_phi_rule_reads_the_card_even_when_the_character_rule_is_off():
    rules = [rule("native-system"), rule("character", enabled=False), rule("history"), rule("input"), rule("phi")]
    card = {"name": "Card", "description": "DESC", "post_history_instructions": "LAST"}
    result = run(strategy(rules), character=card)
    assert "LAST" in texts(result) and "DESC" not in texts(result)
    controls = {c.rule_id: c.control for c in result.placement_controls}
    assert (controls["character"], controls["phi"]) == ("empty", "independent")


def test_only_a_slot_owner_makes_a_slot_in_native_slots():
    # the phi reference is no slot owner: what it pulls is independent and keeps the card's place and role
    rules = [rule("native-system"), rule("preset", role="system"), rule("character", role="system"),
             rule("history"), rule("input"), rule("phi")]
    card = {"name": "Card", "description": "DESC", "post_history_instructions": "LAST"}
    result = run(strategy(rules, placement="native-slots"), [marker("chatHistory")], character=card)
    last = next(n for n in result.nodes if n.text == "LAST")
    assert (last.role, last.region) == ("system", "system")


def test_an_in_chat_jailbreak_takes_the_phi_rule_depth_and_role_in_module_order():
    rules = [rule("preset", role="system"), rule("history"), rule("input"), rule("phi", role="system", depth=1)]
    prompts = [text("main", "system", "MAIN"), text("jailbreak", "user", "JB", injection_position=1,
                                                  injection_depth=0)]
    result = run(strategy(rules, backend="core", placement="modules"), prompts, history=("A",))
    assert [(n.text, n.role) for n in result.nodes] == [("MAIN", "system"), ("A", "user"), ("JB", "system"),
                                                          ("NOW", "user")]


def test_a_jailbreak_that_takes_the_card_instructions_keeps_them_from_the_phi_rule():
    # the phi rule comes first, yet the jailbreak's explicit claim on the card field goes before its reference
    rules = [rule("phi"), rule("preset", role="system"), rule("character", role="system"), rule("history"),
             rule("input")]
    card = {"name": "Card", "description": "DESC", "post_history_instructions": "CARD-{{original}}"}
    result = run(strategy(rules, backend="core", placement="modules"), [text("jailbreak", "system", "JB")],
                 character=card)
    assert texts(result).count("CARD-JB") == 1 and not any(t.startswith("CARD-{{") for t in texts(result))


def test_lore_in_a_preset_slot_keeps_its_own_rule_delivery_a_card_field_takes_the_marker_rule():
    rules = [rule("native-system"), rule("preset", role="user", delivery="pre-step"), rule("character", role="user"),
             rule("history"), rule("input"), rule("worldbook", role="user", delivery="context")]
    prompts = [text("lead", "user", "A{{worldInfoAfter}}B"), marker("scenario", role="user"), marker("chatHistory")]
    result = run(strategy(rules), prompts, entries=[lore("a", "LORE", "after", role="user")],
                 character={"name": "Card", "scenario": "PLACE"})
    got = {n.text: (n.region, n.delivery) for n in result.nodes if n.text in ("LORE", "PLACE")}
    assert got == {"LORE": ("after-input", "context"), "PLACE": ("before-input", "pre-step")}


def test_in_native_slots_what_the_phi_rule_pulls_takes_the_phi_rule_role_and_place():
    rules = [rule("native-system"), rule("preset", role="system"), rule("character", role="system"),
             rule("history"), rule("input"), rule("phi", role="user")]
    card = {"name": "Card", "description": "DESC", "post_history_instructions": "LAST"}
    result = run(strategy(rules, placement="native-slots"), [marker("chatHistory")], character=card)
    last = next(n for n in result.nodes if n.text == "LAST")
    assert (last.role, last.region, last.delivery) == ("user", "after-input", "context")


def test_a_persona_marker_pulls_a_listed_persona_in_module_order():
    rules = [rule("native-system"), rule("preset", role="system"), rule("history"), rule("input"),
             rule("persona", role="user", delivery="context")]
    result = run(strategy(rules, placement="modules"), [text("main", "system", "MAIN"),
                                                        marker("personaDescription")],
                 persona={"name": "P", "description": "ME"})
    me = next(n for n in result.nodes if n.text == "ME")
    assert (me.role, me.region) == ("system", "system")


def test_a_manual_end_anchor_does_not_move_a_native_row():
    # reference A.10.2: "anchor end" is the end of a core / logical order; native regions keep their order
    rules = [rule("native-system"), rule("character", role="system"), rule("persona", role="system"),
             rule("history"), rule("input")]
    layout = {"version": 1, "source": "manual", "identity": "preserve", "fallback": "source-order", "overrides": [],
              "positions": [{"sourceId": "character", "positionId": "description", "enabled": True,
                             "placement": "list", "anchor": "end"}]}
    result = run(strategy(rules, placement="modules", layout=layout), character={"name": "C", "description": "DESC"},
                 persona={"name": "P", "description": "ME"})
    assert texts(result)[:2] == ["DESC", "ME"]
    core = run(strategy(rules[1:], backend="core", placement="modules", layout=layout),
               character={"name": "C", "description": "DESC"}, persona={"name": "P", "description": "ME"})
    assert texts(core)[-1] == "DESC"


def test_a_resource_anchor_move_counts_as_a_placement_change_with_identity_position():
    # builtin-native-slots: world info "before" goes before the card (resource stage), which the projection reports
    result = run("builtin-native-slots", [], entries=[lore("a", "LORE", "before", role="system")],
                 character={"name": "C", "description": "DESC"})
    assert texts(result)[:2] == ["LORE", "DESC"]
    moved = [d.id for d in result.diagnostics if d.code == "NATIVE_PLACEMENT_ADJUSTED"]
    assert any("description" in i for i in moved) and any(i.endswith("a") for i in moved)


def test_with_identity_position_a_manual_row_sorts_in_the_logical_order_and_adapts():
    # no later row and no anchor: the row goes to the end, after the input, so it becomes a user pre-step message
    rules = [rule("native-system"), rule("preset", role="system"), rule("worldbook", role="system", delivery="context"),
             rule("history"), rule("input")]
    layout = {"version": 1, "source": "preset-slots", "identity": "position", "fallback": "source-order",
              "overrides": [], "positions": [{"sourceId": "worldbook", "positionId": "after", "enabled": True,
                                              "placement": "list"}]}
    result = run(strategy(rules, placement="native-slots", layout=layout), [marker("chatHistory")],
                 entries=[lore("a", "LORE", "after", role="system")])
    lore_node = next(n for n in result.nodes if n.text == "LORE")
    assert (lore_node.role, lore_node.region, lore_node.delivery) == ("user", "after-input", "pre-step")
    assert {"NATIVE_ROLE_ADJUSTED", "NATIVE_DELIVERY_ADJUSTED"} <= set(codes(result))


def test_a_manual_row_does_not_move_retained_snapshots():
    rules = [rule("preset", role="system"), rule("worldbook", role="system", lifetime="snapshot"), rule("history"),
             rule("input")]
    layout = {"version": 1, "source": "manual", "identity": "position", "fallback": "source-order", "overrides": [],
              "positions": [{"sourceId": "worldbook", "positionId": "before", "enabled": True, "placement": "list",
                             "anchor": "end"}]}
    result = run(strategy(rules, backend="core", placement="modules", layout=layout), [text("main", "system", "M")],
                 entries=[lore("a", "KEPT", "before", role="system")])
    assert texts(result)[:2] == ["M", "KEPT"]


PRESET_SLOTS = {"version": 1, "source": "preset-slots", "identity": "preserve", "fallback": "source-order",
                "overrides": []}
CORE_RULES = [rule("native-system"), rule("preset", role="system"), rule("worldbook", role="system"),
              rule("history"), rule("input")]


def test_a_preset_slot_layout_on_core_takes_a_plain_author_note_prompt_as_the_anchor():
    # the layout chooses SillyTavern's ordering, but the slots are the library's: marker or not
    doc = strategy(CORE_RULES, backend="core", placement="modules", layout=PRESET_SLOTS)
    prompts = [text("authorNote", "system", "NOTE"), marker("chatHistory")]
    result = run(doc, prompts, entries=[lore("a", "AFTER-NOTE", "after_author_note")])
    assert "WORLD_BOOK_SLOT_MISSING" not in codes(result)


def test_a_preset_slot_layout_on_core_reports_the_slots_of_a_disabled_book_the_preset_reads():
    rules = [dict(r, enabled=False) if r["kind"] == "worldbook" else r for r in CORE_RULES]
    doc = strategy(rules, backend="core", placement="modules", layout=PRESET_SLOTS)
    result = run(doc, [text("lead", "system", "LEAD")], entries=[lore("a", "NOTE-LORE", "before_author_note")])
    assert codes(result).count("WORLD_BOOK_SLOT_MISSING") == 1


def test_a_preset_slot_layout_sends_the_card_system_prompt_without_a_main_prompt():
    rules = [rule("native-system"), rule("preset"), rule("character", role="user"), rule("history"), rule("input")]
    doc = strategy(rules, backend=None, placement="modules", layout={**PRESET_SLOTS, "identity": "position"})
    result = run(doc, [], character={"name": "Vey", "system_prompt": "CARD-SYSTEM"})
    assert [(m.role, m.content) for m in result.request.messages if m.content == "CARD-SYSTEM"] == [
        ("user", "CARD-SYSTEM")]


def test_an_empty_history_is_anchored_after_a_prompt_redirected_to_an_earlier_rule():
    # the preset's jailbreak goes to the phi rule's place, before history: nothing moved, nothing to report
    rules = [rule("custom", id="c1", inputMode="text", text="LEAD", role="system"), rule("phi"), rule("history"),
             rule("input"), rule("preset", role="user")]
    doc = strategy(rules, backend="native", placement="modules")
    result = run(doc, [text("jailbreak", "system", "PHI-TEXT")], history=())
    assert "NATIVE_PLACEMENT_ADJUSTED" not in codes(result)
    assert texts(result)[:2] == ["LEAD", "PHI-TEXT"]


STRICT_SLOTS = {**PRESET_SLOTS, "fallback": "error", "priority": ["preset", "resource", "default"]}


def _refusal(doc, prompts, entries):
    try:
        run(doc, prompts, entries=entries)
    except AssemblyError as error:
        return error.code, str(error)
    return None


def test_a_missing_slot_refuses_before_a_missing_resource_anchor_on_native():
    # the library sorts by resource after the layout overrides, which refuse first when a slot is missing
    rules = [rule("native-system"), rule("preset", delivery="context"), rule("worldbook", role="preserve"),
             rule("history"), rule("input")]
    doc = strategy(rules, backend="native", placement="modules", layout=STRICT_SLOTS)
    refusal = _refusal(doc, [text("lead", "system", "LEAD")], [lore("a", "EX-LORE", "after_example_messages")])
    assert refusal is not None and refusal[0] == "LAYOUT_TARGET_MISSING"


def test_an_assistant_entry_refuses_in_the_native_projection_before_a_missing_resource_anchor():
    rules = [rule("native-system"), rule("preset", role="system"), rule("worldbook"), rule("history"),
             rule("input")]
    doc = strategy(rules, backend="native", placement="native-roles", layout=STRICT_SLOTS)
    refusal = _refusal(doc, [text("lead", "system", "LEAD")],
                       [lore("a", "EX-LORE", "before_example_messages", role="assistant")])
    assert refusal is not None and refusal[0] == "ASSEMBLY_NATIVE_UNSUPPORTED" and "assistant" in refusal[1]
