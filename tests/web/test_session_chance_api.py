"""The session API and world-info chance (engine.md §5): a session's JSON shows the seed its rolls are drawn
from and the turn of its next generation (the generations committed so far), and `POST /api/sessions/<id>/reroll`
rolls again as the preview's "Roll again" does: a new seed, same permissions, errors as JSON."""

import json

import pytest

from preview_app import services
from preview_app.models import Session
from preview_app.previews import session_request, strategy_document
from strategies_app.models import Strategy
from tests.web.conftest import client_for, csrf_client_for, make_user

pytestmark = pytest.mark.django_db


def _session(users, owner="designer", seed=41):
    session = services.session_create(user=users[owner] if isinstance(owner, str) else owner, name="Glade",
                                      host={"core_available": True}, current_input="The wolf howls.",
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    Session.objects.filter(pk=session.pk).update(chance_seed=seed)
    return Session.objects.get(pk=session.pk)


def _post(client, url, **extra):
    return client.post(url, data=json.dumps({}), content_type="application/json", **extra)


def test_the_session_json_shows_its_seed_and_the_turn_of_its_next_generation(users):
    session = _session(users)
    client = client_for(users["qa"])
    assert client.get(f"/api/sessions/{session.pk}").json()["chance"] == {"seed": 41, "turn": 0}
    listed = next(s for s in client.get("/api/sessions").json() if s["id"] == session.pk)
    assert listed["chance"] == {"seed": 41, "turn": 0}
    designer = client_for(users["designer"])
    answer = designer.post(f"/api/sessions/{session.pk}/turns", data=json.dumps({"reply": "It answers."}),
                           content_type="application/json")
    assert answer.status_code == 201
    # one generation committed: the next request is generation 1 of the chat, with the same seed
    shown = client.get(f"/api/sessions/{session.pk}").json()["chance"]
    assert shown == {"seed": 41, "turn": 1}
    request = session_request(Session.objects.get(pk=session.pk),
                              strategy_document(session.applied_strategy, session.applied_document))
    assert {k: request["generation"][k] for k in ("seed", "turn")} == shown


def test_a_session_without_a_seed_shows_null(users):
    session = _session(users, seed=None)
    assert client_for(users["qa"]).get(f"/api/sessions/{session.pk}").json()["chance"] == {"seed": None, "turn": 0}


@pytest.mark.parametrize("role", ["designer", "admin"])
def test_reroll_stores_a_new_seed_and_answers_the_chance(users, monkeypatch, role):
    session = _session(users)
    monkeypatch.setattr(services, "new_chance_seed", lambda other_than=None: 977 if other_than == 41 else 0)
    answer = _post(client_for(users[role]), f"/api/sessions/{session.pk}/reroll")
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "chance": {"seed": 977, "turn": 0}, "previous_seed": 41}
    assert Session.objects.get(pk=session.pk).chance_seed == 977


def test_reroll_never_keeps_the_seed_it_had(users):
    session = _session(users)
    seeds = {_post(client_for(users["designer"]), f"/api/sessions/{session.pk}/reroll").json()["chance"]["seed"]
             for _ in range(3)}
    assert 41 not in seeds and all(isinstance(seed, int) and seed >= 0 for seed in seeds)


def test_reroll_needs_the_csrf_token(users):
    session = _session(users)
    client = csrf_client_for(users["designer"])
    refused = _post(client, f"/api/sessions/{session.pk}/reroll")
    assert refused.status_code == 403 and refused.json()["code"] == "CSRF_FAILED"
    assert Session.objects.get(pk=session.pk).chance_seed == 41
    client.get("/")  # the page sets the csrftoken cookie, as a browser session would have it
    token = client.cookies["csrftoken"].value
    assert _post(client, f"/api/sessions/{session.pk}/reroll", HTTP_X_CSRFTOKEN=token).status_code == 200
    assert Session.objects.get(pk=session.pk).chance_seed != 41


def test_qa_and_another_designer_cannot_reroll(users):
    session = _session(users)
    other = make_user("other-designer", "designer")
    for user in (users["qa"], other):
        refused = _post(client_for(user), f"/api/sessions/{session.pk}/reroll")
        assert refused.status_code == 403 and refused.json()["ok"] is False and refused.json()["code"] == "FORBIDDEN"
    assert Session.objects.get(pk=session.pk).chance_seed == 41


def test_reroll_of_an_unknown_session_is_a_json_404(users):
    refused = _post(client_for(users["designer"]), "/api/sessions/999999/reroll")
    assert refused.status_code == 404 and refused.json()["ok"] is False and refused.json()["status"] == 404


def test_reroll_only_answers_post(users):
    session = _session(users)
    refused = client_for(users["designer"]).get(f"/api/sessions/{session.pk}/reroll")
    assert refused.status_code == 405 and refused["Allow"] == "POST" and refused.json()["code"] == "METHOD_NOT_ALLOWED"


def test_the_session_edit_refuses_the_chance_as_a_field(users):
    session = _session(users)
    refused = client_for(users["designer"]).patch(f"/api/sessions/{session.pk}", data=json.dumps(
        {"chance": {"seed": 1}}), content_type="application/json")
    assert refused.status_code == 400 and "chance" in refused.json()["error"]
    assert Session.objects.get(pk=session.pk).chance_seed == 41
