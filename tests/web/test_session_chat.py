"""The session page is a chat (web.md screen 7). The composer keeps the typed message and previews its request in
place; a commit appends it with the typed reply (or alone); host records stand apart, collapsed, saying what they
are and what they do to later requests. Works as plain forms; htmx swaps only the chat."""

import re

import pytest

from preview_app import services
from preview_app.models import Session, SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Character, Preset, Strategy
from tests.web.conftest import client_for


@pytest.fixture
def chat(users):
    preset = strategy_services.preset_import(user=users["admin"], data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}, name="Lamp")
    session = services.session_create(user=users["designer"], name="Chat", preset=Preset.objects.get(pk=preset.id))
    return services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))


def _say(client, session, **data):
    return client.post(f"/sessions/{session.pk}/say/", {"expected_seq": "", **data})


def _history(session):
    return list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("role", "content"))


def test_the_composer_is_on_the_page_with_a_content_textarea(users, chat):
    html = client_for(users["designer"]).get(f"/sessions/{chat.pk}/").content.decode()
    composer = html[html.index("data-composer"):]
    assert '<textarea id="composer-content" name="content"' in composer
    assert 'name="action" value="preview"' in composer and 'name="action" value="commit"' in composer
    assert f'action="/sessions/{chat.pk}/say/"' in composer and f'hx-post="/sessions/{chat.pk}/say/"' in composer
    assert "data-composer" not in client_for(users["qa"]).get(f"/sessions/{chat.pk}/").content.decode()


def test_preview_keeps_the_message_and_shows_its_request_in_place(users, chat):
    client = client_for(users["designer"])
    response = _say(client, chat, content="Is the lamp lit?", action="preview")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{chat.pk}/?preview=1#composer"
    assert Session.objects.get(pk=chat.pk).current_input == "Is the lamp lit?" and _history(chat) == []
    html = client.get(response["Location"]).content.decode()
    preview = html[html.index("data-composer-preview"):]
    assert "Is the lamp lit?" in preview and "You keep the lighthouse." in preview
    assert re.search(r'data-history-status="appended"', preview)
    assert 'name="content" rows="3" data-composer-input>Is the lamp lit?</textarea>' in html


def test_commit_appends_the_message_and_the_typed_reply_or_the_message_alone(users, chat):
    client = client_for(users["designer"])
    assert _say(client, chat, content="Hello?", reply="Evening.", action="commit").status_code == 302
    history = _history(chat)
    assert ("user", "Hello?") in history and history[-1] == ("assistant", "Evening.")
    count = len(history)
    last = SessionEvent.objects.filter(session=chat).order_by("-seq").first().seq
    assert _say(client, chat, content="Still there?", reply="", action="commit",
                expected_seq=str(last)).status_code == 302
    after = _history(chat)
    assert after[-1] == ("user", "Still there?") or ("user", "Still there?") in after[count:]
    assert all(role != "assistant" for role, _ in after[count:])
    assert Session.objects.get(pk=chat.pk).current_input == ""


def test_a_stale_commit_is_refused_in_the_composer_and_stores_nothing(users, chat):
    client = client_for(users["designer"])
    services.event_append(session=chat, role="user", content="Earlier")
    response = _say(client, chat, content="New", reply="Hi", action="commit", expected_seq="0")
    assert response.status_code == 409
    html = response.content.decode()
    assert 'data-code="SESSION_HISTORY_CONFLICT"' in html[html.index("data-composer"):]
    assert _history(chat) == [("user", "Earlier")] and Session.objects.get(pk=chat.pk).current_input == ""


def test_with_htmx_the_answer_is_the_page_whose_chat_is_swapped(users, chat):
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{chat.pk}/say/", {"content": "Hi", "action": "preview"},
                           HTTP_HX_REQUEST="true", follow=True)
    assert response.status_code == 200 and b'id="chat"' in response.content
    assert b"data-composer-preview" in response.content


def test_host_records_stand_apart_collapsed_with_what_they_do(users, chat):
    client = client_for(users["designer"])
    _say(client, chat, content="Hello?", reply="Evening.", action="commit")
    html = client.get(f"/sessions/{chat.pk}/").content.decode()
    records = re.findall(r'<li class="event[^"]*host-record"[^>]*data-host-record="([^"]+)"', html)
    assert records, "a standard-backend commit records the host's messages"
    assert 'class="host-record-body"><summary>' in html and " open" not in html.split("host-record-body")[1][:40]
    assert "every later request" in html
    bubbles = re.findall(r'<li class="event role-(\w+) bubble"', html)
    assert bubbles.count("user") == 1 and bubbles.count("assistant") == 1


def test_the_greeting_is_a_chat_bubble(users, chat):
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ada", "first_mes": "Welcome aboard."}}
    character = strategy_services.character_import(user=users["admin"], data=card)
    session = services.session_create(user=users["designer"], name="Greeted", greeting=True,
                                      character=Character.objects.get(pk=character.id))
    html = client_for(users["designer"]).get(f"/sessions/{session.pk}/").content.decode()
    assert re.search(r'<li class="event role-assistant bubble"[^>]*>', html) and "Welcome aboard." in html



def test_the_sillytavern_export_carries_the_users_chat_only_and_reimports_the_same(users, chat):
    """A SillyTavern chat holds what the user and the character said; the host's pre-step copies and records are
    the host's own and never come back as typed user turns."""
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(users["designer"])
    _say(client, chat, content="Hello?", reply="Evening.", action="commit")
    kinds = {(e.source or {}).get("kind") for e in SessionEvent.objects.filter(session=chat)}
    assert "dsh-prompt-assembler" in kinds, "the standard backend keeps pre-step copies in the history"
    exported = client.get(f"/sessions/{chat.pk}/chat.jsonl").content.decode()
    lines = [json.loads(line) for line in exported.splitlines()[1:]]
    assert [(line["is_user"], line["mes"]) for line in lines] == [(True, "Hello?"), (False, "Evening.")]
    fresh = services.session_create(user=users["designer"], name="Again", preset=chat.preset)
    client.post(f"/sessions/{fresh.pk}/chat/import/", {
        "file": SimpleUploadedFile("chat.jsonl", exported.encode(), "application/jsonl")})
    assert _history(fresh) == [("user", "Hello?"), ("assistant", "Evening.")]


def test_the_preview_names_a_pre_step_copy_as_a_host_record(users, chat):
    client = client_for(users["designer"])
    _say(client, chat, content="Hello?", reply="Evening.", action="commit")
    html = client.get(f"/sessions/{chat.pk}/preview/").content.decode()
    summaries = [re.sub(r"<[^>]+>", "", s)  # the word "trust" links the glossary
                 for s in re.findall(r'<details class="parts"[^>]*><summary>(.*?)</summary>', html)]
    assert any("host record: a pre-step message" in s for s in summaries)
    assert any("trust: end user" in s for s in summaries)  # the typed "Hello?" is still the user's
    assert 'href="/glossary/#trust"' in html


def test_an_imported_sillytavern_chat_exports_line_for_line_as_written(users, chat):
    """send_date, swipes, extra, hidden lines, the header and chat_metadata (variables, timed world info) come back;
    an edit made in the studio is exported as edited."""
    import json
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile

    written = (Path(__file__).parents[1] / "engine" / "fixtures" / "st_chat_lighthouse.jsonl").read_text("utf-8")
    client = client_for(users["designer"])
    fresh = services.session_create(user=users["designer"], name="Lighthouse", preset=chat.preset)
    client.post(f"/sessions/{fresh.pk}/chat/import/", {
        "file": SimpleUploadedFile("chat.jsonl", written.encode(), "application/jsonl")})
    exported = client.get(f"/sessions/{fresh.pk}/chat.jsonl").content.decode()
    as_written = [json.loads(line) for line in written.splitlines()]
    assert [json.loads(line) for line in exported.splitlines()] == as_written
    first = SessionEvent.objects.filter(session=fresh).order_by("seq").first()
    services.event_update(event=first, role="assistant", content="*The door opens.*", name=first.name)
    edited = [json.loads(line) for line in client.get(f"/sessions/{fresh.pk}/chat.jsonl").content.decode().splitlines()]
    assert edited[1]["mes"] == "*The door opens.*" and edited[1]["swipes"] == as_written[1]["swipes"]
    assert edited[2:] == as_written[2:]


def test_a_sillytavern_session_keeps_dshs_host_settings_folded_under_their_own_name(users, chat):
    """A SillyTavern strategy reads none of dsh's host settings: its session speaks SillyTavern's words, the dsh
    settings fold away with a link to the glossary; a standard-backend session shows them as before."""
    client = client_for(users["designer"])
    standard = client.get(f"/sessions/{chat.pk}/").content.decode()
    assert "data-dsh-host-settings" not in standard and "data-dsh-host-json" not in standard
    chat = services.session_update(session=chat, host={**chat.host, "core_available": True})
    services.strategy_apply(session=chat, strategy=Strategy.objects.get(slug="builtin-st"))
    html = client.get(f"/sessions/{chat.pk}/").content.decode()
    assert "data-dsh-host-settings" in html and "data-dsh-host-json" in html
    assert 'href="/glossary/#backend"' in html
