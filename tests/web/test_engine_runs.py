"""Every engine run of the web process is bounded (quality.md "Performance": no request can hold a worker) and any
failure of one run is that request's coded error, or one error row of a list, never a 500 (quality.md "Bad input")."""

import contextlib
import json
import threading
import time

import pytest
from django.db import connection
from django.test import Client

import assembly.api
from preview_app import services
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from studio.engine_runs import within_deadline
from studio.result_cache import results_cache
from tests.web.big_sessions import big_session
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db
MARK = "this message breaks the engine"


def _spin():
    while True:
        pass


def test_a_pure_python_run_is_stopped_at_its_deadline():
    started = time.monotonic()
    with pytest.raises(assembly.AssemblyError) as refused:
        within_deadline(_spin, 0.2)
    assert time.monotonic() - started < 5
    assert (refused.value.code, refused.value.status) == ("ENGINE_DEADLINE_EXCEEDED", 503)
    assert refused.value.detail["limit_seconds"] == 0.2


def test_a_run_that_ends_in_time_leaves_nothing_behind():
    assert within_deadline(lambda: 42, 0.05) == 42
    ends = time.monotonic() + 0.3
    while time.monotonic() < ends:  # past the deadline: no stray stop arrives in this thread
        pass


def test_except_exception_in_the_run_does_not_swallow_the_deadline():
    def stubborn():
        while True:
            with contextlib.suppress(Exception):  # what a careless engine loop could do
                _spin()

    with pytest.raises(assembly.AssemblyError):
        within_deadline(stubborn, 0.2)


def test_any_exception_of_a_run_is_a_coded_error():
    def broken():
        return int("9" * 5000)  # Python's own limit on int digits: a ValueError

    with pytest.raises(assembly.AssemblyError) as refused:
        within_deadline(broken, 5)
    assert (refused.value.code, refused.value.status) == ("ENGINE_FAILED", 422)
    assert "ValueError" in refused.value.message


def _long_request(messages: int) -> dict:
    history = [{"id": f"m{i}", "role": "user" if i % 2 else "assistant", "content": f"message {i} " * 20}
               for i in range(messages)]
    return {"strategy": "builtin-st", "host": {"core_available": True},
            "conversation": {"history": history, "input": [{"id": "u", "role": "user", "content": "Hi"}]}}


def test_api_assemble_past_the_deadline_answers_503_naming_the_cause(users, settings):
    settings.STUDIO_ENGINE_DEADLINE_SECONDS = 0.001
    response = client_for(users["qa"]).post("/api/assemble", json.dumps(_long_request(2000)),
                                            content_type="application/json")
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "ENGINE_DEADLINE_EXCEEDED" and "STUDIO_ENGINE_DEADLINE_SECONDS" in body["error"]


def test_a_page_past_the_deadline_names_the_cause(users, settings):
    session = big_session(users["designer"], 3000)
    settings.STUDIO_ENGINE_DEADLINE_SECONDS = 0.001
    response = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/")
    assert response.status_code in (200, 503)
    assert 'data-code="ENGINE_DEADLINE_EXCEEDED"' in response.content.decode()


# --------------------------------------------------------------------------- one broken run, one broken row


@pytest.fixture
def breaking_engine(monkeypatch):
    """The real engine, except that a request whose conversation holds MARK raises a plain Python error (any
    engine bug, e.g. the int-digits ValueError a huge dice macro once raised)."""
    real = assembly.api.assemble

    def engine(request):
        if MARK in json.dumps(request, default=str):
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return real(request)

    monkeypatch.setattr(assembly.api, "assemble", engine)


def _broken_golden(world, users):
    """A second session of the world, pinned as a golden, whose run breaks afterwards."""
    session = world["session"]
    golden = services.golden_approve(session=session, revision=world["revision"], user=users["qa"])
    Session.objects.filter(pk=session.pk).update(current_input=MARK)
    return golden


def test_api_assemble_answers_a_coded_error_for_an_engine_failure(users, breaking_engine):
    request = {"host": {"core_available": True}, "strategy": "builtin-st",
               "conversation": {"history": [], "input": [{"id": "u", "role": "user", "content": MARK}]}}
    response = client_for(users["qa"]).post("/api/assemble", json.dumps(request), content_type="application/json")
    assert response.status_code == 422
    assert response.json()["code"] == "ENGINE_FAILED" and "ValueError" in response.json()["error"]


def test_a_broken_session_preview_is_an_error_not_a_500(world, users, breaking_engine):
    session = world["session"]
    Session.objects.filter(pk=session.pk).update(current_input=MARK)
    client = client_for(users["qa"])
    page = client.get(f"/sessions/{session.pk}/preview/")
    assert page.status_code in (200, 422) and "ENGINE_FAILED" in page.content.decode()
    api = client.get(f"/api/sessions/{session.pk}/preview")
    assert api.status_code == 422 and api.json()["code"] == "ENGINE_FAILED"
    for path in ("preview/rows/?from=0&to=3", "preview/result.json", "preview/across-models/"):
        answer = client.get(f"/sessions/{session.pk}/{path}")
        assert answer.status_code in (200, 422), path
        assert "ENGINE_FAILED" in answer.content.decode() or "could not assemble" in answer.content.decode(), path


def test_one_broken_golden_is_an_error_row_and_the_rest_renders(world, users, breaking_engine):
    from preview_app import services as session_services

    healthy = session_services.session_copy(session=world["session"], user=users["designer"])
    Session.objects.filter(pk=healthy.pk).update(name="Healthy copy")
    services.golden_approve(session=healthy, revision=world["revision"], user=users["qa"])
    _broken_golden(world, users)
    for user in users.values():
        client = client_for(user)
        page = client.get("/goldens/")
        assert page.status_code == 200
        assert "ENGINE_FAILED" in page.content.decode() and "Healthy copy" in page.content.decode()
        listed = client.get("/api/goldens")
        assert listed.status_code == 200
        rows = {row["session"]: row for row in listed.json()}
        assert rows[world["session"].pk]["error"]["code"] == "ENGINE_FAILED"
        assert rows[healthy.pk]["error"] is None and rows[healthy.pk]["status"] == "matches"


# --------------------------------------------------------------------------- no engine run in a write transaction


@pytest.fixture
def engine_outside_transactions(monkeypatch):
    """Records, for each engine run, whether it ran inside a database transaction."""
    seen: list[bool] = []
    real = assembly.api.assemble

    def engine(request):
        seen.append(connection.in_atomic_block)
        return real(request)

    monkeypatch.setattr(assembly.api, "assemble", engine)
    return seen


@pytest.mark.django_db(transaction=True)
def test_golden_approve_and_turn_commit_run_the_engine_outside_any_transaction(world, users,
                                                                                engine_outside_transactions):
    session = world["session"]
    services.golden_approve(session=session, revision=world["revision"], user=users["qa"])
    services.golden_pin(session=session, revision=world["revision"], user=users["qa"])
    services.turn_commit(session=session, reply="Hello back")
    services.turn_send(session=session, content="Again", reply="Sure")
    assert engine_outside_transactions and not any(engine_outside_transactions)


@pytest.fixture
def engine_racing_a_write(monkeypatch):
    """An engine run during which another request appends a message to the session it runs (a run, not a result
    the world's set-up left in the result cache)."""
    results_cache().clear()
    real = assembly.api.assemble
    done = []

    def engine(request):
        result = real(request)
        if not done:
            done.append(True)
            session = Session.objects.get(name="Designer's session")
            services.event_append(session=session, role="user", content="written meanwhile")
        return result

    monkeypatch.setattr(assembly.api, "assemble", engine)


def test_a_golden_of_a_session_changed_during_the_run_is_a_409(world, users, engine_racing_a_write):
    session = world["session"]
    GoldenSnapshot.objects.all().delete()
    response = client_for(users["qa"]).post("/api/goldens", json.dumps({"session": session.pk}),
                                            content_type="application/json")
    assert response.status_code == 409 and response.json()["code"] == "SESSION_CHANGED"
    assert not GoldenSnapshot.objects.exists()


def test_a_turn_of_a_session_changed_during_the_run_is_a_409(world, users, engine_racing_a_write):
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    response = client_for(users["designer"]).post(f"/api/sessions/{session.pk}/turns",
                                                  json.dumps({"reply": "Hi"}), content_type="application/json")
    assert response.status_code == 409 and response.json()["code"] == "SESSION_CHANGED"
    assert SessionEvent.objects.filter(session=session).count() == before + 1  # only the concurrent write
    assert Session.objects.get(pk=session.pk).current_input == "Hello"


# --------------------------------------------------------------------------- /api/ answers JSON for every error


def test_api_answers_json_for_404_405_and_500(users, monkeypatch):
    client = client_for(users["qa"])
    missing = client.get("/api/no-such-route")
    assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"
    wrong = client.delete("/api/assemble")
    assert wrong.status_code == 405 and wrong.json()["code"] == "METHOD_NOT_ALLOWED"

    from preview_app import api_views

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(api_views, "sessions_with_applied", broken)
    quiet = Client(raise_request_exception=False)
    quiet.force_login(users["qa"])
    failed = quiet.get("/api/sessions")
    assert failed.status_code == 500 and failed.json()["code"] == "INTERNAL_ERROR"
    assert "a bug" not in failed.content.decode()  # no internals leak


def test_threads_do_not_share_a_deadline():
    """Two runs in two threads: the slow one is stopped, the quick one answers."""
    answers = {}

    def slow():
        try:
            within_deadline(_spin, 0.3)
        except assembly.AssemblyError as error:
            answers["slow"] = error.code

    thread = threading.Thread(target=slow)
    thread.start()
    answers["quick"] = within_deadline(lambda: sum(range(1000)), 5)
    thread.join(10)
    assert answers == {"slow": "ENGINE_DEADLINE_EXCEEDED", "quick": 499500}
