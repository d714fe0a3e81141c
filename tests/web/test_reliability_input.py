"""The input boundary (quality.md, Bad input): NUL, lone surrogates, NaN / Infinity and deep JSON are refused with 400
naming the field, through the API's JSON, the pages' forms and the importers, and nothing is stored."""

import json

import pytest

from assembly.errors import AssemblyError
from assembly.reading import MAX_JSON_DEPTH, find_unsafe
from assembly.request import parse_request
from preview_app.models import Session, SessionEvent
from tests.web.conftest import client_for


def post_json(client, url, raw: str):
    return client.post(url, data=raw.encode("utf-8", "surrogatepass"), content_type="application/json")


def nested(depth: int):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("raw, path, expected", [
    ('{"name": "a\\ud800b"}', "body.name", "lone surrogates"),
    ('{"name": "a\\u0000b"}', "body.name", "NUL"),
    ('{"name": "x", "host": {"contexts": NaN}}', "body", "finite number"),
    ('{"name": "x", "host": {"contexts": -Infinity}}', "body", "finite number"),
])
def test_api_session_create_refuses_unsafe_json(users, raw, path, expected):
    client = client_for(users["designer"])
    before = Session.objects.count()
    response = post_json(client, "/api/sessions", raw)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "INPUT_UNSAFE" and body["detail"]["path"] == path and expected in body["error"]
    assert Session.objects.count() == before


@pytest.mark.parametrize("field", ["tool_calls", "source"])
def test_api_event_append_refuses_json_nested_too_deep(world, field):
    session = world["session"]
    client = client_for(session.owner)
    before = SessionEvent.objects.filter(session=session).count()
    raw = '{"role": "assistant", "content": "x", "' + field + '": ' + nested(900) + '}'
    response = post_json(client, f"/api/sessions/{session.pk}/events", raw)
    assert response.status_code == 400
    assert f"nested at most {MAX_JSON_DEPTH} levels" in response.json()["error"]
    assert response.json()["detail"]["path"].startswith("body")  # Python's parser gives up before saying where
    assert SessionEvent.objects.filter(session=session).count() == before
    assert client.get(f"/api/sessions/{session.pk}/preview").status_code == 200


def test_the_event_service_refuses_deep_json_given_directly(world):
    from preview_app import services
    from studio.errors import ServiceError

    deep = json.loads(nested(MAX_JSON_DEPTH + 5))
    with pytest.raises(ServiceError) as refused:
        services.event_append(session=world["session"], role="user", content="x", source={"kind": "user", "x": deep})
    assert refused.value.status == 400 and refused.value.detail["path"].startswith("event.source.x")


def test_form_with_nul_is_a_page_naming_the_field(world):
    session = world["session"]
    client = client_for(session.owner)
    response = client.post(f"/sessions/{session.pk}/events/", {"role": "user", "content": "bad\x00text"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "content: expected text without NUL characters" in page and "Nothing was stored" in page
    assert not SessionEvent.objects.filter(session=session, content__startswith="bad").exists()


def test_form_json_field_refuses_nan_and_surrogates(world):
    from django import forms

    from preview_app.forms import JSONListField, JSONObjectField

    with pytest.raises(forms.ValidationError, match="finite number"):
        JSONListField(item="tool calls").clean('[{"id": "a", "n": NaN}]')
    with pytest.raises(forms.ValidationError, match="lone surrogates"):
        JSONObjectField().clean('{"a": "\\udc00"}')
    with pytest.raises(forms.ValidationError, match="nested at most"):
        JSONListField(item="tool calls").clean(nested(MAX_JSON_DEPTH + 1))
    assert JSONObjectField().clean('{"ok": "🙂", "n": 1.5}') == {"ok": "🙂", "n": 1.5}


def test_importer_refuses_a_surrogate_in_a_character_card(users):
    client = client_for(users["admin"])
    raw = '{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "A\\ud83d"}}'
    response = post_json(client, "/api/resources/character/import", raw)
    assert response.status_code == 400 and "lone surrogates" in response.json()["error"]
    assert response.json()["detail"]["path"] == "file.data.name"


def test_chat_import_refuses_a_surrogate_in_a_message(world):
    from preview_app import services
    from studio.errors import ServiceError

    chat = '{"user_name": "U", "character_name": "C"}\n{"mes": "hi \\ud800", "is_user": true, "name": "U"}\n'
    before = SessionEvent.objects.filter(session=world["session"]).count()
    with pytest.raises(ServiceError, match="lone surrogates"):
        services.chat_import(session=world["session"], data=chat.encode())
    assert SessionEvent.objects.filter(session=world["session"]).count() == before


# -------------------------------------------------------------------------------------------------- the engine


def test_engine_request_parser_refuses_the_same():
    for request, where in [({"messages": [{"role": "user", "content": "\ud800"}]}, "messages[0].content"),
                           ({"generation": {"temperature": float("nan")}}, "generation.temperature"),
                           ({"x": json.loads(nested(MAX_JSON_DEPTH + 1))}, "x")]:
        with pytest.raises(AssemblyError) as refused:
            parse_request(request)
        assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
        assert refused.value.detail["path"].startswith(where)


def test_the_unsafe_value_finder_names_the_path():
    assert find_unsafe({"a": [1, 2.5, "ok 🙂"]}) is None
    assert find_unsafe(json.loads(nested(MAX_JSON_DEPTH))) is None
    assert find_unsafe(json.loads(nested(MAX_JSON_DEPTH + 1))).expected.startswith("JSON nested")
    assert find_unsafe({"k\x00": 1}).path == "k\\x00"  # escaped: the path is echoed in the error
