"""Sessions: applying a strategy copies a revision's document (a refused apply changes nothing), drafts never
change a session, previews, committing turns and editing the history."""

import json

import pytest

from assembly.strategy import normalize_strategy, strategy_revision
from preview_app import services
from preview_app.models import Session, SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for

CORE_DOC = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "Core only",
            "rules": [{"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]}
# Native, but the history rule is disabled: reference A.6 refuses it (ASSEMBLY_NATIVE_UNSUPPORTED).
NATIVE_NO_HISTORY = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "No history", "backend": "native",
                     "placement": "native-roles",
                     "rules": [{"id": "history", "kind": "history", "enabled": False},
                               {"id": "input", "kind": "input"}]}


def saved(user, document):
    strategy = strategy_services.strategy_create(user=user, name=document["name"], document=document)
    strategy_services.revision_save(strategy=strategy, user=user, note="")
    return strategy


def put_selection(client, session, body):
    return client.put(f"/api/sessions/{session.pk}/selection", json.dumps(body), content_type="application/json")


@pytest.fixture
def native_session(users):
    """A designer's session on a host without the core backend, with the default built-in applied."""
    session = services.session_create(user=users["designer"], name="Native host", host={"core_available": False},
                                      current_input="Hi")
    return services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))


def stored_selection(session):
    """The stored selection exactly as the database holds it (ids and the JSON text of the document)."""
    row = Session.objects.filter(pk=session.pk).values("applied_strategy", "applied_revision").get()
    document = Session.objects.get(pk=session.pk).applied_document
    return row, json.dumps(document, sort_keys=False)


@pytest.mark.parametrize(("document", "code"), [(CORE_DOC, "REQUEST_ASSEMBLY_CORE_REQUIRED"),
                                                (NATIVE_NO_HISTORY, "ASSEMBLY_NATIVE_UNSUPPORTED")])
def test_a_refused_apply_is_409_and_leaves_the_selection_byte_for_byte(users, native_session, document, code):
    refused_strategy = saved(users["designer"], document)
    before = stored_selection(native_session)
    response = put_selection(client_for(users["designer"]), native_session,
                             {"strategy": refused_strategy.slug, "revision": None})
    assert response.status_code == 409
    error = response.json()
    assert (error["ok"], error["code"], error["status"]) == (False, code, 409)
    assert stored_selection(native_session) == before
    assert before[0]["applied_strategy"] == Strategy.objects.get(slug="builtin-native-slots").pk


def test_apply_copies_the_revision_and_a_later_draft_never_changes_the_session(users, native_session):
    designer = users["designer"]
    strategy = saved(designer, {**NATIVE_NO_HISTORY, "name": "Good", "rules": [
        {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]})
    first_sha = strategy.revisions.get().revision
    response = put_selection(client_for(designer), native_session, {"strategy": strategy.slug, "revision": None})
    assert response.status_code == 200
    assert response.json() == {"ok": True, "applied": {"strategy": strategy.slug, "revision": first_sha}}

    strategy_services.draft_update(strategy=strategy, user=designer, document={**strategy.draft, "name": "Changed"},
                                   expected_version=1)
    strategy_services.revision_save(strategy=strategy, user=designer, note="second")
    session = Session.objects.get(pk=native_session.pk)
    assert session.applied_revision.revision == first_sha
    assert session.applied_document == strategy.revisions.get(revision=first_sha).document
    assert session.applied_document["name"] == "Good"

    # Applying a named (older) revision, then turning assembly off.
    assert put_selection(client_for(designer), session, {"strategy": strategy.slug, "revision": first_sha}
                         ).json()["applied"]["revision"] == first_sha
    off = put_selection(client_for(designer), session, {"strategy": None})
    assert off.json() == {"ok": True, "applied": None}
    assert Session.objects.get(pk=session.pk).applied_document is None


def test_apply_needs_a_saved_revision_and_a_known_one(users, native_session):
    unsaved = strategy_services.strategy_create(user=users["designer"], name="Unsaved")
    client = client_for(users["designer"])
    before = stored_selection(native_session)
    response = put_selection(client, native_session, {"strategy": unsaved.slug, "revision": None})
    assert response.status_code == 409 and response.json()["code"] == "REVISION_NOT_FOUND"
    response = put_selection(client, native_session, {"strategy": "builtin-st", "revision": "0" * 64})
    assert response.status_code == 404
    response = put_selection(client, native_session, {"strategy": 5})
    assert response.status_code == 400 and response.json()["detail"]["path"] == "strategy"
    assert stored_selection(native_session) == before


def test_preview_uses_the_applied_strategy_or_the_one_asked_for(users, native_session):
    client = client_for(users["qa"])
    applied = client.get(f"/api/sessions/{native_session.pk}/preview").json()
    assert applied["strategy"]["id"] == "builtin-native-slots" and applied["backend"] == "native"
    assert [m["content"] for m in applied["request"]["messages"] if m["delivery"] == "input"] == ["Hi"]
    refused = client.get(f"/api/sessions/{native_session.pk}/preview?strategy=builtin-st")
    assert refused.status_code == 409 and refused.json()["code"] == "REQUEST_ASSEMBLY_CORE_REQUIRED"
    builtin = Strategy.objects.get(slug="builtin-native-roles")
    sha = builtin.revisions.get().revision
    other = client.get(f"/api/sessions/{native_session.pk}/preview?strategy=builtin-native-roles&revision={sha}")
    zh, en = builtin.name.split(" / ")  # the built-in's bilingual name, one language in the answer's `name`
    assert other.json()["strategy"] == {"id": "builtin-native-roles", "name": en, "names": {"en": en, "zh-hans": zh},
                                        "revision": sha}


def test_preview_of_a_session_with_assembly_off_asks_for_a_strategy(users):
    session = services.session_create(user=users["designer"], name="Off")
    response = client_for(users["qa"]).get(f"/api/sessions/{session.pk}/preview")
    assert response.status_code == 409 and response.json()["code"] == "SESSION_ASSEMBLY_OFF"


def test_preview_query_count_does_not_grow_with_the_history(users, native_session, django_assert_max_num_queries):
    client = client_for(users["qa"])
    url = f"/api/sessions/{native_session.pk}/preview"
    for number in range(3):
        services.event_append(session=native_session, role="user", content=f"m{number}")
    with django_assert_max_num_queries(12) as few:
        assert client.get(url).status_code == 200
    for number in range(60):
        services.event_append(session=native_session, role="assistant" if number % 2 else "user", content=f"n{number}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(url).status_code == 200


def test_committing_a_turn_appends_the_durable_events_and_the_reply(users, native_session):
    client = client_for(users["designer"])
    preview = client.get(f"/api/sessions/{native_session.pk}/preview").json()
    response = client.post(f"/api/sessions/{native_session.pk}/turns", {"reply": "Hello, traveller.",
                                                                        "expected_seq": 0},
                           content_type="application/json")
    assert response.status_code == 201
    events = list(SessionEvent.objects.filter(session=native_session).order_by("seq"))
    expected = [(e["role"], e["content"]) for e in preview["durable_events"]] + [("assistant", "Hello, traveller.")]
    assert [(e.role, e.content) for e in events] == expected
    assert ("user", "Hi") in expected  # the input is recorded
    assert Session.objects.get(pk=native_session.pk).current_input == ""
    # A second commit from the same starting point is refused, not doubled.
    stale = client.post(f"/api/sessions/{native_session.pk}/turns", {"reply": "again", "expected_seq": 0},
                        content_type="application/json")
    assert stale.status_code == 409 and stale.json()["code"] == "SESSION_HISTORY_CONFLICT"
    assert SessionEvent.objects.filter(session=native_session).count() == len(expected)


def test_a_tool_message_without_the_call_it_answers_is_refused_and_stores_nothing(users, native_session):
    client = client_for(users["designer"])
    base = f"/api/sessions/{native_session.pk}"
    refused = client.post(f"{base}/events", {"role": "tool", "content": "42"}, content_type="application/json")
    assert refused.status_code == 400 and refused.json()["detail"]["path"] == "tool_call_id"
    assert not SessionEvent.objects.filter(session=native_session).exists()
    added = client.post(f"{base}/events", {"role": "tool", "content": "42", "tool_call_id": "c1"},
                        content_type="application/json")
    seq = added.json()["seq"]
    cleared = client.put(f"{base}/events/{seq}", {"tool_call_id": ""}, content_type="application/json")
    assert cleared.status_code == 400 and cleared.json()["detail"]["path"] == "tool_call_id"
    assert SessionEvent.objects.get(session=native_session, seq=seq).tool_call_id == "c1"


def test_history_editing_and_session_fields(users, native_session):
    client = client_for(users["designer"])
    base = f"/api/sessions/{native_session.pk}"
    added = client.post(f"{base}/events", {"role": "tool", "content": "42", "tool_call_id": "c1"},
                        content_type="application/json")
    assert added.status_code == 201
    seq = added.json()["seq"]
    assert client.put(f"{base}/events/{seq}", {"content": "43"}, content_type="application/json").status_code == 200
    history = client.get(base).json()["history"]
    assert [(h["role"], h["content"], h["tool_call_id"]) for h in history] == [("tool", "43", "c1")]
    assert client.post(f"{base}/events", {"role": "narrator", "content": "x"},
                       content_type="application/json").json()["detail"]["path"] == "role"
    assert client.delete(f"{base}/events/{seq}").status_code == 200
    assert client.get(base).json()["history"] == []

    patched = client.patch(base, {"name": "Renamed", "host": {"core_available": True, "variables": {"cwd": "/"}}},
                           content_type="application/json")
    assert patched.status_code == 200
    assert patched.json()["name"] == "Renamed" and patched.json()["host"]["variables"] == {"cwd": "/"}
    bad = client.patch(base, {"host": {"core_available": "maybe"}}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"].startswith("host.core_available:")
    missing = client.patch(base, {"preset": 999}, content_type="application/json")
    assert missing.status_code == 404
    assert Session.objects.get(pk=native_session.pk).name == "Renamed"


def test_golden_approve_and_check(users, native_session):
    qa = client_for(users["qa"])
    approved = qa.post("/api/goldens", {"session": native_session.pk}, content_type="application/json")
    assert approved.status_code == 201
    sha = strategy_revision(normalize_strategy(Strategy.objects.get(slug="builtin-native-slots").draft))
    assert approved.json()["revision"] == sha and approved.json()["approved_by"] == "qa-user"
    [row] = qa.get("/api/goldens").json()
    assert row["status"] == "matches" and row["diff"] == []
    services.session_update(session=native_session, current_input="Something else")
    [row] = qa.get("/api/goldens").json()
    assert row["status"] == "differs"
    assert any(line.startswith("-") and '"Hi"' in line for line in row["diff"])
    assert any(line.startswith("+") and '"Something else"' in line for line in row["diff"])


def test_several_world_books_are_sent_together_even_with_the_same_uids(users):
    from strategies_app.models import WorldBook

    ids = []
    for name, text in (("North", "Snow falls."), ("South", "Sand blows.")):
        report = strategy_services.worldbook_import(user=users["admin"], name=name, data={"entries": {"1": {
            "uid": 1, "key": [], "comment": name, "content": text, "position": 0, "constant": True}}})
        ids.append(report.id)
    session = services.session_create(user=users["designer"], name="Two books", current_input="Hi",
                                      world_books=WorldBook.objects.filter(pk__in=ids))
    result = client_for(users["qa"]).get(f"/api/sessions/{session.pk}/preview?strategy=builtin-native-slots")
    assert result.status_code == 200, result.content
    lore = [n["text"] for n in result.json()["nodes"] if n["module"] == "worldbook"]
    assert sorted(lore) == ["Sand blows.", "Snow falls."]


def test_the_api_sets_and_clears_an_authors_note_and_refuses_a_bad_one(users, native_session):
    client = client_for(users["designer"])
    base = f"/api/sessions/{native_session.pk}"
    note = {"content": "Stay in character.", "position": "before_main", "role": "user"}
    patched = client.patch(base, {"author_note": note}, content_type="application/json")
    assert patched.status_code == 200
    assert patched.json()["author_note"] == {"content": "Stay in character.", "position": "before_main", "depth": 4,
                                             "role": "user", "interval": 1, "allow_wi_scan": False}
    bad = client.patch(base, {"author_note": {"content": "x", "depth": "deep"}}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["detail"]["path"] == "author_note.depth"
    bad = client.patch(base, {"author_note": "x"}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["detail"]["path"] == "author_note"
    assert Session.objects.get(pk=native_session.pk).author_note["content"] == "Stay in character."
    assert client.patch(base, {"author_note": None}, content_type="application/json").json()["author_note"] is None


def test_the_api_creates_a_session_with_the_greeting_or_refuses_naming_the_field(users):
    from strategies_app.models import Character

    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Mira", "first_mes": "Evening.", "alternate_greetings": ["Storm's coming."]}}
    greeter = strategy_services.character_import(user=users["admin"], data=card).id
    client = client_for(users["designer"])
    created = client.post("/api/sessions", {"name": "Greeted", "character": greeter, "greeting": True},
                          content_type="application/json")
    assert created.status_code == 201
    history = client.get(f"/api/sessions/{created.json()['id']}").json()["history"]
    assert [(h["role"], h["content"], h["source"]["kind"]) for h in history] == [("assistant", "Evening.", "greeting")]
    alternate = client.post("/api/sessions", {"name": "Alt", "character": greeter, "greeting": 1},
                            content_type="application/json")
    history = client.get(f"/api/sessions/{alternate.json()['id']}").json()["history"]
    assert [(h["content"], h["source"]["greeting"]) for h in history] == [("Storm's coming.", 1)]
    before = Session.objects.count()
    for body, expected in (({"name": "No card", "greeting": True}, "a session character whose card has a greeting"),
                           ({"name": "Odd", "character": greeter, "greeting": "yes"},
                            "true, false or the number of one of the card's greetings"),
                           ({"name": "Far", "character": greeter, "greeting": 5},
                            "the number of one of the card's greetings: 0, 1")):
        refused = client.post("/api/sessions", body, content_type="application/json")
        assert refused.status_code == 400 and refused.json()["detail"] == {"path": "greeting", "expected": expected}
    assert Session.objects.count() == before
    assert Character.objects.get(pk=greeter).first_mes == "Evening."


def test_the_api_sets_extension_prompts_and_refuses_bad_ones(users, native_session):
    client = client_for(users["designer"])
    base = f"/api/sessions/{native_session.pk}"
    patched = client.patch(base, {"extension_prompts": [{"key": "3_vectors", "content": "Recalled: a storm."}]},
                           content_type="application/json")
    assert patched.status_code == 200
    assert patched.json()["extension_prompts"] == [{"key": "3_vectors", "content": "Recalled: a storm.",
                                                    "position": "in_chat", "depth": 0, "role": "system",
                                                    "scan": False}]
    bad = client.patch(base, {"extension_prompts": [{"key": "x", "depth": -1}]}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["detail"]["path"] == "extension_prompts[0].depth"
    assert client.patch(base, {"extension_prompts": "x"}, content_type="application/json").json()["detail"][
        "path"] == "extension_prompts"
    assert Session.objects.get(pk=native_session.pk).extension_prompts[0]["key"] == "3_vectors"
    # the standard backend cannot place them and says so
    preview = client.get(f"{base}/preview").json()
    assert {"code": "CHAT_EXTENSION_UNUSED", "resource": "extension_prompts", "name": "3_vectors"} in \
        preview["diagnostics"]


def test_the_editor_names_the_rule_a_standard_backend_refusal_is_about(users, native_session):
    """The engine's line for a rule the standard backend cannot run may not name it; its detail does, and the
    editor's refusal shows it."""
    strategy = saved(users["designer"], NATIVE_NO_HISTORY)
    page = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={native_session.pk}")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-code="ASSEMBLY_NATIVE_UNSUPPORTED"' in html
    assert 'data-rule-id="history"' in html and "<code>history</code>" in html
