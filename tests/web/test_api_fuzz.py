"""Every JSON write route on arbitrary input: never a 500, and a refused request stores nothing (quality.md, Bad
input)."""

import json

import pytest
from django.apps import apps as django_apps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.web.conftest import client_for

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=25,
)
# Bodies shaped like what the routes expect, with arbitrary values, reach deeper than pure noise.
shaped = st.fixed_dictionaries({}, optional={
    "strategy": json_values | st.sampled_from(["builtin-st", "builtin-native-slots", "nope"]),
    "revision": json_values, "version": json_values, "draft": json_values, "document": json_values,
    "role": st.sampled_from(["user", "assistant", "tool", "system", "robot"]) | json_values,
    "content": json_values, "reply": json_values, "expected_seq": json_values, "note": json_values,
    "format": st.just("dsh-tavern-request-assembly"), "name": json_values, "rules": json_values,
    "session": json_values, "resources": json_values, "conversation": json_values, "host": json_values,
    "author_note": json_values | st.fixed_dictionaries({}, optional={
        "content": json_values, "position": json_values, "depth": json_values, "role": json_values,
        "interval": json_values}),
    "extension_prompts": json_values | st.lists(st.dictionaries(
        st.sampled_from(["key", "content", "position", "depth", "role", "scan"]), json_values, max_size=6),
        max_size=3),
    "world_info_activation": json_values | st.sampled_from(["book", "keywords", "all"]),
    "card_lore": json_values, "greeting": json_values, "character": json_values, "chat_lore": json_values,
})
bodies = shaped | json_values


def row_counts():
    return {m._meta.label: m.objects.count() for m in django_apps.get_models()
            if m._meta.app_label in ("strategies_app", "preview_app")}


ROUTES = [
    ("post", "/api/assemble"),
    ("post", "/api/strategies"),
    ("put", "/api/strategies/{own}/draft"),
    ("post", "/api/strategies/{own}/revisions"),
    ("post", "/api/strategies/{own}/copy"),
    ("post", "/api/resources/preset/import"),
    ("post", "/api/resources/worldbook/import"),
    ("post", "/api/resources/character/import"),
    ("post", "/api/resources/persona/import"),
    ("post", "/api/sessions"),
    ("patch", "/api/sessions/{session}"),
    ("post", "/api/sessions/{session}/events"),
    ("put", "/api/sessions/{session}/selection"),
    ("post", "/api/sessions/{session}/turns"),
    ("post", "/api/goldens"),
]
ALLOWED = {200, 201, 400, 401, 403, 404, 405, 409, 413, 415}


@pytest.mark.parametrize(("method", "route"), ROUTES)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=bodies)
def test_json_routes_never_fail_with_a_500_and_refusals_store_nothing(world, users, method, route, body):
    url = route.format(own=world["own"].slug, session=world["session"].pk)
    client = client_for(users["admin"])
    before = row_counts()
    response = getattr(client, method)(url, data=json.dumps(body), content_type="application/json")
    assert response.status_code in ALLOWED, (response.status_code, response.content[:300])
    payload = response.json()
    if response.status_code >= 400:
        assert payload["ok"] is False and payload["code"] and payload["error"], payload
        assert row_counts() == before, (url, body)
