"""The route x role table (web.md "Users and permissions", quality.md "Django"): every route, anonymous and each
role, the expected status. Reads are open to every logged-in role; writes follow the table: designers edit their own
strategies and sessions, QA approves goldens and changes nothing else, admins do everything; built-ins are read-only
for everyone. Anonymous callers get the login redirect on pages and a 401 JSON on the API."""

import json

import pytest

from tests.web.conftest import client_for

A2 = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "Imported",
      "rules": [{"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]}
ASSEMBLE = {"strategy": "builtin-native-slots",
            "conversation": {"input": [{"role": "user", "content": "hi"}]}}
PRESET_FILE = {"prompts": [{"identifier": "main", "content": "x"}]}


def _spare_user(*, active: bool = True) -> int:
    from django.contrib.auth import get_user_model
    return get_user_model().objects.get_or_create(username="spare-user" if active else "inactive-user",
                                                  defaults={"is_active": active})[0].pk


def _regex_script() -> int:
    from strategies_app.models import RegexScript

    return RegexScript.objects.create(name="s", find_regex="/a/g", placement=[1]).pk


def _draft(world, key):
    strategy = world[key]
    return {"version": strategy.version, "draft": {**strategy.draft, "name": "Renamed"}}


# (label, method, url(world), body(world) or None, {anonymous, qa, designer, admin})
ROUTES = [
    ("home", "get", lambda w: "/", None, (302, 200, 200, 200)),
    ("import page", "get", lambda w: "/resources/import/", None, (302, 403, 403, 200)),
    ("resource page", "get", lambda w: "/resources/", None, (302, 200, 200, 200)),
    ("users page", "get", lambda w: "/users/", None, (302, 403, 403, 200)),
    ("user add", "post", lambda w: "/users/add/", lambda w: {"username": "new-one", "password": "a long pass 42 x",
                                                            "role": "qa"}, (302, 403, 403, 400)),
    # the users page takes forms: a JSON body reaches an admin as a 400 naming the missing field
    ("user role", "post", lambda w: f"/users/{_spare_user()}/role/", lambda w: {"role": "qa"}, (302, 403, 403, 400)),
    ("user deactivate", "post", lambda w: f"/users/{_spare_user()}/deactivate/", lambda w: {},
     (302, 403, 403, 302)),
    ("user reactivate", "post", lambda w: f"/users/{_spare_user(active=False)}/reactivate/", lambda w: {},
     (302, 403, 403, 302)),
    ("django admin", "get", lambda w: "/admin/", None, (302, 302, 302, 200)),
    ("glossary", "get", lambda w: "/glossary/", None, (302, 200, 200, 200)),
    ("django admin login", "get", lambda w: "/admin/login/", None, (200, 403, 403, 302)),
    ("assemble", "post", lambda w: "/api/assemble", lambda w: ASSEMBLE, (401, 200, 200, 200)),
    ("strategy list", "get", lambda w: "/api/strategies", None, (401, 200, 200, 200)),
    ("strategy import", "post", lambda w: "/api/strategies", lambda w: A2, (401, 403, 201, 201)),
    ("strategy import dry run", "post", lambda w: "/api/strategies?dry_run=1", lambda w: A2, (401, 403, 200, 200)),
    ("strategy detail", "get", lambda w: f"/api/strategies/{w['own'].slug}", None, (401, 200, 200, 200)),
    ("strategy export", "get", lambda w: f"/api/strategies/{w['own'].slug}?format=export", None,
     (401, 200, 200, 200)),
    ("built-in detail", "get", lambda w: "/api/strategies/builtin-st", None, (401, 200, 200, 200)),
    ("own draft edit", "put", lambda w: f"/api/strategies/{w['own'].slug}/draft", lambda w: _draft(w, "own"),
     (401, 403, 200, 200)),
    ("other's draft edit", "put", lambda w: f"/api/strategies/{w['other'].slug}/draft",
     lambda w: _draft(w, "other"), (401, 403, 403, 200)),
    ("built-in draft edit", "put", lambda w: "/api/strategies/builtin-st/draft",
     lambda w: {"version": 1, "draft": A2}, (401, 403, 409, 409)),
    ("revision list", "get", lambda w: f"/api/strategies/{w['own'].slug}/revisions", None, (401, 200, 200, 200)),
    ("revision save", "post", lambda w: f"/api/strategies/{w['own'].slug}/revisions", lambda w: {"note": "n"},
     (401, 403, 200, 200)),  # 200: the draft is unchanged since the fixture's revision, so that one is returned
    ("copy", "post", lambda w: "/api/strategies/builtin-st/copy", lambda w: {}, (401, 403, 201, 201)),
    ("resource list", "get", lambda w: "/api/resources", None, (401, 200, 200, 200)),
    ("resource import", "post", lambda w: "/api/resources/preset/import", lambda w: PRESET_FILE,
     (401, 403, 403, 201)),
    ("regex script import", "post", lambda w: "/api/resources/regex/import",
     lambda w: {"scriptName": "s", "findRegex": "/a/g", "placement": [1]}, (401, 403, 403, 201)),
    ("regex script export", "get", lambda w: f"/api/resources/regex/{_regex_script()}/export", None,
     (401, 200, 200, 200)),
    ("regex script toggle", "post", lambda w: f"/resources/regex/{_regex_script()}/toggle/", lambda w: {},
     (302, 403, 403, 302)),  # a form: anonymous to the login page, admins back to the resources page
    ("resource export", "get", lambda w: f"/api/resources/preset/{w['preset']}/export", None, (401, 200, 200, 200)),
    ("preset editor", "get", lambda w: f"/resources/presets/{w['preset']}/edit/", None, (302, 200, 200, 200)),
    ("card export png", "get", lambda w: f"/api/resources/character/{w['character']}/export?format=png", None,
     (401, 200, 200, 200)),
    ("avatar", "get", lambda w: f"/api/resources/character/{w['character']}/avatar", None, (401, 200, 200, 200)),
    ("session list", "get", lambda w: "/api/sessions", None, (401, 200, 200, 200)),
    ("session create", "post", lambda w: "/api/sessions", lambda w: {"name": "New"}, (401, 403, 201, 201)),
    ("session detail", "get", lambda w: f"/api/sessions/{w['session'].pk}", None, (401, 200, 200, 200)),
    ("session edit", "patch", lambda w: f"/api/sessions/{w['session'].pk}", lambda w: {"current_input": "Hi"},
     (401, 403, 200, 200)),
    ("event append", "post", lambda w: f"/api/sessions/{w['session'].pk}/events",
     lambda w: {"role": "assistant", "content": "Yes"}, (401, 403, 201, 201)),
    ("event edit", "put", lambda w: f"/api/sessions/{w['session'].pk}/events/{w['event'].seq}",
     lambda w: {"content": "Edited"}, (401, 403, 200, 200)),
    ("event delete", "delete", lambda w: f"/api/sessions/{w['session'].pk}/events/{w['event'].seq}", None,
     (401, 403, 200, 200)),
    ("preview", "get", lambda w: f"/api/sessions/{w['session'].pk}/preview", None, (401, 200, 200, 200)),
    ("preview of another strategy", "get",
     lambda w: f"/api/sessions/{w['session'].pk}/preview?strategy=builtin-st", None, (401, 200, 200, 200)),
    ("selection", "put", lambda w: f"/api/sessions/{w['session'].pk}/selection",
     lambda w: {"strategy": "builtin-st", "revision": None}, (401, 403, 200, 200)),
    ("turn commit", "post", lambda w: f"/api/sessions/{w['session'].pk}/turns", lambda w: {"reply": "Hello back"},
     (401, 403, 201, 201)),
    ("chance reroll", "post", lambda w: f"/api/sessions/{w['session'].pk}/reroll", lambda w: {},
     (401, 403, 200, 200)),
    ("parity check", "post", lambda w: f"/api/sessions/{w['session'].pk}/parity", lambda w: {"sent": []},
     (401, 200, 200, 200)),  # a read: every role may check, nothing is stored
    ("golden list", "get", lambda w: "/api/goldens", None, (401, 200, 200, 200)),
    ("golden approve", "post", lambda w: "/api/goldens", lambda w: {"session": w["session"].pk},
     (401, 201, 403, 201)),
    ("golden detail", "get", lambda w: f"/api/goldens/{w['golden'].pk}", None, (401, 200, 200, 200)),
    ("golden delete", "delete", lambda w: f"/api/goldens/{w['golden'].pk}", None, (401, 403, 403, 200)),
]
CALLERS = ("anonymous", "qa", "designer", "admin")


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("label", "method", "url", "body", "expected"), ROUTES, ids=[r[0] for r in ROUTES])
def test_route_by_role(world, users, caller, label, method, url, body, expected):
    client = client_for(None if caller == "anonymous" else users[caller])
    kwargs = {}
    if body is not None:
        kwargs = {"data": json.dumps(body(world)), "content_type": "application/json"}
    response = getattr(client, method)(url(world), **kwargs)
    assert response.status_code == expected[CALLERS.index(caller)], response.content[:300]
    if url(world).startswith("/api/") and response.status_code >= 400:
        error = response.json()
        assert error["ok"] is False and error["status"] == response.status_code


def test_every_url_pattern_is_in_the_table(world):
    """A new route without a row here fails this test."""
    from django.urls import get_resolver

    tested = {(url(world).split("?")[0]) for _, _, url, _, _ in ROUTES}
    resolver = get_resolver()
    covered = {resolver.resolve(path).url_name for path in tested}
    names = {p.name for p in resolver.url_patterns if getattr(p, "name", None)}
    assert names - covered == {"login", "logout", "set_language"}  # covered by test_accounts.py


def test_anonymous_api_answers_401_json_not_a_redirect(client):
    response = client.get("/api/strategies")
    assert response.status_code == 401
    assert response.json() == {"ok": False, "code": "NOT_AUTHENTICATED", "status": 401,
                               "error": "log in first (/accounts/login/)", "detail": {}}


def test_qa_forged_writes_change_nothing(world, users):
    """QA's forged POST/PUT get 403 and leave the draft, the selection and the history as they were."""
    session, own = world["session"], world["own"]
    before = (own.draft, own.version, session.applied_document, list(session.events.values_list("content")))
    client = client_for(users["qa"])
    assert client.put(f"/api/strategies/{own.slug}/draft", _draft(world, "own"),
                      content_type="application/json").status_code == 403
    assert client.put(f"/api/sessions/{session.pk}/selection", {"strategy": None},
                      content_type="application/json").status_code == 403
    assert client.post(f"/api/sessions/{session.pk}/turns", {"reply": "x"},
                       content_type="application/json").status_code == 403
    own.refresh_from_db()
    session.refresh_from_db()
    assert before == (own.draft, own.version, session.applied_document, list(session.events.values_list("content")))
