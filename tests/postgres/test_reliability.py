"""Reliability on PostgreSQL: 20 parallel copies with one name all succeed under their own slugs (the slug race gave
5 x 500), and NUL / NaN in JSON is a 400 before PostgreSQL sees it (it was a 500)."""

import json

from django.test import Client

from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.postgres.test_concurrency import race, setup_world


def test_twenty_parallel_copies_with_the_same_name_get_their_own_slugs():
    designer, strategy, _revision, _session = setup_world()
    source = Strategy.objects.get(pk=strategy.pk)
    results = race(*[lambda: strategy_services.strategy_copy(user=designer, source=source, name="Same name")] * 20)
    assert all(result is not None for result in results), results  # every thread answered
    made = [value.slug for kind, value in results if kind == "ok"]
    refused = [value for kind, value in results if kind == "error"]
    assert all(error.status == 409 for error in refused), refused
    assert len(made) == len(set(made)) and len(made) + len(refused) == 20


def test_nul_and_nan_in_json_are_400_not_a_database_error():
    designer, _strategy, _revision, session = setup_world()
    client = Client()
    client.force_login(designer)
    for raw in ('{"name": "a\\u0000b"}', '{"current_input": "x", "host": {"variables": {"n": NaN}}}'):
        response = client.patch(f"/api/sessions/{session.pk}", data=raw, content_type="application/json")
        assert response.status_code == 400, response.content
        assert response.json()["code"] == "INPUT_UNSAFE"
    assert Session.objects.get(pk=session.pk).name == "Raced session"
    assert json.loads(client.get(f"/api/sessions/{session.pk}").content)["name"] == "Raced session"
