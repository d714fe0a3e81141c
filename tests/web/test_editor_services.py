"""The editor's services around the pure edits (tests/engine/test_edits.py has what each edit computes): the row is
locked and its version checked first, the locks come from the engine's preview of the stored draft (no caller hands
them in), every refusal writes nothing and carries the fresh state, and a write runs the engine once per draft it
looks at."""

from unittest import mock

import pytest
from django.utils.text import slugify
from hypothesis import given
from hypothesis import strategies as st

from assembly.edits import position_keys, slug
from assembly.strategy import StrategyError
from preview_app import strategy_sessions
from strategies_app import services, session_previews
from strategies_app.models import Strategy
from studio.errors import ServiceError
from tests.web.conftest import client_for
from tests.web.test_editor import HTMX
from tests.web.test_editor import editor as locking_editor  # noqa: F401  (the fixture)
from tests.web.test_editor_blocks import block, blocks_of
from tests.web.test_editor_blocks import editor as core_editor  # noqa: F401  (the fixture)

MAIN, JAILBREAK, PERSONA, DESCRIPTION = "preset#main", "preset#jailbreak", "persona#persona", "character#description"


@pytest.fixture
def slots(users):
    return services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-native-slots"))


def _fresh(strategy):
    return Strategy.objects.get(pk=strategy.pk)


def _moved(keys, row, before):
    order = [key for key in keys if key != row]
    order.insert(order.index(before), row)
    return order


def _unused(draft):
    raise AssertionError("the engine ran")


def test_a_free_row_moves_on_the_preview_of_the_stored_draft(users, locking_editor):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    order = _moved(position_keys(draft=strategy.draft), JAILBREAK, MAIN)
    updated = services.positions_reorder(strategy=strategy, user=users["designer"], order=order,
                                         run=session_previews.DraftPreviews(strategy, session).run,
                                         expected_version=strategy.version, moved=JAILBREAK)
    assert updated.version == strategy.version + 1
    assert position_keys(draft=updated.draft) == order
    listed = [s for s in updated.draft["layout"]["positions"] if s["placement"] == "list"]
    assert [(s["sourceId"], s["positionId"]) for s in listed] == [("preset", "jailbreak")]


@pytest.mark.parametrize("row", [PERSONA, DESCRIPTION])
def test_a_row_the_preview_locks_does_not_move_and_nothing_is_written(users, locking_editor, row):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    order = _moved(position_keys(draft=strategy.draft), DESCRIPTION, PERSONA)  # two locked rows swapped
    with pytest.raises(ServiceError) as refused:
        services.positions_reorder(strategy=strategy, user=users["designer"], order=order,
                                   run=session_previews.DraftPreviews(strategy, session).run,
                                   expected_version=strategy.version, moved=row)
    assert refused.value.code == "POSITION_LOCKED" and refused.value.status == 409
    assert list(refused.value.detail) == ["id", "version", "draft", "path", "rows"]
    assert refused.value.detail["rows"] == [row]
    assert (_fresh(strategy).version, _fresh(strategy).draft) == (strategy.version, strategy.draft)


def test_a_locked_row_is_only_switched(users, locking_editor):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    run = session_previews.DraftPreviews(strategy, session).run
    with pytest.raises(ServiceError) as refused:
        services.position_update(strategy=strategy, user=users["designer"], key=PERSONA, enabled=True,
                                 placement="list", anchor=None, run=run, expected_version=strategy.version)
    assert refused.value.code == "POSITION_LOCKED" and _fresh(strategy).version == strategy.version
    switched = services.position_update(strategy=strategy, user=users["designer"], key=PERSONA, enabled=False,
                                        placement="source", anchor=None, run=_unused,
                                        expected_version=strategy.version)
    assert switched.version == strategy.version + 1


@pytest.mark.parametrize("build", [lambda keys: keys[:-1], lambda keys: [*keys, "worldbook#nowhere"]])
def test_refused_orders_write_nothing_and_carry_the_fresh_state(users, slots, build):
    before = _fresh(slots)
    with pytest.raises(ServiceError) as refused:
        services.positions_reorder(strategy=slots, user=users["designer"], order=build(position_keys(
            draft=slots.draft)), run=_unused, expected_version=slots.version)
    assert refused.value.code == "ORDER_NOT_PERMUTATION" and refused.value.status == 409
    assert list(refused.value.detail) == ["id", "version", "draft", "path", "unknown", "missing", "repeated"]
    assert refused.value.detail["version"] == before.version and refused.value.detail["draft"] == before.draft
    after = _fresh(slots)
    assert (after.version, after.draft) == (before.version, before.draft)


def test_a_stale_version_is_refused_before_anything_else(users, slots):
    services.rule_update(strategy=slots, user=users["designer"], rule_id="phi", changes={"enabled": False},
                         expected_version=slots.version)
    with pytest.raises(ServiceError) as refused:
        services.positions_reorder(strategy=slots, user=users["designer"], order=["not", "a", "permutation"],
                                   run=_unused, expected_version=slots.version)
    assert refused.value.code == "STRATEGY_VERSION_CONFLICT"


def test_the_unchanged_order_writes_nothing(users, slots):
    same = services.positions_reorder(strategy=slots, user=users["designer"], order=position_keys(draft=slots.draft),
                                      run=lambda draft: None, expected_version=slots.version)
    assert same.version == slots.version and "positions" not in (same.draft.get("layout") or {})


def test_malformed_edits_are_400_without_the_state(users, slots):
    with pytest.raises(ServiceError) as refused:
        services.rule_update(strategy=slots, user=users["designer"], rule_id="phi", changes={"kind": "custom"},
                             expected_version=slots.version)
    assert refused.value.to_json() == {
        "ok": False, "code": "INPUT_INVALID", "status": 400, "error": "kind: not a field a rule edit may change "
        "(expected one of enabled, role, delivery, lifetime, depth, name, text)", "detail": {"path": "kind"}}


def test_a_bad_value_is_normalization_s_refusal_and_writes_nothing(users, slots):
    with pytest.raises(StrategyError):
        services.rule_update(strategy=slots, user=users["designer"], rule_id="phi", changes={"role": "narrator"},
                             expected_version=slots.version)
    assert _fresh(slots).version == slots.version


def test_edits_store_normalized_drafts(users, slots):
    updated, rule_id = services.rule_add(strategy=slots, user=users["designer"], kind="custom", name="Café",
                                         expected_version=slots.version)
    assert rule_id == "cafe" and updated.version == slots.version + 1
    from assembly.strategy import normalize_strategy

    assert normalize_strategy(updated.draft) == updated.draft


def test_a_built_in_is_read_only(users):
    builtin = Strategy.objects.get(slug="builtin-native-slots")
    with pytest.raises(ServiceError) as refused:
        services.rule_remove(strategy=builtin, user=users["designer"], rule_id="phi", expected_version=builtin.version)
    assert refused.value.code == "STRATEGY_READ_ONLY"


@given(st.text())
def test_rule_ids_are_slugs_as_django_makes_them(value):
    assert slug(value) == slugify(value)


# ---------------------------------------------------------------------------------------------- engine runs


@pytest.fixture
def runs(monkeypatch):
    """Every engine run of an editor request, counted."""
    counted = []
    real = session_previews.assemble

    def counting(request):
        counted.append(request)
        return real(request)

    monkeypatch.setattr(session_previews, "assemble", counting)
    return counted


def _post(users, strategy, path, data):
    return client_for(users["designer"]).post(f"/strategies/{strategy.slug}/{path}", data, **HTMX)


def test_a_drag_runs_the_engine_on_the_stored_draft_and_on_the_new_one(users, locking_editor, runs):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    response = _post(users, strategy, "positions/order/", {"version": strategy.version, "session": session.pk,
                                                           "row": JAILBREAK, "direction": "up"})
    assert response.status_code == 200 and _fresh(strategy).version == strategy.version + 1
    assert len(runs) == 2  # the locks of the draft the user saw, the preview of the new one


def test_a_refused_drag_runs_the_engine_once(users, locking_editor, runs):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    response = _post(users, strategy, "positions/order/", {"version": strategy.version, "session": session.pk,
                                                           "row": DESCRIPTION, "direction": "up"})
    assert response.status_code == 409 and _fresh(strategy).version == strategy.version
    assert len(runs) == 1  # the lock check's run is the preview of the unchanged draft


@pytest.mark.parametrize(("path", "data"), [
    ("rules/phi/edit/", {"enabled": ["false"]}),
    ("positions/", {"key": PERSONA, "enabled": ["false"], "placement": "source"}),
])
def test_other_writes_run_the_engine_once_per_draft(users, locking_editor, runs, path, data):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    response = _post(users, strategy, path, {"version": strategy.version, "session": session.pk, **data})
    assert response.status_code == 200 and _fresh(strategy).version == strategy.version + 1
    assert len(runs) == 2  # the request before the write (its effect is the difference) and after it


def test_a_block_move_shows_the_run_that_checked_it(users, core_editor, runs):  # noqa: F811
    strategy, session = core_editor["strategy"], core_editor["session"]
    blocks, _ = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    runs.clear()
    response = _post(users, strategy, "blocks/move/", {"version": strategy.version, "session": session.pk,
                                                       "target": phi.id, "anchor": main.id, "side": "after"})
    assert response.status_code == 200 and _fresh(strategy).version == strategy.version + 1
    assert len(runs) == 2  # the blocks of the stored draft, the moved draft (checked, then shown)


def test_the_session_request_is_read_once_per_editor_request(users, locking_editor, monkeypatch):  # noqa: F811
    strategy, session = locking_editor["strategy"], locking_editor["session"]
    with mock.patch.object(strategy_sessions, "session_request", wraps=strategy_sessions.session_request) as reads:
        response = _post(users, strategy, "positions/order/", {"version": strategy.version, "session": session.pk,
                                                               "row": JAILBREAK, "direction": "up"})
    assert response.status_code == 200 and reads.call_count == 1
