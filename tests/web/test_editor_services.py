"""The editor's services on their own: which rows a new order moved (the fewest, never a locked one), what a move
stores, and that every refusal writes nothing. Expected outcomes are worked out by hand from the row list of a
copy of builtin-native-slots (catalogue order by rule: preset, persona, character, world book, phi)."""

import pytest

from strategies_app import services
from strategies_app.models import Strategy
from studio.errors import ServiceError

MAIN, JAILBREAK, DEPTH, BODY = "preset#main", "preset#jailbreak", "preset#depth", "preset#body"
PERSONA, DESCRIPTION = "persona#persona", "character#description"


@pytest.fixture
def slots(users):
    return services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-native-slots"))


def _keys(strategy):
    return services.position_keys(draft=Strategy.objects.get(pk=strategy.pk).draft)


def _listed(strategy):
    stored = Strategy.objects.get(pk=strategy.pk).draft["layout"].get("positions", [])
    return {f"{row['sourceId']}#{row['positionId']}" for row in stored if row["placement"] == "list"}


def test_the_row_list_starts_with_the_preset_then_persona_then_character(slots):
    assert _keys(slots)[:6] == [MAIN, JAILBREAK, DEPTH, BODY, PERSONA, DESCRIPTION]
    assert len(_keys(slots)) == 22


def _moved(keys, row, before):
    order = [key for key in keys if key != row]
    order.insert(order.index(before), row)
    return order


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
def test_a_new_order_places_the_fewest_rows_by_hand(users, slots, build, locked, moved, listed):
    order = build(_keys(slots))
    updated = services.positions_reorder(strategy=slots, user=users["designer"], order=order, locked=locked,
                                         expected_version=slots.version, moved=moved)
    assert updated.version == slots.version + 1
    assert _listed(slots) == listed
    assert _keys(slots) == order


def test_reversing_four_rows_places_three_by_hand(users, slots):
    keys = _keys(slots)
    order = [BODY, DEPTH, JAILBREAK, MAIN, *keys[4:]]  # [main, jailbreak, depth, body] reversed
    services.positions_reorder(strategy=slots, user=users["designer"], order=order, locked=set(),
                               expected_version=slots.version)
    assert len(_listed(slots)) == 3  # of four reversed rows only one can keep its relative place


@pytest.mark.parametrize(("build", "locked", "moved", "code", "named"), [
    (lambda keys: _moved(keys, DESCRIPTION, PERSONA), {PERSONA, DESCRIPTION}, DESCRIPTION, "POSITION_LOCKED",
     [DESCRIPTION]),
    (lambda keys: _moved(keys, DESCRIPTION, PERSONA), {PERSONA, DESCRIPTION}, PERSONA, "POSITION_LOCKED", [PERSONA]),
    (lambda keys: _moved(keys, DESCRIPTION, MAIN), {PERSONA, DESCRIPTION}, None, "POSITION_LOCKED", [DESCRIPTION]),
    (lambda keys: keys[:-1], set(), None, "ORDER_NOT_PERMUTATION", None),
    (lambda keys: [*keys, "worldbook#nowhere"], set(), None, "ORDER_NOT_PERMUTATION", None),
])
def test_refused_orders_write_nothing(users, slots, build, locked, moved, code, named):
    before = Strategy.objects.get(pk=slots.pk)
    with pytest.raises(ServiceError) as refused:
        services.positions_reorder(strategy=slots, user=users["designer"], order=build(_keys(slots)),
                                   locked=locked, expected_version=slots.version, moved=moved)
    assert refused.value.code == code and refused.value.status == 409
    assert refused.value.detail["version"] == before.version and refused.value.detail["draft"] == before.draft
    if named is not None:
        assert refused.value.detail["rows"] == named
    after = Strategy.objects.get(pk=slots.pk)
    assert (after.version, after.draft) == (before.version, before.draft)


def test_a_stale_version_is_refused_before_anything_else(users, slots):
    services.rule_update(strategy=slots, user=users["designer"], rule_id="phi", changes={"enabled": False},
                         expected_version=slots.version)
    with pytest.raises(ServiceError) as refused:
        services.positions_reorder(strategy=slots, user=users["designer"], order=["not", "a", "permutation"],
                                   locked=set(), expected_version=slots.version)
    assert refused.value.code == "STRATEGY_VERSION_CONFLICT"


def test_the_unchanged_order_writes_nothing(users, slots):
    same = services.positions_reorder(strategy=slots, user=users["designer"], order=_keys(slots), locked=set(),
                                      expected_version=slots.version)
    assert same.version == slots.version and "positions" not in (same.draft.get("layout") or {})


def test_a_control_switch_writes_all_three_control_rows_once(users, slots):
    services.context_control_set(strategy=slots, user=users["designer"], kind="dsh.runtime-context", enabled=False,
                                 expected_version=slots.version)
    rules = Strategy.objects.get(pk=slots.pk).draft["rules"]
    controls = [(r["id"], r["enabled"]) for r in rules if r["kind"].startswith("dsh.")]
    assert controls == [("dsh-runtime-context", False), ("dsh-sandbox-policy", True), ("dsh-approval-policy", True)]
