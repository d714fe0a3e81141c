"""Two editors and an apply racing on one strategy and one session lose nothing (quality.md, Tests)."""

import threading

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from strategies_app.reference_data import ensure_reference_data
from studio.errors import ServiceError


def race(*jobs):
    """Run the jobs at the same moment in threads; each returns ("ok", value) or ("error", ServiceError)."""
    barrier = threading.Barrier(len(jobs))
    results = [None] * len(jobs)

    def run(index, job):
        try:
            barrier.wait()
            results[index] = ("ok", job())
        except ServiceError as error:
            results[index] = ("error", error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def setup_world():
    ensure_reference_data(apps)
    designer = get_user_model().objects.create_user("racer", password="a long enough password")
    designer.groups.add(Group.objects.get(name="designer"))
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                               name="Raced strategy")
    revision, _ = strategy_services.revision_save(strategy=strategy, user=designer, note="base")
    session = session_services.session_create(user=designer, name="Raced session", host={"core_available": True},
                                              current_input="hi")
    return designer, strategy, revision, session


def test_two_editors_from_one_version_one_wins_one_gets_409_and_the_apply_survives():
    designer, strategy, revision, session = setup_world()
    base = Strategy.objects.get(pk=strategy.pk)
    first = {**base.draft, "name": "Edited by Ann"}
    second = {**base.draft, "name": "Edited by Bob"}

    results = race(
        lambda: strategy_services.draft_update(strategy=base, user=designer, document=first,
                                               expected_version=base.version),
        lambda: strategy_services.draft_update(strategy=base, user=designer, document=second,
                                               expected_version=base.version),
        lambda: session_services.strategy_apply(session=Session.objects.get(pk=session.pk), strategy=base,
                                                revision=revision.revision),
    )
    outcomes = [kind for kind, _ in results[:2]]
    assert sorted(outcomes) == ["error", "ok"], results
    loser = next(value for kind, value in results[:2] if kind == "error")
    assert loser.code == "STRATEGY_VERSION_CONFLICT" and loser.status == 409
    winner = next(value for kind, value in results[:2] if kind == "ok")
    stored = Strategy.objects.get(pk=strategy.pk)
    assert stored.version == base.version + 1 and stored.name == winner.name  # exactly one edit landed, intact
    assert results[2][0] == "ok"
    applied = Session.objects.get(pk=session.pk)
    assert applied.applied_revision_id == revision.pk and applied.applied_document == revision.document


def test_two_turn_commits_from_one_history_do_not_double_the_turn():
    _designer, strategy, revision, session = setup_world()
    session_services.strategy_apply(session=session, strategy=strategy, revision=revision.revision)
    seen = max(Session.objects.get(pk=session.pk).events.values_list("seq", flat=True), default=0)
    results = race(
        lambda: session_services.turn_commit(session=Session.objects.get(pk=session.pk), reply="one",
                                             expected_seq=seen),
        lambda: session_services.turn_commit(session=Session.objects.get(pk=session.pk), reply="two",
                                             expected_seq=seen),
    )
    kinds = sorted(kind for kind, _ in results)
    events = list(Session.objects.get(pk=session.pk).events.order_by("seq").values_list("role", "content"))
    replies = [content for role, content in events if role == "assistant"]
    assert kinds == ["error", "ok"] and len(replies) == 1, (results, events)
