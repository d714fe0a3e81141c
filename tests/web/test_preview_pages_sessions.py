"""The session pages (web.md screen 7): create and edit a session, the history editor (add, edit, delete, reorder;
tool calls and results), apply a strategy (a refusal is shown inline and changes nothing), commit a turn."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from preview_app import services
from preview_app.models import Session, SessionEvent
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook
from tests.web.conftest import client_for


def _form(**overrides):
    data = {"name": "Tavern night", "preset": "", "character": "", "persona": "", "system_prompt_update": "head",
            "native_available": "on", "official_sections": "", "contexts": "", "variables": "", "current_input": "",
            "strategy": "off"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def _history(session):
    return list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("role", "content"))


def test_create_a_session_with_resources_and_host_settings(world, users):
    preset, character = Preset.objects.get(pk=world["preset"]), Character.objects.get(pk=world["character"])
    book, persona = WorldBook.objects.get(), Persona.objects.get()
    response = client_for(users["designer"]).post("/sessions/new/", _form(
        preset=preset.pk, character=character.pk, persona=persona.pk, world_books=[book.pk], core_available="on",
        system_prompt_update="in-history", official_sections='[{"name": "base", "text": "Work in {{cwd}}"}]',
        contexts='[{"name": "sandbox:policy", "text": "No network."}]', variables='{"cwd": "/srv"}',
        current_input="Hello there"))
    session = Session.objects.get(name="Tavern night")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/"
    assert (session.preset, session.character, session.persona, list(session.world_books.all())) == \
        (preset, character, persona, [book])
    assert session.owner == users["designer"] and session.current_input == "Hello there"
    assert session.host["core_available"] is True and session.host["system_prompt_update"] == "in-history"
    assert session.host["official_sections"] == [{"name": "base", "text": "Work in {{cwd}}", "interpolate": True}]
    assert session.host["contexts"] == [{"name": "sandbox:policy", "text": "No network."}]
    assert session.host["variables"] == {"cwd": "/srv"}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("name", "", "This field is required."),
    ("official_sections", "{not json", "Enter a valid JSON."),
    ("official_sections", '{"name": "base"}', "Expected a JSON list of sections."),
    ("official_sections", '[{"name": "base"}]', "host.official_sections.0.text: Field required"),
    ("contexts", '[{"text": "x"}]', "host.contexts.0.name: Field required"),
    ("variables", "[1, 2]", "Variables: expected a JSON object of names and values."),
    ("system_prompt_update", "sometimes", "Select a valid choice."),
    ("preset", "999999", "Select a valid choice."),
])
def test_bad_session_forms_name_the_field_and_store_nothing(world, users, field, value, message):
    before = Session.objects.count()
    response = client_for(users["designer"]).post("/sessions/new/", _form(**{field: value}))
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    # The error sits inside the named field's group.
    group = re.search(rf'<div class="field[^"]*">(?:(?!<div class="field).)*name="{field}"', html, re.S)
    assert group is not None and "errorlist" in group.group(0)
    # and the top of the form lists it, linked to the field, before the first field
    summary = re.search(r'<div class="refusal" role="alert" data-form-errors>(.*?)</div>', html, re.S)
    assert summary is not None and html.index("data-form-errors") < html.index(f'name="{field}"')
    assert re.search(rf'<li><a href="#id_{field}">[^<]+</a></li>', summary.group(1)), summary.group(1)
    assert Session.objects.count() == before


def test_edit_settings_and_a_bad_edit_changes_nothing(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{session.pk}/edit/", _form(name="Renamed", core_available="on",
                                                                   current_input="Next question"))
    assert response.status_code == 302
    session.refresh_from_db()
    assert (session.name, session.current_input, session.preset, list(session.world_books.all())) == \
        ("Renamed", "Next question", None, [])
    bad = client.post(f"/sessions/{session.pk}/edit/", _form(name="Again", variables="[]"))
    assert bad.status_code == 400 and b"Variables: expected a JSON object" in bad.content
    assert Session.objects.get(pk=session.pk).name == "Renamed"


def test_history_editor_add_edit_reorder_delete(world, users):
    session = world["session"]
    url = f"/sessions/{session.pk}"
    client = client_for(users["designer"])
    for role, content in (("assistant", "Second"), ("user", "Third")):
        response = client.post(f"{url}/events/", {"new-role": role, "new-content": content})
        assert response.status_code == 302
    assert _history(session) == [("user", "Earlier"), ("assistant", "Second"), ("user", "Third")]
    ids = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("message_id", flat=True))

    assert client.post(f"{url}/events/3/move/", {"direction": "up"}).status_code == 302
    assert _history(session) == [("user", "Earlier"), ("user", "Third"), ("assistant", "Second")]
    assert client.post(f"{url}/events/1/move/", {"direction": "up"}).status_code == 302  # already first: stays
    assert client.post(f"{url}/events/1/move/", {"direction": "down"}).status_code == 302
    assert _history(session) == [("user", "Third"), ("user", "Earlier"), ("assistant", "Second")]
    # Ids travel with their messages.
    assert list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("message_id", flat=True)) \
        == [ids[2], ids[0], ids[1]]

    page = client.get(f"{url}/").content.decode()
    assert 'name="e2-content"' not in page and 'href="?edit=2#event-2"' in page
    page = client.get(f"{url}/?edit=2").content.decode()
    assert re.search(r'<textarea name="e2-content"[^>]*>\s*Earlier</textarea>', page)
    assert client.post(f"{url}/events/2/", {"e2-role": "system", "e2-content": "Edited"}).status_code == 302
    assert _history(session) == [("user", "Third"), ("system", "Edited"), ("assistant", "Second")]
    assert client.post(f"{url}/events/1/delete/").status_code == 302
    assert _history(session) == [("system", "Edited"), ("assistant", "Second")]
    # The preview follows the edited history.
    html = client.get(f"{url}/preview/").content.decode()
    assert html.index("Edited") < html.index("Second")
    missing = client.post(f"{url}/events/99/delete/")
    assert missing.status_code == 404


def test_tool_calls_and_results(world, users):
    session = world["session"]
    url = f"/sessions/{session.pk}"
    client = client_for(users["designer"])
    calls = [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    assert client.post(f"{url}/events/", {"new-role": "assistant", "new-content": "",
                                          "new-tool_calls": json.dumps(calls)}).status_code == 302
    assert client.post(f"{url}/events/", {"new-role": "tool", "new-content": "42",
                                          "new-tool_call_id": "call_1"}).status_code == 302
    call, result = SessionEvent.objects.filter(session=session).order_by("seq")[1:]
    assert (call.tool_calls, result.tool_call_id) == (calls, "call_1")
    detail = client.get(f"{url}/").content.decode()
    assert "<code>call_1</code> lookup" in detail
    # The preview sends the call and its result: the row carries the tool fields.
    html = client.get(f"{url}/preview/?strategy=builtin-st").content.decode()
    assert 'data-role="tool"' in html and "<code>call_1</code>" in html
    exported = client.get(f"{url}/preview/messages.json?strategy=builtin-st").json()["messages"]
    assert {"role": "tool", "content": "42", "tool_call_id": "call_1"} in exported
    assert any(m.get("tool_calls") == calls for m in exported)


@pytest.mark.parametrize(("data", "message"), [
    ({"new-role": "tool", "new-content": "42"}, "A tool result needs the id of the call it answers."),
    ({"new-role": "user", "new-tool_calls": '[{"id": "c"}]'}, "Only assistant messages make tool calls."),
    ({"new-role": "assistant", "new-tool_calls": '[{"name": "x"}]'}, "Each tool call must be an object with"),
    ({"new-role": "assistant", "new-tool_calls": "[oops"}, "Enter a valid JSON."),
    ({"new-role": "narrator", "new-content": "x"}, "Select a valid choice."),
])
def test_bad_messages_are_refused_with_the_reason(world, users, data, message):
    session = world["session"]
    before = _history(session)
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/events/", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _history(session) == before


def test_apply_a_strategy_and_a_refused_apply_is_shown_inline(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    builtin = Strategy.objects.get(slug="builtin-st")
    assert client.post(f"/sessions/{session.pk}/apply/", {"choice": "builtin-st"}).status_code == 302
    session.refresh_from_db()
    assert (session.applied_strategy, session.applied_revision) == (builtin, builtin.revisions.first())

    services.session_update(session=session, host={"core_available": False})
    before = Session.objects.filter(pk=session.pk).values("applied_strategy", "applied_revision",
                                                          "applied_document").get()
    response = client.post(f"/sessions/{session.pk}/apply/", {"choice": "builtin-st"})
    assert response.status_code == 409
    html = response.content.decode()
    assert 'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in html and "The applied strategy was not changed." in html
    assert Session.objects.filter(pk=session.pk).values("applied_strategy", "applied_revision",
                                                        "applied_document").get() == before

    assert client.post(f"/sessions/{session.pk}/apply/", {"choice": "off"}).status_code == 302
    assert Session.objects.get(pk=session.pk).applied_document is None
    named = f"{world['own'].slug}@{world['revision'].revision}"
    assert client.post(f"/sessions/{session.pk}/apply/", {"choice": named}).status_code == 302
    assert Session.objects.get(pk=session.pk).applied_revision == world["revision"]
    unknown = client.post(f"/sessions/{session.pk}/apply/", {"choice": "no-such"})
    assert unknown.status_code == 404 and b'data-code="NOT_FOUND"' in unknown.content


def test_commit_a_turn_appends_the_durable_events_and_the_reply(world, users):
    """The preview lists what sending records (system prompt record, the input, the pre-step message); committing
    appends exactly those, then the reply, and clears the input."""
    session = world["session"]
    client = client_for(users["designer"])
    preview = client.get(f"/sessions/{session.pk}/preview/").content.decode()
    kinds = re.findall(r'data-event-kind="([^"]+)"', preview)
    last = SessionEvent.objects.filter(session=session).order_by("-seq").first().seq
    response = client.post(f"/sessions/{session.pk}/commit/", {
        "reply": "Hello to you.", "expected_seq": last, "next": f"/sessions/{session.pk}/preview/"})
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/preview/"
    added = list(SessionEvent.objects.filter(session=session, seq__gt=last).order_by("seq"))
    assert [(e.source or {}).get("kind", e.role) for e in added] == [*kinds, "assistant"]
    assert [(e.role, e.content) for e in added][-1] == ("assistant", "Hello to you.")
    assert ("user", "Hello") in [(e.role, e.content) for e in added]
    assert Session.objects.get(pk=session.pk).current_input == ""


def test_a_stale_commit_is_a_conflict_shown_inline(world, users):
    session = world["session"]
    before = _history(session)
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/commit/",
                                                  {"reply": "Late", "expected_seq": 0})
    assert response.status_code == 409
    assert b'data-code="SESSION_HISTORY_CONFLICT"' in response.content
    assert _history(session) == before


def test_commit_never_redirects_off_site(world, users):
    session = world["session"]
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/commit/",
                                                  {"reply": "Hi", "next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/#history"


NOTE_FIELDS = {"note_content": "Keep {{char}} terse.", "note_position": "in_chat", "note_depth": "1",
               "note_role": "system", "note_interval": "1"}


def test_an_authors_note_is_stored_and_placed_at_its_depth(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{session.pk}/edit/", _form(name=session.name, core_available="on",
                                                                   preset=world["preset"], character=world["character"],
                                                                   current_input="Hello",
                                                                   **NOTE_FIELDS))
    assert response.status_code == 302, response.content.decode()[:2000]
    session.refresh_from_db()
    assert session.author_note == {"content": "Keep {{char}} terse.", "position": "in_chat", "depth": 1,
                                   "role": "system", "interval": 1, "allow_wi_scan": False}
    page = client.get(f"/sessions/{session.pk}/")
    assert "Keep {{char}} terse." in page.content.decode() and "depth 1, system" in page.content.decode()
    # SillyTavern inserts the note (macros replaced) one message from the end: between the history and the input.
    result = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()
    chat = [(m["role"], m["content"]) for m in result["request"]["messages"] if m["role"] != "system"
            or m["content"] == "Keep Ada terse."]
    assert chat == [("user", "Earlier"), ("system", "Keep Ada terse."), ("user", "Hello")]


def test_a_blank_note_means_none_and_the_native_backend_names_an_unused_note(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    client.post(f"/sessions/{session.pk}/edit/", _form(name=session.name, core_available="on", **NOTE_FIELDS))
    result = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-native-slots").json()
    assert {"code": "CHAT_EXTENSION_UNUSED", "resource": "author_note", "name": "Author's note"} in result["diagnostics"]
    assert all("terse" not in m["content"] for m in result["request"]["messages"])
    client.post(f"/sessions/{session.pk}/edit/", _form(name=session.name, core_available="on",
                                                        **{**NOTE_FIELDS, "note_content": "   "}))
    session.refresh_from_db()
    assert session.author_note is None


@pytest.mark.parametrize(("field", "value", "message"), [
    ("note_depth", "-1", "Ensure this value is greater than or equal to 0."),
    ("note_interval", "often", "Enter a whole number."),
    ("note_position", "top", "Select a valid choice."),
    ("note_role", "tool", "Select a valid choice."),
])
def test_a_bad_note_setting_names_its_field_and_changes_nothing(world, users, field, value, message):
    session = world["session"]
    response = client_for(users["designer"]).post(
        f"/sessions/{session.pk}/edit/", _form(name="Renamed", **{**NOTE_FIELDS, field: value}))
    assert response.status_code == 400
    html = response.content.decode()
    group = re.search(rf'<div class="field[^"]*">(?:(?!<div class="field).)*name="{field}"', html, re.S)
    assert group is not None and message in group.group(0)
    session.refresh_from_db()
    assert session.name != "Renamed" and session.author_note is None


@pytest.fixture
def greeter(users):
    from strategies_app import services as strategy_services

    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Mira", "first_mes": "Evening, {{user}}. Mind the steps."}}
    return Character.objects.get(pk=strategy_services.character_import(user=users["admin"], data=card).id)


def test_a_new_session_can_start_with_the_characters_greeting(world, users, greeter):
    response = client_for(users["designer"]).post("/sessions/new/", _form(name="Greeted", character=greeter.pk,
                                                                          greeting="on"))
    assert response.status_code == 302
    session = Session.objects.get(name="Greeted")
    [event] = SessionEvent.objects.filter(session=session)
    assert (event.seq, event.role, event.content, event.name, event.source) == (
        1, "assistant", "Evening, {{user}}. Mind the steps.", "Mira",
        {"kind": "greeting", "character": greeter.pk, "greeting": 0})
    # the edit form has no greeting switch: the greeting belongs to the start of a chat
    assert 'name="greeting"' not in client_for(users["designer"]).get(f"/sessions/{session.pk}/").content.decode()


@pytest.mark.parametrize("character", ["none", "no greeting"])
def test_a_greeting_without_one_to_use_is_refused_and_nothing_is_stored(world, users, character):
    before = Session.objects.count()
    chosen = "" if character == "none" else str(world["character"])  # the world's card has no first message
    response = client_for(users["designer"]).post("/sessions/new/", _form(name="Greeted", character=chosen,
                                                                          greeting="on"))
    assert response.status_code == 400
    html = response.content.decode()
    group = re.search(r'<div class="field check"><input[^>]*name="greeting".*?</div>', html, re.S)
    assert group is not None and "Choose a character whose card has a first message." in group.group(0)
    assert Session.objects.count() == before


def test_extension_prompts_are_stored_and_injected_by_builtin_st(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    prompts = '[{"key": "1_memory", "content": "Summary: {{char}} met Sam.", "position": "in_chat", "depth": 0}]'
    response = client.post(f"/sessions/{session.pk}/edit/", _form(
        name=session.name, core_available="on", preset=world["preset"], character=world["character"],
        current_input="Hello", extension_prompts=prompts))
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.extension_prompts == [{"key": "1_memory", "content": "Summary: {{char}} met Sam.",
                                          "position": "in_chat", "depth": 0, "role": "system", "scan": False}]
    # depth 0: after the last chat message, macros expanded (sillytavern.md §4.5)
    result = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()
    texts = [m["content"] for m in result["request"]["messages"]]
    assert texts[texts.index("Hello") + 1] == "Summary: Ada met Sam."
    assert "1_memory" in client.get(f"/sessions/{session.pk}/").content.decode()


@pytest.mark.parametrize(("value", "message"), [
    ('{"key": "x"}', "Expected a JSON list of extension prompts."),
    ('[{"content": "no key"}]', "extension_prompts[0].key"),
    ('[{"key": "a", "position": "sideways"}]', "extension_prompts[0].position"),
    ('[{"key": "a"}, {"key": "a"}]', "a key used once"),
])
def test_bad_extension_prompts_name_the_problem_and_change_nothing(world, users, value, message):
    session = world["session"]
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/",
                                                  _form(name="Renamed", extension_prompts=value))
    assert response.status_code == 400
    html = response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    group = re.search(r'<div class="field[^"]*">(?:(?!<div class="field).)*name="extension_prompts".*?</textarea>',
                      html, re.S)
    assert group is not None and message in group.group(0)
    session.refresh_from_db()
    assert session.name != "Renamed" and session.extension_prompts == []


@pytest.fixture
def greeted_card(users):
    from strategies_app import services as strategy_services

    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Mira", "first_mes": "Evening.", "alternate_greetings": ["Storm's coming.", " ", "Tea?"]}}
    return Character.objects.get(pk=strategy_services.character_import(user=users["admin"], data=card).id)


def test_an_empty_session_starts_with_a_chosen_greeting(world, users, greeted_card):
    session = services.session_create(user=users["designer"], name="Fresh", character=greeted_card)
    client = client_for(users["designer"])
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    options = re.findall(r'<option value="(\d+)">([^<]*)</option>', re.search(
        r'<select id="greeting" name="greeting">(.*?)</select>', page, re.S).group(1))
    # the blank alternate (2) is not offered; the numbers are SillyTavern's swipe positions
    assert options == [("0", "First message: Evening."), ("1", "Alternate greeting 1: Storm&#x27;s coming."),
                       ("3", "Alternate greeting 3: Tea?")]
    response = client.post(f"/sessions/{session.pk}/greet/", {"greeting": "3"})
    assert response.status_code == 302 and response["Location"].endswith("#event-1")
    assert _history(session) == [("assistant", "Tea?")]
    assert 'id="greet-form"' not in client.get(f"/sessions/{session.pk}/").content.decode()


@pytest.mark.parametrize(("greeting", "status", "message"), [
    ("2", 400, "greeting: expected the number of one of the card&#x27;s greetings: 0, 1, 3"),
    ("x", 400, "greeting: expected a whole number from 0 to"),
    ("0", 409, "a greeting starts an empty history, and this one has messages"),
])
def test_a_refused_greeting_says_why_and_adds_nothing(world, users, greeted_card, greeting, status, message):
    session = services.session_create(user=users["designer"], name="Fresh", character=greeted_card)
    if status == 409:
        services.event_append(session=session, role="user", content="Already talking")
    before = _history(session)
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/greet/", {"greeting": greeting})
    assert response.status_code == status and message in response.content.decode()
    assert _history(session) == before


def test_only_editors_greet(world, users, greeted_card):
    session = services.session_create(user=users["designer"], name="Fresh", character=greeted_card)
    assert client_for(users["qa"]).post(f"/sessions/{session.pk}/greet/", {"greeting": "0"}).status_code == 403
    assert 'id="greet-form"' not in client_for(users["qa"]).get(f"/sessions/{session.pk}/").content.decode()
    no_card = services.session_create(user=users["designer"], name="No card")
    refused = client_for(users["designer"]).post(f"/sessions/{no_card.pk}/greet/", {"greeting": "0"})
    assert refused.status_code == 400 and "a session character whose card has a greeting" in refused.content.decode()
    assert _history(session) == [] and _history(no_card) == []


CHAT_FILE = Path(__file__).parents[1] / "engine" / "fixtures" / "st_chat_lighthouse.jsonl"


def _upload(name="chat.jsonl", data=None):
    return SimpleUploadedFile(name, CHAT_FILE.read_bytes() if data is None else data, "application/jsonl")


def test_a_sillytavern_chat_is_appended_to_the_history(world, users):
    session = world["session"]
    before = _history(session)
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{session.pk}/chat/import/", {"file": _upload(), "author_note": "1"})
    assert response.status_code == 302
    assert _history(session) == before + [
        ("assistant", "*The door groans open.* Tide caught you, did it?"), ("user", "It did. May I wait here?"),
        ("system", "The wind rises outside."), ("assistant", "Sit by the stove.\nDon't touch the lamp.")]
    session.refresh_from_db()
    assert session.author_note["content"] == "[Mira keeps her answers short.]" and session.author_note["depth"] == 3
    page = client.get(response["Location"]).content.decode()
    assert "Imported 4 messages. 1 hidden message was left out." in page
    # imported narrator messages are history the preview sends, not host records
    result = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()
    assert "The wind rises outside." in [m["content"] for m in result["request"]["messages"]]


def test_a_refused_chat_file_says_why_and_stores_nothing(world, users):
    session = world["session"]
    before, note = _history(session), session.author_note
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{session.pk}/chat/import/",
                           {"file": _upload(data=b'{"user_name": "A"}\n{"is_user": true}')})
    assert response.status_code == 400
    assert "line 2.mes: expected a string (required)" in response.content.decode()
    empty = client.post(f"/sessions/{session.pk}/chat/import/", {"file": _upload(data=b'{"user_name": "A"}')})
    assert empty.status_code == 400 and "a chat with at least one message" in empty.content.decode()
    assert client.post(f"/sessions/{session.pk}/chat/import/", {}).status_code == 400
    session.refresh_from_db()
    assert _history(session) == before and session.author_note == note
    assert client_for(users["qa"]).post(f"/sessions/{session.pk}/chat/import/",
                                        {"file": _upload()}).status_code == 403
    assert _history(session) == before


def test_export_as_a_sillytavern_chat_reads_back(world, users):
    from assembly.sillytavern.chat import import_chat

    session = world["session"]
    client = client_for(users["designer"])
    client.post(f"/sessions/{session.pk}/chat/import/", {"file": _upload(), "author_note": "1"})
    # a committed turn also records the host's records (system prompt, log, pre-step copies, snapshots): none of
    # them belongs in a chat file
    services.turn_commit(session=session, reply="Fine.")
    response = client_for(users["qa"]).get(f"/sessions/{session.pk}/chat.jsonl")
    assert response.status_code == 200 and response["Content-Disposition"].endswith('.jsonl"')
    log = import_chat(response.content)
    assert (log.user_name, log.character_name) == ("Sam", "Ada")
    assert [(m.role, m.content) for m in log.messages] == [
        (e.role, e.content) for e in SessionEvent.objects.filter(session=session).order_by("seq")
        if (e.source or {}).get("kind") not in ("request-assembly", "system-prompt", "runtime-context",
                                                "dsh-prompt-assembler", "assembly-snapshot")]
    assert ("assistant", "Fine.") in [(m.role, m.content) for m in log.messages]
    assert log.author_note.content == "[Mira keeps her answers short.]"


def test_a_copy_keeps_everything_but_the_goldens_and_changes_nothing(world, users):
    session = world["session"]
    session = services.session_update(session=session, author_note={"content": "Note."},
                                      world_info_activation="keywords")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/copy/")
    copy = Session.objects.exclude(pk=session.pk).get(name=f"{session.name} (copy)")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{copy.pk}/"
    for field in ("preset_id", "character_id", "persona_id", "host", "current_input", "author_note",
                  "world_info_activation", "applied_strategy_id", "applied_revision_id", "applied_document"):
        assert getattr(copy, field) == getattr(session, field), field
    assert list(copy.world_books.all()) == list(session.world_books.all())
    assert _history(copy) == _history(session) and copy.goldens.count() == 0 and session.goldens.count() == 1
    assert copy.owner == users["designer"]
    assert client_for(users["qa"]).post(f"/sessions/{session.pk}/copy/").status_code == 403
    # the copy is independent: editing it leaves the original alone
    services.event_append(session=copy, role="user", content="Only in the copy")
    assert ("user", "Only in the copy") not in _history(session)


def test_an_oversized_chat_file_is_refused_before_it_is_read(world, users):
    session = world["session"]
    before = _history(session)
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/chat/import/",
                                                  {"file": _upload(data=b" " * (5 * 1024 * 1024 + 1))})
    assert response.status_code == 413 and "file: expected at most 5 MiB" in response.content.decode()
    assert _history(session) == before


def test_a_session_without_goldens_can_be_deleted_and_one_with_goldens_cannot(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    refused = client.post(f"/sessions/{session.pk}/delete/")
    assert refused.status_code == 409 and "it has 1 golden snapshot(s)" in refused.content.decode()
    assert "only an admin can delete them (on the Goldens page)" in refused.content.decode()
    assert Session.objects.filter(pk=session.pk).exists()
    copy = services.session_copy(session=session, user=users["designer"])
    events = SessionEvent.objects.filter(session=copy).count()
    assert events > 0
    assert client_for(users["qa"]).post(f"/sessions/{copy.pk}/delete/").status_code == 403
    done = client.post(f"/sessions/{copy.pk}/delete/")
    assert done.status_code == 302 and done["Location"] == "/sessions/"
    assert not Session.objects.filter(pk=copy.pk).exists()
    assert not SessionEvent.objects.filter(session_id=copy.pk).exists()
    assert Session.objects.filter(pk=session.pk).exists() and _history(session)


def test_the_new_session_form_offers_the_strategy_builtin_st_first_on_an_advanced_host(world, users):
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()
    assert re.search(r'<input type="radio" name="strategy" value="builtin-st"[^>]*checked', html)
    assert re.search(r'name="core_available"[^>]*checked', html)
    for slug in ("builtin-st", "builtin-native-slots", "builtin-native-roles", "off"):
        assert f'value="{slug}"' in html
    assert "Needs the host&#x27;s advanced backend" in html and "works on any host" in html


def test_a_session_created_with_builtin_st_previews_at_once(world, users):
    client = client_for(users["designer"])
    response = client.post("/sessions/new/", _form(strategy="builtin-st", core_available="on",
                                                   current_input="Hello"))
    session = Session.objects.get(name="Tavern night")
    assert response.status_code == 302 and session.applied_strategy.slug == "builtin-st"
    assert session.applied_revision is not None and session.host["core_available"] is True
    preview = client.get(f"/sessions/{session.pk}/preview/")
    assert preview.status_code == 200 and b"data-assembly-off" not in preview.content
    assert b'data-placement="st"' in preview.content


def test_builtin_st_without_the_advanced_backend_names_the_field_and_stores_nothing(world, users):
    before = Session.objects.count()
    response = client_for(users["designer"]).post("/sessions/new/", _form(strategy="builtin-st"))
    assert response.status_code == 400 and Session.objects.count() == before
    assert "Preset slots first (advanced) needs the host&#x27;s advanced backend" in response.content.decode()
    bad = client_for(users["designer"]).post("/sessions/new/", _form(strategy="nope"))
    assert bad.status_code == 400 and Session.objects.count() == before


def test_a_session_with_assembly_off_offers_apply_a_strategy_on_its_preview(world, users):
    client = client_for(users["designer"])
    client.post("/sessions/new/", _form(strategy="off"))
    session = Session.objects.get(name="Tavern night")
    preview = client.get(f"/sessions/{session.pk}/preview/")
    html = preview.content.decode()
    assert preview.status_code == 200 and "data-apply-strategy" in html and "Apply a strategy" in html
    assert f'name="next" value="/sessions/{session.pk}/preview/"' in html
    applied = client.post(f"/sessions/{session.pk}/apply/", {"choice": "builtin-native-slots",
                                                             "next": f"/sessions/{session.pk}/preview/"})
    assert applied.status_code == 302 and applied["Location"] == f"/sessions/{session.pk}/preview/"
    assert Session.objects.get(pk=session.pk).applied_strategy.slug == "builtin-native-slots"


@pytest.mark.parametrize("content", ["", "   \n"])
def test_an_empty_message_is_refused_and_nothing_is_stored(world, users, content):
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    answer = client_for(users["designer"]).post(f"/sessions/{session.pk}/events/",
                                                {"new-role": "user", "new-content": content})
    assert answer.status_code == 400
    assert "A message needs some text" in answer.content.decode()
    assert SessionEvent.objects.filter(session=session).count() == before


@pytest.mark.parametrize(("language", "name", "old"), [("en", "advanced backend (core)", "Core backend"),
                                                       ("zh-hans", "进阶后端（core）", "Core 后端")])
def test_the_session_settings_name_the_core_backend_as_the_glossary_does(world, users, language, name, old):
    page = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/",
                                       HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'href="/glossary/#backend"' in page and f">{name}</a></dt>" in page and old not in page
