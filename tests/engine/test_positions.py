"""Resource positions, manual placement, outlets and locks (reference A.14.5, A.5, A.9; engine.md §5, §6)."""

from dataclasses import asdict

import pytest

from assembly import AssemblyError, assemble

RULES = ["native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi"]


def strategy(backend=None, positions=None, priority="user", **layout_extra):
    """The A.14.5 fixture: Tavern DEFAULT_RULES, layout {preset-slots, preserve, source-order, priority 'user'}."""
    layout = {"version": 1, "source": "preset-slots", "identity": "preserve", "fallback": "source-order",
              "overrides": [], "priority": priority, **layout_extra}
    if positions is not None:
        layout["positions"] = positions
    doc = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "positions fixture",
           "rules": [{"id": k, "kind": k} for k in RULES], "layout": layout}
    if backend:
        doc["backend"] = backend
    return doc


def fixture_request(doc, *, main=None, lore=None, core=True):
    prompts = [{"identifier": "worldInfoBefore", "marker": True}, {"identifier": "worldInfoAfter", "marker": True},
               {"identifier": "charDescription", "marker": True}, {"identifier": "chatHistory", "marker": True}]
    if main is not None:
        prompts.insert(0, {"identifier": "main", "role": "system", "content": main})
    return {
        "strategy": doc,
        "resources": {
            "preset": {"prompts": prompts},
            "character": {"name": "C", "description": "CHARACTER"},
            "worldbook": {"activation": "all", "entries": lore if lore is not None else [
                {"uid": "a", "content": "BEFORE", "position": "before"},
                {"uid": "b", "content": "AFTER", "position": "after"}]},
        },
        "conversation": {"history": [{"id": "old", "role": "user", "content": "OLD"}],
                         "input": [{"id": "now", "role": "user", "content": "NOW"}]},
        "host": {"core_available": core},
    }


def texts(result):
    return [n.text for n in result.nodes]


def pos(source, position, placement="source", enabled=True, **extra):
    return {"sourceId": source, "positionId": position, "enabled": enabled, "placement": placement, **extra}


def test_p2_a_manual_row_wins_over_the_slot():
    doc = strategy(positions=[pos("worldbook", "after", "list"), pos("worldbook", "before"),
                              pos("character", "description")])
    result = assemble(fixture_request(doc))
    order = texts(result)
    assert order.index("AFTER") < order.index("BEFORE")
    after = next(n for n in result.nodes if n.text == "AFTER")
    assert after.position_decision == "user" and not after.locked


def test_p2_all_rows_source_keeps_slot_order():
    doc = strategy(positions=[pos("worldbook", "after"), pos("worldbook", "before"), pos("character", "description")],
                   priority="preset")
    result = assemble(fixture_request(doc))
    order = texts(result)
    assert order.index("BEFORE") < order.index("AFTER")
    assert next(n for n in result.nodes if n.text == "AFTER").position_decision == "preset"


def test_p3_disabled_rows_blank_their_output_and_say_so():
    doc = strategy(positions=[pos("character", "description", enabled=False), pos("worldbook", "after",
                                                                                 enabled=False)])
    result = assemble(fixture_request(doc, main="TEXT {{description}}"))
    assert all("CHARACTER" not in n.text for n in result.nodes)
    assert "AFTER" not in texts(result)
    rows = {r.key: r for r in result.positions}
    assert rows["worldbook#after"].enabled is False and rows["worldbook#after"].empty


def test_p4_new_entries_join_their_group_and_the_layout_holds_no_resource_ids():
    doc = strategy()
    lore = [{"uid": "a", "content": "BEFORE", "position": "before"},
            {"uid": "b", "content": "AFTER", "position": "after"},
            {"uid": "e", "content": "EXTRA", "position": "after"}]
    result = assemble(fixture_request(doc, lore=lore))
    order = texts(result)
    assert order.index("AFTER") < order.index("EXTRA")
    assert "worldbook:e" not in str(doc)


def test_p5_a_moved_macro_target_appears_once():
    doc = strategy(positions=[pos("character", "description", "list")])
    result = assemble(fixture_request(doc, main="PREFIX {{description}} SUFFIX"))
    holding = [n for n in result.nodes if "CHARACTER" in n.text]
    assert len(holding) == 1 and holding[0].text == "CHARACTER"
    assert holding[0].position_decision == "user"
    assert next(n for n in result.nodes if n.text.startswith("PREFIX")).text == "PREFIX  SUFFIX"


def test_p6_depth_by_default_and_a_list_row_drops_the_depth():
    lore = [{"uid": "d", "content": "DEPTH", "position": "at_depth", "depth": 1}]
    result = assemble(fixture_request(strategy(), lore=lore))
    assert next(n for n in result.nodes if n.text == "DEPTH").depth == 1
    doc = strategy(positions=[pos("worldbook", "depth", "list"), pos("character", "description")])
    result = assemble(fixture_request(doc, lore=lore))
    depth = next(n for n in result.nodes if n.text == "DEPTH")
    assert depth.depth is None
    assert texts(result).index("DEPTH") < texts(result).index("CHARACTER")


def test_explicit_anchor_places_a_row_after_another():
    doc = strategy(positions=[pos("worldbook", "before", "list",
                                  anchor={"sourceId": "character", "positionId": "description", "side": "after"})])
    order = texts(assemble(fixture_request(doc)))
    assert order.index("CHARACTER") + 1 == order.index("BEFORE")


def test_cyclic_anchors_are_refused():
    doc = strategy(positions=[
        pos("worldbook", "before", "list", anchor={"sourceId": "worldbook", "positionId": "after", "side": "after"}),
        pos("worldbook", "after", "list", anchor={"sourceId": "worldbook", "positionId": "before", "side": "after"}),
    ])
    with pytest.raises(AssemblyError) as error:
        assemble(fixture_request(doc))
    assert error.value.code == "POSITION_ANCHOR_CYCLE" and error.value.status == 409


def test_missing_anchor_is_a_diagnostic_or_a_409_with_fallback_error():
    anchor = {"sourceId": "persona", "positionId": "persona", "side": "before"}
    doc = strategy(positions=[pos("worldbook", "before", "list", anchor=anchor)])
    result = assemble(fixture_request(doc))
    assert any(d.code == "POSITION_ANCHOR_MISSING" for d in result.diagnostics)
    doc = strategy(positions=[pos("worldbook", "before", "list", anchor=anchor)], fallback="error")
    with pytest.raises(AssemblyError) as error:
        assemble(fixture_request(doc))
    assert error.value.code == "POSITION_ANCHOR_MISSING" and error.value.status == 409


def test_position_rows_report_locks_and_who_holds_them():
    result = assemble(fixture_request(strategy()))
    rows = {r.key: r for r in result.positions}
    before = rows["worldbook#before"]
    assert before.locked and before.lock_reasons == ["reference:preset"]
    assert before.held_by == ["preset:worldInfoBefore:before"]
    assert rows["persona#persona"].empty
    assert rows["worldbook#outlet"].empty


def test_world_book_outlet_entries_fill_their_marker():
    req = fixture_request(strategy(), main="Lore: {{outlet::gate}}.", lore=[
        {"uid": "o1", "content": "The gate opens at dawn", "position": "outlet", "outlet_name": "gate", "order": 2},
        {"uid": "o2", "content": "A key is needed", "position": "outlet", "outlet_name": "gate", "order": 1}])
    result = assemble(req)
    main = next(n for n in result.nodes if n.text.startswith("Lore:"))
    # ascending order: o2 (order 1) then o1 (order 2), joined with a newline, in the host message
    assert main.text == "Lore: A key is needed\nThe gate opens at dawn."
    assert not any(n.text == "A key is needed" for n in result.nodes)


def test_an_outlet_entry_without_a_marker_is_reported():
    req = fixture_request(strategy(), lore=[{"uid": "o", "content": "X", "position": "outlet", "outlet_name": "nowhere"}])
    result = assemble(req)
    assert [d for d in result.diagnostics if d.code == "WORLD_BOOK_OUTLET_MISSING"][0].details["outlet"] == "nowhere"


def test_a_refused_outlet_fill_is_an_assembly_refusal_naming_the_outlets():
    req = fixture_request(strategy(), main="{{outlet::gate}} and {{outlet::gate}}", lore=[
        {"uid": "o", "content": "X", "position": "outlet", "outlet_name": "gate"}])
    with pytest.raises(AssemblyError) as caught:
        assemble(req)
    assert caught.value.to_json() == {
        "ok": False, "code": "OUTLET_MARKER_COUNT", "status": 400, "detail": {"outlets": ["gate"]},
        "error": "outlets: layout.outlets.gate: message 0 must contain {{outlet::gate}} exactly once, found 2"}


def test_placement_controls_count_owned_and_independent_output():
    lore = [{"uid": "a", "content": "BEFORE", "position": "before"},
            {"uid": "d", "content": "DEEP", "position": "at_depth", "depth": 3}]
    result = assemble(fixture_request(strategy(), lore=lore))
    controls = {c.rule_id: c for c in result.placement_controls}
    assert asdict(controls["worldbook"]) == {"rule_id": "worldbook", "control": "mixed", "owned": 1,
                                                  "independent": 1}
    assert controls["history"].control == "native"
    assert controls["persona"].control == "empty"


def test_p1_catalogue_rows():
    result = assemble(fixture_request(strategy()))
    keys = [r.key for r in result.positions]
    world = [k.split("#")[1] for k in keys if k.startswith("worldbook#")]
    assert world == ["before", "after", "before_example_messages", "after_example_messages", "before_author_note",
                     "after_author_note", "depth", "outlet"]
    description = next(r for r in result.positions if r.key == "character#description")
    assert not description.empty and description.lock_reasons == ["reference:preset"]
    assert not any(k.startswith("tavern.text") or k.startswith("custom") for k in keys)


def test_resource_stage_puts_unslotted_world_info_beside_its_anchor():
    # no worldInfo markers: nothing holds the entries, so `resource` (before `default`) places them by their anchors:
    # `before` in front of the character definition, `after` behind it (reference A.12 catalogue anchors).
    req = fixture_request(strategy(priority=["preset", "resource", "default"]))
    req["resources"]["preset"]["prompts"] = [{"identifier": "main", "role": "system", "content": "MAIN"},
                                             {"identifier": "charDescription", "marker": True},
                                             {"identifier": "chatHistory", "marker": True}]
    result = assemble(req)
    assert texts(result)[:4] == ["MAIN", "BEFORE", "CHARACTER", "AFTER"]
    assert {n.text: n.position_decision for n in result.nodes}["BEFORE"] == "resource"


def test_resource_beating_preset_takes_entries_out_of_their_slot():
    doc = strategy(priority=["resource", "preset", "default"])
    req = fixture_request(doc, main="MAIN")
    result = assemble(req)
    order = texts(result)
    # the worldInfo markers sit before the character marker; with resource first the entries follow their anchors
    assert order.index("BEFORE") == order.index("CHARACTER") - 1
    assert order.index("AFTER") == order.index("CHARACTER") + 1
    assert not next(n for n in result.nodes if n.text == "BEFORE").locked


def test_resource_anchor_without_any_match_is_reported():
    req = fixture_request(strategy(priority=["preset", "resource", "default"]))
    req["resources"]["preset"]["prompts"] = [{"identifier": "chatHistory", "marker": True}]
    del req["resources"]["character"]
    result = assemble(req)
    missing = [d.details for d in result.diagnostics if d.code == "POSITION_ANCHOR_MISSING"]
    assert {d["positionId"] for d in missing} == {"before", "after"} and all(d["winner"] == "default" for d in missing)


def test_position_rows_follow_each_modules_first_rule_then_the_catalogue():
    from assembly.catalogue import POSITION_CATALOGUE
    from assembly.positions import position_rows
    from assembly.strategy import TEXT_RULE_KINDS

    kinds = ["worldbook", "character", "preset", "history", "worldbook", "persona"]
    doc = {"name": "order", "rules": [{"id": f"r{i}", "kind": k, "enabled": True} for i, k in enumerate(kinds)],
           "layout": {"positions": [{"sourceId": "persona", "positionId": "description", "enabled": True},
                                    {"sourceId": "nowhere", "positionId": "x"}]}}
    rows = position_rows(doc, [], [])
    catalogue = [c for c in POSITION_CATALOGUE if c["module"] not in TEXT_RULE_KINDS]
    first = {k: kinds.index(k) for k in kinds}
    expected = [c["id"] for c in sorted(catalogue, key=lambda c: first.get(c["module"], len(kinds)))]
    assert [r.key for r in rows] == ["persona#description", "nowhere#x",
                                     *(k for k in expected if k != "persona#description")]
    assert rows[1].missing and not rows[1].enabled and rows[1].name_en == "nowhere#x"
    assert all(r.node_ids == [] and r.node_ids is not s.node_ids for r, s in zip(rows, rows[1:], strict=False))


def test_each_result_gets_its_own_rows_of_a_strategy():
    anchor = {"sourceId": "character", "positionId": "description", "side": "after"}
    doc = strategy(positions=[{"sourceId": "worldbook", "positionId": "before", "enabled": True,
                               "placement": "list", "anchor": anchor}])
    first = assemble(fixture_request(doc))
    row = next(r for r in first.positions if r.key == "worldbook#before")
    expected = [asdict(r) for r in first.positions]
    # a caller changes its result: the row's anchor, lists and flags, and the policy the anchor came from
    row.anchor["side"] = "before"
    row.node_ids.append("x")
    row.enabled = False
    first.layout.policy["positions"][0]["anchor"]["side"] = "before"
    for other in first.positions:
        other.decisions.append("y")
    second = assemble(fixture_request(doc))
    assert [asdict(r) for r in second.positions] == expected
    again = next(r for r in second.positions if r.key == "worldbook#before")
    assert again.anchor == anchor and again.anchor is not row.anchor


@pytest.mark.parametrize("source", ["history", "input"])
def test_a_list_row_sorted_inside_a_native_projection_moves_an_empty_conversation_anchor(source):
    """Identity `position` sorts manual rows inside the projection (A.8.1 step 7): a row may take the empty history's
    or input's anchor, which stays that region's place, placed by the user and unlocked."""
    from assembly.catalogue import get_builtin_strategy

    doc = {k: v for k, v in get_builtin_strategy("builtin-native-slots").items() if k != "id"}
    doc["layout"] = {**doc["layout"], "identity": "position",
                     "positions": [pos(source, "content", "list", anchor="end")]}
    result = assemble({"strategy": doc, "host": {"native_available": True},
                       "conversation": {"history": [], "input": [] if source == "input" else
                                        [{"role": "user", "content": "now"}]}})
    anchor = next(n for n in result.nodes if n.id == f"{source}:anchor")
    assert (anchor.position_decision, anchor.locked, anchor.region) == ("user", False, source)
