"""The API's error shape (web.md "HTTP API", engine.md §1): every refusal is
{"ok": false, "code", "status", "error", "detail"} with the HTTP status of the code, for each documented status."""

import json

import pytest
from django.test import Client

from preview_app.models import Session
from tests.web.conftest import client_for, csrf_client_for

KEYS = {"ok", "code", "status", "error", "detail"}


def assert_error(response, status, code):
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    error = response.json()
    assert set(error) == KEYS and error["ok"] is False
    assert (error["status"], error["code"]) == (status, code)
    assert isinstance(error["error"], str) and error["error"] and isinstance(error["detail"], dict)
    return error


def post_json(client, url, body, **extra):
    return client.post(url, json.dumps(body) if not isinstance(body, bytes) else body,
                       content_type="application/json", **extra)


def test_400_names_the_field(users):
    error = assert_error(post_json(client_for(users["qa"]), "/api/assemble", {"tokenizer": "gpt2"}), 400,
                         "ASSEMBLY_REQUEST_INVALID")
    assert error["error"].startswith("tokenizer: ")
    error = assert_error(post_json(client_for(users["qa"]), "/api/assemble", b"{not json"), 400, "INPUT_NOT_JSON")
    assert error["detail"]["path"] == "body"


def test_401_for_anonymous_callers():
    assert_error(Client().post("/api/assemble", "{}", content_type="application/json"), 401, "NOT_AUTHENTICATED")


def test_403_for_a_missing_permission(users):
    error = assert_error(post_json(client_for(users["qa"]), "/api/strategies", {}), 403, "FORBIDDEN")
    assert "may not import strategies" in error["error"] and "edit_strategy" in error["detail"]["permission"]


def test_403_for_a_write_without_the_csrf_token(users):
    client = csrf_client_for(users["designer"])
    error = assert_error(post_json(client, "/api/sessions", {"name": "x"}), 403, "CSRF_FAILED")
    assert "X-CSRFToken" in error["error"]
    client.get("/")  # the page sets the csrftoken cookie, as a browser session would have it
    token = client.cookies["csrftoken"].value
    assert post_json(client, "/api/sessions", {"name": "x"}, HTTP_X_CSRFTOKEN=token).status_code == 201


def test_reads_need_no_csrf_token(users):
    assert csrf_client_for(users["qa"]).get("/api/strategies").status_code == 200


def test_404_for_an_unknown_object(users):
    error = assert_error(client_for(users["qa"]).get("/api/strategies/nope"), 404, "NOT_FOUND")
    assert "'nope'" in error["error"]
    assert_error(client_for(users["qa"]).get("/api/sessions/999/preview"), 404, "NOT_FOUND")
    assert_error(client_for(users["qa"]).get("/api/resources/spaceship/1/export"), 404, "NOT_FOUND")


def test_405_for_a_method_the_route_does_not_take(users):
    response = client_for(users["qa"]).delete("/api/strategies")
    error = assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response["Allow"] == "GET, POST" and error["detail"] == {"allowed": ["GET", "POST"]}


def test_409_from_the_engine_and_from_services(users):
    request = {"strategy": "builtin-st", "host": {"core_available": False}}
    assert_error(post_json(client_for(users["qa"]), "/api/assemble", request), 409, "REQUEST_ASSEMBLY_CORE_REQUIRED")
    error = assert_error(client_for(users["admin"]).put("/api/strategies/builtin-st/draft", "{}",
                                                        content_type="application/json"), 409,
                         "STRATEGY_READ_ONLY")
    assert "copy it" in error["error"]


def test_413_for_a_body_over_5_mib(users):
    body = json.dumps({"strategy": "builtin-st", "padding": "x" * (5 * 1024 * 1024)})
    assert_error(post_json(client_for(users["qa"]), "/api/assemble", body.encode()), 413, "PAYLOAD_TOO_LARGE")


def test_413_for_oversized_custom_text(users):
    document = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "Big",
                "rules": [{"id": "c", "kind": "custom", "text": "x" * (512 * 1024 + 1)}]}
    error = assert_error(post_json(client_for(users["designer"]), "/api/strategies", document), 413,
                         "STRATEGY_INVALID")
    assert error["detail"]["path"] == "rules[0].text"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_415_for_a_body_that_is_not_json(users, content_type):
    response = client_for(users["qa"]).post("/api/assemble", "strategy=builtin-st", content_type=content_type)
    error = assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert content_type in error["error"]


def test_a_refused_write_stores_nothing(users):
    client = client_for(users["designer"])
    assert_error(post_json(client, "/api/sessions", {"name": "x", "host": {"contexts": "nope"}}), 400,
                 "INPUT_INVALID")
    assert not Session.objects.exists()
