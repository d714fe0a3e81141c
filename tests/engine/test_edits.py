"""The editor's draft edits as pure functions (assembly/edits.py): what each edit stores, which rows a new order
moved (the fewest, never a locked one), which rows a preview locks, and that no edit, refused or not, touches its
input. Expected outcomes are worked out by hand from the row list of builtin-native-slots (catalogue order by
rule: preset, persona, character, world book, phi)."""

import copy
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly import assemble, edits
from assembly.catalogue import CONTEXT_CONTROL_KINDS, get_builtin_strategy
from assembly.edits import EditInvalid, EditRefused
from assembly.strategy import (
    LAYOUT_FALLBACKS,
    LAYOUT_IDENTITIES,
    LAYOUT_SOURCES,
    PLACEMENTS,
    TEXT_RULE_KINDS,
    StrategyError,
    normalize_strategy,
)

MAIN, JAILBREAK, DEPTH, BODY = "preset#main", "preset#jailbreak", "preset#depth", "preset#body"
PERSONA, DESCRIPTION = "persona#persona", "character#description"
REFUSALS = (EditInvalid, EditRefused, StrategyError)


def draft_of(builtin: str) -> dict:
    return normalize_strategy({k: v for k, v in get_builtin_strategy(builtin).items() if k != "id"})


SLOTS = draft_of("builtin-native-slots")
DRAFTS = {name: draft_of(name) for name in ("builtin-native-slots", "builtin-native-roles", "builtin-st")}


def _moved(keys, row, before):
    order = [key for key in keys if key != row]
    order.insert(order.index(before), row)
    return order


def _listed(draft):
    return {f"{row['sourceId']}#{row['positionId']}" for row in draft["layout"].get("positions", [])
            if row["placement"] == "list"}


# ---------------------------------------------------------------------------------------------- positions


def test_the_row_list_starts_with_the_preset_then_persona_then_character():
    keys = edits.position_keys(draft=SLOTS)
    assert keys[:6] == [MAIN, JAILBREAK, DEPTH, BODY, PERSONA, DESCRIPTION]
    assert len(keys) == 22


@pytest.mark.parametrize(("build", "locked", "moved", "listed"), [
    # one row dragged to the top: only it is placed by hand
    (lambda keys: _moved(keys, BODY, MAIN), set(), BODY, {BODY}),
    # two neighbours swapped: the dragged one is the mover, whichever it is
    (lambda keys: _moved(keys, JAILBREAK, MAIN), set(), JAILBREAK, {JAILBREAK}),
    (lambda keys: _moved(keys, JAILBREAK, MAIN), set(), MAIN, {MAIN}),
    # a free row passes a locked one: allowed, and the locked row is not counted as moved
    (lambda keys: _moved(keys, MAIN, DESCRIPTION), {PERSONA}, MAIN, {MAIN}),
    # swapping the free neighbour of a locked row is read as moving the free one, even when the hint names the other
    (lambda keys: _moved(keys, PERSONA, BODY), {PERSONA}, PERSONA, {BODY}),
])
def test_a_new_order_places_the_fewest_rows_by_hand(build, locked, moved, listed):
    order = build(edits.position_keys(draft=SLOTS))
    updated = edits.positions_reordered(SLOTS, order, locked=locked, moved=moved)
    assert _listed(updated) == listed
    assert edits.position_keys(draft=updated) == order


def test_reversing_four_rows_places_three_by_hand():
    keys = edits.position_keys(draft=SLOTS)
    order = [BODY, DEPTH, JAILBREAK, MAIN, *keys[4:]]  # [main, jailbreak, depth, body] reversed
    assert len(_listed(edits.positions_reordered(SLOTS, order, locked=set()))) == 3


@pytest.mark.parametrize(("build", "locked", "moved", "code", "named"), [
    (lambda keys: _moved(keys, DESCRIPTION, PERSONA), {PERSONA, DESCRIPTION}, DESCRIPTION, "POSITION_LOCKED",
     [DESCRIPTION]),
    (lambda keys: _moved(keys, DESCRIPTION, PERSONA), {PERSONA, DESCRIPTION}, PERSONA, "POSITION_LOCKED", [PERSONA]),
    (lambda keys: _moved(keys, DESCRIPTION, MAIN), {PERSONA, DESCRIPTION}, None, "POSITION_LOCKED", [DESCRIPTION]),
    (lambda keys: keys[:-1], set(), None, "ORDER_NOT_PERMUTATION", None),
    (lambda keys: [*keys, "worldbook#nowhere"], set(), None, "ORDER_NOT_PERMUTATION", None),
])
def test_refused_orders(build, locked, moved, code, named):
    before = copy.deepcopy(SLOTS)
    with pytest.raises(EditRefused) as refused:
        edits.positions_reordered(SLOTS, build(edits.position_keys(draft=SLOTS)), locked=locked, moved=moved)
    assert refused.value.code == code and refused.value.status == 409
    assert refused.value.detail["path"] == "order"
    if named is not None:
        assert refused.value.detail["rows"] == named
    assert before == SLOTS


def test_the_unchanged_order_gives_the_draft_back():
    same = edits.positions_reordered(SLOTS, edits.position_keys(draft=SLOTS), locked=set())
    assert same == SLOTS and same is not SLOTS


def test_an_order_that_is_not_a_list_of_ids_is_malformed():
    with pytest.raises(EditInvalid) as refused:
        edits.positions_reordered(SLOTS, "preset#main", locked=set())
    assert refused.value.to_json() == {"ok": False, "code": "INPUT_INVALID", "status": 400,
                                       "error": "order: expected a list of ids", "detail": {"path": "order"}}


def test_order_refusals_say_what_was_unknown_missing_and_repeated():
    with pytest.raises(EditRefused) as refused:
        edits.checked_order(["a", "x", "a"], ["a", "b"], "rules")
    assert refused.value.message == ("order: expected each of the 2 current rules exactly once (unknown: x; "
                                     "missing: b; repeated: a)")
    assert refused.value.detail == {"path": "order", "unknown": ["x"], "missing": ["b"], "repeated": ["a"]}


@pytest.mark.parametrize(("current", "order", "locked", "hint", "kept"), [
    (["a", "b", "c"], ["a", "b", "c"], set(), None, {"a", "b", "c"}),
    (["a", "b", "c"], ["c", "a", "b"], set(), None, {"a", "b"}),
    (["a", "b", "c"], ["b", "a", "c"], set(), "a", {"b", "c"}),
    (["a", "b", "c"], ["b", "a", "c"], {"a"}, "a", {"a", "c"}),
    (["a", "b"], ["b", "a"], {"a", "b"}, "b", {"a"}),  # a refusal then names the dragged row
    ([], [], set(), None, set()),
])
def test_kept_in_place(current, order, locked, hint, kept):
    assert edits.kept_in_place(current, order, locked, hint) == kept


def test_a_position_update_stores_every_row_in_the_current_order():
    updated = edits.position_updated(SLOTS, PERSONA, enabled=False, placement="list", anchor="end", locked=set())
    stored = updated["layout"]["positions"]
    assert [f"{s['sourceId']}#{s['positionId']}" for s in stored] == edits.position_keys(draft=SLOTS)
    assert next(s for s in stored if s["sourceId"] == "persona") == {
        "sourceId": "persona", "positionId": "persona", "enabled": False, "placement": "list", "anchor": "end"}


@pytest.mark.parametrize(("key", "placement", "anchor", "code", "path"), [
    ("worldbook#nowhere", "source", None, "POSITION_NOT_FOUND", "key"),
    (PERSONA, "list", None, "POSITION_LOCKED", "placement"),
    (PERSONA, "source", "end", "POSITION_LOCKED", "placement"),
])
def test_refused_position_updates(key, placement, anchor, code, path):
    with pytest.raises(EditRefused) as refused:
        edits.position_updated(SLOTS, key, enabled=True, placement=placement, anchor=anchor, locked={PERSONA})
    assert (refused.value.code, refused.value.detail["path"], refused.value.detail["rows"]) == (code, path, [key])


def test_a_locked_row_may_still_be_switched_off():
    updated = edits.position_updated(SLOTS, PERSONA, enabled=False, placement="source", anchor=None,
                                     locked={PERSONA})
    assert next(s for s in updated["layout"]["positions"] if s["sourceId"] == "persona")["enabled"] is False


class _Unasked:
    """A lock set that must not be consulted."""

    def __contains__(self, key):
        raise AssertionError("the locks were asked for")


def test_a_switch_does_not_ask_for_the_locks():
    edits.position_updated(SLOTS, PERSONA, enabled=False, placement="source", anchor=None, locked=_Unasked())


def test_a_malformed_order_does_not_ask_for_the_locks():
    with pytest.raises(EditRefused):
        edits.positions_reordered(SLOTS, ["nothing"], locked=_Unasked())


# ---------------------------------------------------------------------------------------------- layout


@pytest.mark.parametrize(("placement", "source", "identity"), [
    ("modules", "manual", "preserve"),
    ("st", "preset-slots", "preserve"),
    ("native-roles", "preset-slots", "preserve"),
    ("native-slots", "preset-slots", "position"),
])
def test_a_draft_without_a_layout_adopts_one_that_keeps_its_placement(placement, source, identity):
    draft = {"placement": placement, "rules": []}
    assert edits.layout_or_default(draft=draft) == {
        "version": 1, "source": source, "identity": identity, "fallback": "source-order", "overrides": [],
        "priority": ["preset", "resource", "default"]}


def test_a_stored_layout_is_given_as_a_copy():
    layout = edits.layout_or_default(draft=SLOTS)
    assert layout == SLOTS["layout"] and layout is not SLOTS["layout"]


def test_priority_and_policy_edits():
    roles = DRAFTS["builtin-native-roles"]
    assert "layout" not in roles
    reordered = edits.priority_reordered(roles, ["resource", "preset", "default"])
    assert reordered["layout"]["priority"] == ["resource", "preset", "default"]
    with pytest.raises(EditRefused) as refused:
        edits.priority_reordered(roles, ["preset", "default"])
    assert refused.value.code == "ORDER_NOT_PERMUTATION"
    policy = edits.layout_updated(roles, source="manual", identity="preserve", fallback="error")["layout"]
    assert (policy["source"], policy["identity"], policy["fallback"]) == ("manual", "preserve", "error")


def test_removing_a_stored_block_move():
    layout = {**SLOTS["layout"], "overrides": [{"target": "block:a", "anchor": "block:b", "side": "before",
                                               "detach": False}]}
    moved = normalize_strategy({**SLOTS, "layout": layout})
    assert edits.block_override_removed(moved, "block:a")["layout"]["overrides"] == []
    with pytest.raises(EditRefused) as refused:
        edits.block_override_removed(moved, "block:b")
    assert refused.value.code == "OVERRIDE_NOT_FOUND" and refused.value.detail == {"path": "target"}


@pytest.mark.parametrize(("side", "target", "anchor", "path"), [
    ("above", "block:a", "block:b", "side"),
    ("before", "block:a", "block:a", "anchor"),
])
def test_malformed_block_moves_run_nothing(side, target, anchor, path):
    def run(draft):
        raise AssertionError("the engine ran")

    with pytest.raises(EditInvalid) as refused:
        edits.block_moved(SLOTS, target=target, anchor=anchor, side=side, detach=False, run=run)
    assert refused.value.detail == {"path": path}


def test_a_block_move_runs_the_adopted_draft_then_the_moved_one():
    roles = DRAFTS["builtin-native-roles"]
    blocks = [SimpleNamespace(id="block:a", movable=True, overridable=True),
              SimpleNamespace(id="block:b", movable=True, overridable=True)]
    runs = []

    def run(draft):
        runs.append(draft)
        moved = bool(draft["layout"].get("overrides"))
        return SimpleNamespace(layout=SimpleNamespace(blocks=blocks), placement="native-roles",
                               request=SimpleNamespace(messages=["b", "a"] if moved else ["a", "b"]))

    moved = edits.block_moved(roles, target="block:b", anchor="block:a", side="before", detach=False, run=run)
    assert runs[0] == {**roles, "layout": edits.layout_or_default(draft=roles)}
    assert runs[1]["layout"]["overrides"] == [{"target": "block:b", "anchor": "block:a", "side": "before",
                                               "detach": False}]
    assert moved == normalize_strategy(runs[1]) and "layout" not in roles


def _unchanged_runs(blocks: list[str], placement: str):
    """A `run` whose request never changes, over blocks in the order given."""
    found = [SimpleNamespace(id=b, movable=True, overridable=True) for b in blocks]
    return lambda draft: SimpleNamespace(layout=SimpleNamespace(blocks=found), placement=placement,
                                         request=SimpleNamespace(messages=["the same"]))


@pytest.mark.parametrize(("side", "code"), [
    ("before", "BLOCK_ALREADY_THERE"),  # a sits just before b already
    ("after", "BLOCK_MOVE_IGNORED"),  # the move would change the order, yet the request stays as it was
])
def test_a_block_move_that_leaves_the_request_as_it_was_is_refused(side, code):
    run = _unchanged_runs(["block:a", "block:b"], "st")
    with pytest.raises(EditRefused) as refused:
        edits.block_moved(DRAFTS["builtin-native-roles"], target="block:a", anchor="block:b", side=side,
                          detach=False, run=run)
    assert refused.value.code == code and refused.value.status == 409


# ---------------------------------------------------------------------------------------------- rules


def test_rules_reorder_keeps_the_controls_in_place():
    draft = edits.context_control_switched(SLOTS, "dsh.runtime-context", False)
    movable = [r["id"] for r in draft["rules"] if r["kind"] not in CONTEXT_CONTROL_KINDS]
    reordered = edits.rules_reordered(draft, list(reversed(movable)))
    slots = [i for i, r in enumerate(draft["rules"]) if r["kind"] in CONTEXT_CONTROL_KINDS]
    assert [i for i, r in enumerate(reordered["rules"]) if r["kind"] in CONTEXT_CONTROL_KINDS] == slots
    assert [r["id"] for r in reordered["rules"] if r["kind"] not in CONTEXT_CONTROL_KINDS] == movable[::-1]


def test_a_control_switch_writes_all_three_control_rows_once():
    rules = edits.context_control_switched(SLOTS, "dsh.runtime-context", False)["rules"]
    controls = [(r["id"], r["enabled"]) for r in rules if r["kind"].startswith("dsh.")]
    assert controls == [("dsh-runtime-context", False), ("dsh-sandbox-policy", True), ("dsh-approval-policy", True)]


def test_adding_and_removing_custom_rules():
    added, rule_id = edits.rule_added(SLOTS, "custom", "Café notes", "Hello", "system")
    assert rule_id == "cafe-notes"
    assert added["rules"][-1]["id"] == "cafe-notes" and added["rules"][-1]["text"] == "Hello"
    again, second = edits.rule_added(added, "custom", "Café notes")
    assert second == "cafe-notes-2"
    _, unnamed = edits.rule_added(SLOTS, "dsh.text")
    assert unnamed == "dsh-text"
    assert edits.rule_removed(again, "cafe-notes")["rules"][-1]["id"] == "cafe-notes-2"


def test_a_rule_update_drops_the_delivery_given_as_none():
    custom, rule_id = edits.rule_added(SLOTS, "custom", "Note", "x")
    delivered = edits.rule_updated(custom, rule_id, {"delivery": "context"})
    assert delivered["rules"][-1]["delivery"] == "context"
    assert "delivery" not in edits.rule_updated(delivered, rule_id, {"delivery": None})["rules"][-1]


@pytest.mark.parametrize(("edit", "code", "status", "detail"), [
    (lambda d: edits.rule_updated(d, "nope", {"enabled": False}), "RULE_NOT_FOUND", 409,
     {"path": "rule", "rule": "nope"}),
    (lambda d: edits.rule_updated(d, "phi", {"kind": "custom"}), "INPUT_INVALID", 400, {"path": "kind"}),
    (lambda d: edits.rule_updated(edits.context_control_switched(d, "dsh.runtime-context", True),
                                  "dsh-runtime-context", {"name": "x"}), "RULE_CONTROL_FIXED", 409,
     {"path": "rule", "rule": "dsh-runtime-context"}),
    (lambda d: edits.rule_removed(d, "phi"), "RULE_NOT_REMOVABLE", 409, {"path": "rule", "rule": "phi"}),
    (lambda d: edits.rule_removed(d, "nope"), "RULE_NOT_FOUND", 409, {"path": "rule", "rule": "nope"}),
    (lambda d: edits.rule_added(d, "preset"), "INPUT_INVALID", 400, {"path": "kind"}),
    (lambda d: edits.context_control_switched(d, "phi", True), "INPUT_INVALID", 400, {"path": "kind"}),
    (lambda d: edits.context_control_switched(d, "dsh.runtime-context", "no"), "INPUT_INVALID", 400,
     {"path": "enabled"}),
    (lambda d: edits.rules_reordered(d, ["phi"]), "ORDER_NOT_PERMUTATION", 409, None),
])
def test_refused_rule_edits_leave_the_draft_alone(edit, code, status, detail):
    before = copy.deepcopy(SLOTS)
    with pytest.raises((EditInvalid, EditRefused)) as refused:
        edit(SLOTS)
    assert (refused.value.code, refused.value.status) == (code, status)
    if detail is not None:
        assert refused.value.detail == detail
    assert before == SLOTS


def test_bad_values_are_refused_by_normalization():
    with pytest.raises(StrategyError):
        edits.rule_updated(SLOTS, "phi", {"role": "narrator"})


def test_settings_set_name_backend_and_placement():
    updated = edits.settings_updated(DRAFTS["builtin-native-roles"], name="Renamed", backend=None,
                                     placement="native-roles")
    assert updated["name"] == "Renamed" and "backend" not in updated
    assert edits.settings_updated(updated, name="Again", backend="native", placement="native-roles")["backend"] == (
        "native")


# ---------------------------------------------------------------------------------------------- locked rows


def _request(draft):
    """A preset whose markers hold the world book rows and the description, a persona the main prompt takes in."""
    prompts = [{"identifier": "main", "role": "system", "content": "Main {{persona}}"},
               {"identifier": "worldInfoBefore", "marker": True}, {"identifier": "charDescription", "marker": True},
               {"identifier": "chatHistory", "marker": True}]
    return {"strategy": draft, "host": {"core_available": True}, "resources": {
        "preset": {"prompts": prompts}, "persona": {"name": "Sam", "description": "A visitor."},
        "character": {"name": "C", "description": "CHARACTER"},
        "worldbook": {"activation": "all", "entries": [{"uid": "a", "content": "BEFORE", "position": "before"}]}},
        "conversation": {"history": [{"id": "old", "role": "user", "content": "OLD"}], "input": []}}


def test_a_preview_locks_the_rows_its_slots_and_macros_hold():
    result = assemble(_request(SLOTS))
    locked = edits.locked_rows(SLOTS, result)
    assert {"worldbook#before", DESCRIPTION, PERSONA} <= locked
    assert "worldbook#after" not in locked and MAIN not in locked
    rows = {row.key: row for row in result.positions}
    assert all(key in locked for key, row in rows.items() if not row.configurable)


def test_without_a_preview_only_the_rows_that_are_never_configurable_are_locked():
    rows = {row.key: row for row in assemble(_request(SLOTS)).positions}
    assert edits.locked_rows(SLOTS, None) == {key for key, row in rows.items() if not row.configurable}


# ---------------------------------------------------------------------------------------------- properties


def _operation(draft, data):
    """One edit on `draft` drawn from `data`: (name, the call)."""
    rules = draft["rules"]
    keys = edits.position_keys(draft=draft)
    text = st.text(alphabet="ab cé-_1", max_size=12)
    choice = data.draw(st.sampled_from(["rules", "rule", "add", "remove", "control", "positions", "position",
                                        "priority", "layout", "settings", "override"]))
    if choice == "rules":
        movable = [r["id"] for r in rules if r["kind"] not in CONTEXT_CONTROL_KINDS]
        order = data.draw(st.permutations(movable))
        return choice, lambda d: edits.rules_reordered(d, order)
    if choice == "rule":
        rule = data.draw(st.sampled_from(rules))
        changes = data.draw(st.fixed_dictionaries({}, optional={
            "enabled": st.booleans(), "name": text, "text": text, "role": st.sampled_from(["system", "user"]),
            "delivery": st.none()}))
        return choice, lambda d: edits.rule_updated(d, rule["id"], changes)
    if choice == "add":
        kind, name, body = data.draw(st.sampled_from(TEXT_RULE_KINDS)), data.draw(text), data.draw(text)
        return choice, lambda d: edits.rule_added(d, kind, name, body)[0]
    if choice == "remove":
        rule_id = data.draw(st.sampled_from([r["id"] for r in rules]))
        return choice, lambda d: edits.rule_removed(d, rule_id)
    if choice == "control":
        kind, enabled = data.draw(st.sampled_from(CONTEXT_CONTROL_KINDS)), data.draw(st.booleans())
        return choice, lambda d: edits.context_control_switched(d, kind, enabled)
    if choice == "positions":
        order = data.draw(st.permutations(keys))
        locked = data.draw(st.sets(st.sampled_from(keys), max_size=4))
        moved = data.draw(st.none() | st.sampled_from(keys))
        return choice, lambda d: edits.positions_reordered(d, order, locked=locked, moved=moved)
    if choice == "position":
        key = data.draw(st.sampled_from(keys))
        enabled, placement = data.draw(st.booleans()), data.draw(st.sampled_from(["source", "list"]))
        anchor = data.draw(st.none() | st.just("end"))
        return choice, lambda d: edits.position_updated(d, key, enabled=enabled, placement=placement, anchor=anchor,
                                                        locked=set())
    if choice == "priority":
        order = data.draw(st.permutations(edits.layout_or_default(draft=draft)["priority"]))
        return choice, lambda d: edits.priority_reordered(d, order)
    if choice == "layout":
        policy = {"source": data.draw(st.sampled_from(LAYOUT_SOURCES)),
                  "identity": data.draw(st.sampled_from(LAYOUT_IDENTITIES)),
                  "fallback": data.draw(st.sampled_from(LAYOUT_FALLBACKS))}
        return choice, lambda d: edits.layout_updated(d, **policy)
    if choice == "settings":
        name, backend = data.draw(text), data.draw(st.sampled_from([None, "native", "core"]))
        placement = data.draw(st.sampled_from(PLACEMENTS))
        return choice, lambda d: edits.settings_updated(d, name=name, backend=backend, placement=placement)
    target = data.draw(st.sampled_from(["block:a", *(o["target"] for o in (draft.get("layout") or {})
                                                     .get("overrides") or [])]))
    return choice, lambda d: edits.block_override_removed(d, target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.sampled_from(sorted(DRAFTS)), data=st.data())
def test_any_sequence_of_edits_yields_a_normalized_draft_and_never_touches_its_input(start, data):
    draft = DRAFTS[start]
    for _ in range(data.draw(st.integers(1, 6))):
        _name, edit = _operation(draft, data)
        before = copy.deepcopy(draft)
        try:
            edited = edit(draft)
        except REFUSALS:
            assert draft == before  # a refused edit leaves its input unchanged
            continue
        assert draft == before
        assert normalize_strategy(edited) == edited
        draft = edited


def _relative(order, rows):
    return [key for key in order if key in rows]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_locked_row_never_moves(data):
    keys = edits.position_keys(draft=SLOTS)
    order = data.draw(st.permutations(keys))
    locked = data.draw(st.sets(st.sampled_from(keys), max_size=6))
    moved = data.draw(st.none() | st.sampled_from(keys))
    keeps = _relative(order, locked) == _relative(keys, locked)
    try:
        updated = edits.positions_reordered(SLOTS, order, locked=locked, moved=moved)
    except EditRefused as refused:
        assert not keeps and refused.code == "POSITION_LOCKED" and set(refused.detail["rows"]) <= locked
        return
    assert keeps
    stored = {f"{s['sourceId']}#{s['positionId']}": s for s in updated["layout"].get("positions", [])}
    before = {f"{s['sourceId']}#{s['positionId']}": s for s in SLOTS["layout"].get("positions", [])}
    for key in locked:
        assert stored.get(key, {}).get("placement", "source") == before.get(key, {}).get("placement", "source")
        assert stored.get(key, {}).get("anchor") == before.get(key, {}).get("anchor")

