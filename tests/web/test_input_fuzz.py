"""Hypothesis over every write route and importer with NUL, lone surrogates and NaN / Infinity in the alphabet. Never a
500; a body carrying one of them is a 4xx that names the field and stores nothing (quality.md, Bad input). On SQLite
here; `make test-postgres` runs this same file on PostgreSQL (it runs tests/web), where NUL used to be a 500."""

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly.reading import find_unsafe
from tests.web.conftest import client_for
from tests.web.test_api_fuzz import ALLOWED, ROUTES, row_counts

BAD_CHARS = ["\x00", "\ud800", "\udfff", "\ud83d"]
texts = st.text(alphabet=st.sampled_from(["a", " ", "é", "名", "🙂", *BAD_CHARS]), max_size=8)
numbers = st.integers(-3, 100) | st.floats(allow_nan=True, allow_infinity=True)
values = st.recursive(st.none() | st.booleans() | numbers | texts,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                      max_leaves=12)
shaped = st.fixed_dictionaries({}, optional={
    "name": values, "content": values, "role": st.sampled_from(["user", "assistant"]) | values, "reply": values,
    "current_input": values, "host": values, "source": values, "tool_calls": values, "draft": values,
    "note": values, "messages": st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": values}),
                                         max_size=2)})
bodies = shaped | values
FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def unsafe(value) -> bool:
    """As the server reads it: a high + low surrogate pair sent as two escapes arrives as one real character."""
    return find_unsafe(json.loads(json.dumps(value))) is not None


def encoded(body) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \ud800 escapes, NaN as NaN


@pytest.mark.parametrize(("method", "route"), ROUTES)
@FAST
@given(body=bodies)
def test_json_routes_refuse_unsafe_values_and_store_nothing(world, users, method, route, body):
    url = route.format(own=world["own"].slug, session=world["session"].pk)
    client = client_for(users["admin"])
    before = row_counts()
    response = getattr(client, method)(url, data=encoded(body), content_type="application/json")
    assert response.status_code in ALLOWED, (response.status_code, response.content[:300])
    if unsafe(body):
        assert response.status_code == 400, (url, body, response.content[:300])
        payload = response.json()
        assert payload["detail"]["path"].startswith(("body", "file")) and "expected" in payload["error"]
        assert row_counts() == before


IMPORT_KINDS = ["preset", "worldbook", "character", "persona", "regex"]


@pytest.mark.parametrize("kind", IMPORT_KINDS)
@FAST
@given(body=bodies)
def test_importers_refuse_unsafe_files(world, users, kind, body):
    client = client_for(users["admin"])
    before = row_counts()
    upload = io.BytesIO(encoded(body))
    upload.name = f"fuzz.{kind}.json"
    api = client.post(f"/api/resources/{kind}/import", {"file": upload})
    assert api.status_code in ALLOWED, (api.status_code, api.content[:300])
    upload.seek(0)
    page = client.post("/resources/import/", {"kind": kind, "file": upload})
    assert page.status_code in ALLOWED, (page.status_code, page.content[:300])
    if unsafe(body):
        assert api.status_code == 400 and api.json()["detail"]["path"].startswith("file"), api.content[:300]
        assert page.status_code == 400
        assert row_counts() == before


@FAST
@given(messages=st.lists(st.fixed_dictionaries({"mes": values, "is_user": st.booleans(), "name": texts}),
                         min_size=1, max_size=3))
def test_chat_import_refuses_unsafe_messages(world, messages):
    session = world["session"]
    client = client_for(session.owner)
    before = row_counts()
    lines = [json.dumps({"user_name": "U", "character_name": "C"})] + [json.dumps(m) for m in messages]
    upload = io.BytesIO("\n".join(lines).encode())
    upload.name = "fuzz.jsonl"
    response = client.post(f"/sessions/{session.pk}/chat/import/", {"file": upload})
    assert response.status_code in ALLOWED | {302}, (response.status_code, response.content[:300])
    if unsafe(messages):
        assert response.status_code == 400
        assert row_counts() == before


FORM_ROUTES = [
    ("/sessions/new/", {"name": "F"}),
    ("/sessions/{session}/edit/", {"name": "F"}),
    ("/sessions/{session}/events/", {"new-role": "user", "role": "user"}),
    ("/sessions/{session}/commit/", {}),
    ("/strategies/new/", {}),
    ("/strategies/{own}/settings/", {}),
    ("/strategies/{own}/revisions/save/", {}),
]
# Form posts travel as UTF-8, which cannot carry a lone surrogate; in JSON textareas they arrive as \ud800 escapes.
form_texts = st.lists(st.sampled_from(["a", " ", "名", "\x00", "\\ud800", "NaN", "[", "]", '"']),
                      max_size=10).map("".join)


@pytest.mark.parametrize(("route", "fixed"), FORM_ROUTES)
@FAST
@given(text=form_texts)
def test_form_routes_refuse_nul_and_unsafe_json(world, users, route, fixed, text):
    url = route.format(own=world["own"].slug, session=world["session"].pk)
    client = client_for(users["admin"] if "strategies" in route else world["session"].owner)
    before = row_counts()
    fields = {"name": text, "content": text, "new-content": text, "current_input": text, "reply": text,
              "note": text, "variables": text, "contexts": text, "tool_calls": text, "new-tool_calls": text,
              **fixed}
    response = client.post(url, fields)
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if "\x00" in text:
        assert response.status_code == 400, response.content[:300]
        assert "NUL" in response.content.decode()
        assert row_counts() == before
