"""Whole-number fields of forms, queries and API bodies parse with a range: anything else is a 400 naming the field
(quality.md "Bad input"), never a 500 from Python's int() ("²" is a digit to str.isdigit; 5,000 digits pass
Python's int-digits limit)."""

import json

import pytest

from preview_app import services
from preview_app.models import GoldenSnapshot
from strategies_app import services as strategy_services
from strategies_app.models import Character
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db
BAD_NUMBERS = ["²", "٣", "9" * 5000, "-1", "1.5", " 1", "1e3", ""]


@pytest.fixture
def greeter_session(users):
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Mira", "first_mes": "Evening.", "alternate_greetings": ["Storm's coming."]}}
    character = strategy_services.character_import(user=users["admin"], data=card)
    return services.session_create(user=users["designer"], name="Greeter", host={"core_available": True},
                                   character=Character.objects.get(pk=character.id))


@pytest.mark.parametrize("raw", BAD_NUMBERS)
def test_greet_refuses_what_is_not_a_greeting_number(users, greeter_session, raw):
    response = client_for(users["designer"]).post(f"/sessions/{greeter_session.pk}/greet/", {"greeting": raw})
    assert response.status_code == 400
    assert "greeting" in response.content.decode() and "whole number" in response.content.decode()
    assert not greeter_session.events.exists()


def test_greet_takes_a_plain_number(users, greeter_session):
    response = client_for(users["designer"]).post(f"/sessions/{greeter_session.pk}/greet/", {"greeting": "1"})
    assert response.status_code == 302
    assert [e.content for e in greeter_session.events.all()] == ["Storm's coming."]


@pytest.mark.parametrize("raw", ['"' + "9" * 5000 + '"', "9" * 5000, '"²"', "1.5", "true", "-3", '"x"'])
def test_api_goldens_refuses_a_session_that_is_no_id(world, users, raw):
    GoldenSnapshot.objects.all().delete()
    response = client_for(users["qa"]).post("/api/goldens", '{"session": ' + raw + '}', content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    # a bare 5,000-digit number is refused by the JSON reader itself, before any key is read
    assert response.json()["detail"]["path"] == ("body" if raw.isdecimal() else "session")
    assert not GoldenSnapshot.objects.exists()


@pytest.mark.parametrize("field", ["from", "to"])
@pytest.mark.parametrize("raw", ["²", "9" * 5000, "-1"])
def test_preview_rows_refuse_an_index_that_is_no_number(world, users, field, raw):
    query = {"from": "0", "to": "3", field: raw}
    response = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/preview/rows/", query)
    assert response.status_code == 400
    assert f"{field}: expected a whole number" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/sessions/{}", "/api/goldens/{}", "/api/resources/preset/{}/export"])
def test_an_id_too_long_for_the_database_is_not_found(users, path):
    response = client_for(users["qa"]).get(path.format("9" * 40))
    assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"


def test_a_huge_json_number_in_a_body_is_a_400_naming_the_body(users):
    body = '{"name": "n", "current_input": "x", "host": {"core_available": true}, "extra": ' + "9" * 5000 + "}"
    response = client_for(users["designer"]).post("/api/sessions", body, content_type="application/json")
    assert response.status_code == 400
    assert json.loads(response.content)["ok"] is False
