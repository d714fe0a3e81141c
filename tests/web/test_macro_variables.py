"""Macro variables in the session (engine.md §10): a session keeps its chat's variables where SillyTavern keeps
them (the chat file's `chat_metadata.variables`), global ones (SillyTavern's `extension_settings.variables.global`)
per session, and the macro engine it runs ("legacy" or Macros 2.0); the preview shows each variable before and after
the generation; bad input is refused naming the field and stores nothing; a chat's variables survive import ->
export.

Expected values follow SillyTavern's variable macros (scripts/variables.js, engine.md §10): `{{setvar}}` stores the
text it is given, `{{incvar}}` stores a number one higher and is replaced by it, `{{getvar}}` / `{{getglobalvar}}`
read; the chat's typed message is evaluated before the prompts. Only Macros 2.0 knows `{{if}}` and the `.name`
shorthand of a chat variable; the legacy engine leaves them as written."""

import html as markup
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from preview_app import services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Preset
from tests.web.conftest import client_for
from tests.web.main_prompt_sessions import main_prompt_session

MAIN = ("HP {{getvar::hp}}, day {{getglobalvar::day}}. "
        "{{if .mood}}mood is {{.mood}}{{else}}no mood{{/if}}")
TYPED = "{{setvar::mood::calm}}{{incvar::hp}} Attack!"
HEADER = {"user_name": "Alex", "character_name": "Zoe", "create_date": "2026-11-30@12h00m00s",
          "chat_metadata": {"variables": {"hp": 3, "flag": "on"}, "tainted": False, "lastInContextMessageId": 1}}
LINES = [{"name": "Zoe", "is_user": False, "is_system": False, "send_date": "2026-11-30T12:00:00.000Z",
          "mes": "The gate is shut.", "extra": {}},
         {"name": "Alex", "is_user": True, "is_system": False, "send_date": "2026-11-30T12:01:00.000Z",
          "mes": "I knock.", "extra": {}}]


def _chat_file(header=None):
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header or HEADER, *LINES]).encode()


@pytest.fixture
def session(users):
    return main_prompt_session(users, content=MAIN, name="Gate")


def _import(user, session, data):
    return client_for(user).post(f"/sessions/{session.pk}/chat/import/",
                                 {"file": SimpleUploadedFile("gate.jsonl", data)})


def _edit_data(session, **changes):
    """The session form as the page fills it, with `changes`."""
    from preview_app.forms import SessionForm

    form = SessionForm(initial=SessionForm.initial_for(session))
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if value is None or value is False:
            continue
        if isinstance(value, (list, dict)):
            value = field.prepare_value(value) if not isinstance(value, list) or name in (
                "official_sections", "contexts", "extension_prompts") else value
        data[name] = value
    data.update(changes)
    return data


def _panel(html):
    start = html.index('id="macro-variables"')
    return html[start:html.index("</section>", start)]


def _rows(panel):
    """(name, scope, state) of each row of the panel, in order."""
    import re

    return re.findall(r'data-variable="([^"]*)" data-variable-scope="([^"]*)" data-variable-state="([^"]*)"', panel)


def _sent(user, session):
    result = client_for(user).get(f"/api/sessions/{session.pk}/preview").json()
    return [m["content"] for m in result["request"]["messages"]], result


def test_an_imported_chats_variables_show_before_and_after_in_the_preview(users, session):
    assert _import(users["designer"], session, _chat_file()).status_code == 302
    stored = Session.objects.get(pk=session.pk)
    assert stored.chat_file["metadata"]["variables"] == {"hp": 3, "flag": "on"}
    services.session_update(session=stored, current_input=TYPED,
                            macro_variables={"local": {"hp": 3, "flag": "on"}, "global": {"day": "3"}})
    html = markup.unescape(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode())
    panel = _panel(html)
    assert 'data-macro-engine="legacy"' in panel
    assert _rows(panel) == [("hp", "local", "changed"), ("flag", "local", "unchanged"), ("mood", "local", "set"),
                            ("day", "global", "unchanged")]
    hp = panel[panel.index('data-variable="hp"'):panel.index("</tr>", panel.index('data-variable="hp"'))]
    assert "<code>3</code>" in hp.split("data-variable-after")[0] and "<code>4</code>" in hp.split(
        "data-variable-after")[1]
    mood = panel[panel.index('data-variable="mood"'):panel.index("</tr>", panel.index('data-variable="mood"'))]
    assert "not set" in mood.split("data-variable-after")[0] and '<code>"calm"</code>' in mood
    assert "2 of 4 variables changed" in panel
    messages, result = _sent(users["qa"], session)
    assert messages[0].startswith("HP 4, day 3.") and "4 Attack!" in messages
    assert result["macro_variables"]["after"] == {"local": {"hp": 4, "flag": "on", "mood": "calm"},
                                                  "global": {"day": "3"}}


def test_a_session_without_variables_sends_none_and_its_panel_shows_only_when_a_macro_reads_one(users, session):
    from preview_app.previews import session_request, strategy_document

    request = session_request(session, strategy_document(session.applied_strategy, session.applied_document))
    assert "macro_variables" not in request and "macro_engine" not in request
    panel = _panel(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode())
    assert _rows(panel) == [] and "No variable is set" in panel  # {{getvar::hp}} read a variable never set
    plain = strategy_services.preset_import(user=users["admin"], name="Plain", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "Hi {{user}}"}, {"identifier": "chatHistory", "marker": True}]})
    services.session_update(session=session, preset=Preset.objects.get(pk=plain.id))
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    assert 'id="macro-variables"' not in html


def test_the_panel_shows_variables_a_generations_macros_set_on_a_session_with_none(users, session):
    services.session_update(session=session, current_input="{{setvar::seen::yes}}Hello")
    panel = _panel(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode())
    assert _rows(panel) == [("seen", "local", "set")]


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"local_variables": '{"": 1}'}, "local_variables", "Chat variables: a variable name cannot be empty."),
    ({"global_variables": '{"mood": '}, "global_variables", "Global variables: not valid JSON (line 1, column 10)."),
    ({"local_variables": '{\n "hp": 9,\n}'}, "local_variables", "Chat variables: not valid JSON (line 3, column 1)."),
    ({"global_variables": "[1, 2]"}, "global_variables", "Global variables: expected a JSON object of names and values."),
    ({"local_variables": '{"hp": NaN}'}, "local_variables", "Chat variables: expected a finite number"),
    ({"macro_engine": "v3"}, "macro_engine", "v3"),
])
def test_bad_variables_on_the_settings_form_are_refused_naming_the_field_and_store_nothing(
        users, session, changes, field, words):
    services.session_update(session=session, macro_variables={"local": {"hp": 3}, "global": {"day": "3"}})
    before = Session.objects.get(pk=session.pk)
    data = _edit_data(before, **{"local_variables": '{"hp": 9}', **changes})
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/", data)
    assert response.status_code == 400
    html = markup.unescape(response.content.decode())
    errors = html[html.index(f'id="id_{field}"') - 600:html.index(f'id="id_{field}"') + 600]
    assert words in errors
    after = Session.objects.get(pk=session.pk)
    assert (after.chat_file, after.global_variables, after.macro_engine) == (
        before.chat_file, before.global_variables, before.macro_engine)


def test_the_settings_form_saves_the_engine_and_the_variables(users, session):
    data = _edit_data(session, macro_engine="v2", local_variables='{"mood": "grim"}', global_variables='{"day": 5}')
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/", data)
    assert response.status_code == 302
    stored = Session.objects.get(pk=session.pk)
    assert stored.macro_engine == "v2" and stored.global_variables == {"day": 5}
    assert stored.chat_file["metadata"]["variables"] == {"mood": "grim"}
    messages, _result = _sent(users["qa"], stored)
    assert messages[0] == "HP , day 5. mood is grim"
    html = markup.unescape(client_for(users["qa"]).get(f"/sessions/{session.pk}/").content.decode())
    assert 'data-macro-engine="v2"' in html and "Macros 2.0 (experimental)" in html


@pytest.mark.parametrize(("body", "path"), [
    ({"macro_variables": {"local": [1]}}, "macro_variables.local"),
    ({"macro_variables": {"chat": {}}}, "macro_variables.chat"),
    ({"macro_variables": {"local": {"": 1}}}, "macro_variables.local"),
    ({"macro_engine": "v3"}, "macro_engine"),
])
def test_the_api_refuses_bad_variables_with_a_coded_error_naming_the_field(users, session, body, path):
    response = client_for(users["designer"]).patch(f"/api/sessions/{session.pk}", json.dumps(
        {"name": "Renamed", **body}), content_type="application/json")
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "INPUT_INVALID" and error["detail"]["path"] == path
    stored = Session.objects.get(pk=session.pk)
    assert (stored.name, stored.macro_engine, stored.global_variables, stored.chat_file.get("metadata")) == (
        "Gate", "legacy", {}, None)


def test_the_api_reads_and_writes_the_engine_and_variables(users, session):
    client = client_for(users["designer"])
    body = {"macro_engine": "v2", "macro_variables": {"local": {"hp": 3}, "global": {"day": "3"}}}
    response = client.patch(f"/api/sessions/{session.pk}", json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    read = client.get(f"/api/sessions/{session.pk}").json()
    assert (read["macro_engine"], read["macro_variables"]) == ("v2", body["macro_variables"])
    created = client.post("/api/sessions", json.dumps({"name": "New", **body}), content_type="application/json")
    assert created.status_code == 201
    made = client.get(f"/api/sessions/{created.json()['id']}").json()
    assert (made["macro_engine"], made["macro_variables"]) == ("v2", body["macro_variables"])


def test_the_engine_choice_changes_the_result_of_an_if(users, session):
    services.session_update(session=session, macro_variables={"local": {"mood": "calm"}, "global": {}})
    legacy, _result = _sent(users["qa"], session)
    assert legacy[0] == "HP , day . {{if .mood}}mood is {{.mood}}{{else}}no mood{{/if}}"
    services.session_update(session=Session.objects.get(pk=session.pk), macro_engine="v2")
    v2, result = _sent(users["qa"], session)
    assert v2[0] == "HP , day . mood is calm" and result["macro_variables"]["engine"] == "v2"
    panel = _panel(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode())
    assert 'data-macro-engine="v2"' in panel


def test_export_gives_back_the_chats_variables_as_imported_and_as_edited(users, session):
    _import(users["designer"], session, _chat_file())
    client = client_for(users["qa"])
    exported = client.get(f"/sessions/{session.pk}/chat.jsonl").content.decode().splitlines()
    assert json.loads(exported[0]) == HEADER
    assert [json.loads(line) for line in exported[1:]] == LINES
    services.session_update(session=Session.objects.get(pk=session.pk),
                            macro_variables={"local": {"hp": 7}, "global": {"day": "3"}})
    header = json.loads(client.get(f"/sessions/{session.pk}/chat.jsonl").content.decode().splitlines()[0])
    assert header["chat_metadata"] == {**HEADER["chat_metadata"], "variables": {"hp": 7}}
    services.session_update(session=Session.objects.get(pk=session.pk), macro_variables={"local": {}})
    header = json.loads(client.get(f"/sessions/{session.pk}/chat.jsonl").content.decode().splitlines()[0])
    assert header["chat_metadata"]["variables"] == {}  # emptied, as SillyTavern keeps an emptied object


def test_a_chat_without_variables_exports_without_them(users, session):
    header = {**HEADER, "chat_metadata": {"tainted": False}}
    _import(users["designer"], session, _chat_file(header))
    services.session_update(session=Session.objects.get(pk=session.pk), macro_variables={"global": {"day": 1}})
    exported = client_for(users["qa"]).get(f"/sessions/{session.pk}/chat.jsonl").content.decode().splitlines()
    assert json.loads(exported[0]) == header


def test_a_chat_whose_variables_are_not_an_object_is_refused_naming_the_field(users, session):
    header = {**HEADER, "chat_metadata": {"variables": ["hp"]}}
    response = _import(users["designer"], session, _chat_file(header))
    assert response.status_code == 400
    assert "line 1.chat_metadata.variables" in markup.unescape(response.content.decode())
    stored = Session.objects.get(pk=session.pk)
    assert not stored.events.exists() and "metadata" not in stored.chat_file


def test_committing_a_turn_keeps_what_its_macros_left(users, session):
    _import(users["designer"], session, _chat_file())
    services.session_update(session=Session.objects.get(pk=session.pk), current_input=TYPED,
                            macro_variables={"local": {"hp": 3}, "global": {"day": "3"}})
    services.turn_commit(session=Session.objects.get(pk=session.pk), reply="The gate opens.")
    stored = Session.objects.get(pk=session.pk)
    assert stored.chat_file["metadata"]["variables"] == {"hp": 4, "mood": "calm"}
    assert stored.global_variables == {"day": "3"}
    assert stored.chat_file["metadata"]["tainted"] is False  # the rest of the metadata as imported


def test_a_copy_keeps_the_engine_and_both_kinds_of_variables(users, session):
    services.session_update(session=session, macro_engine="v2",
                            macro_variables={"local": {"hp": 3}, "global": {"day": "3"}})
    copy = services.session_copy(session=session, user=users["designer"])
    client = client_for(users["qa"])
    assert client.get(f"/api/sessions/{copy.pk}").json()["macro_variables"] == {"local": {"hp": 3},
                                                                                 "global": {"day": "3"}}
    assert Session.objects.get(pk=copy.pk).macro_engine == "v2"


def test_the_panel_in_chinese(users, session):
    from django.utils import translation

    services.session_update(session=session, current_input=TYPED, macro_variables={"local": {"hp": 3}, "global": {}})
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    panel = _panel(markup.unescape(html.content.decode()))
    with translation.override("zh-hans"):
        for words in ("Macro variables", "this chat", "changed", "set by this generation", "not set"):
            assert translation.gettext(words) != words and translation.gettext(words) in panel
    assert "Macro engine:" not in panel and "variables changed" not in panel and "this chat" not in panel


def test_variable_names_and_values_are_escaped(users, session):
    services.session_update(session=session, current_input="{{setvar::<i>x</i>::<script>alert(1)</script>}}Hi",
                            macro_variables={"local": {"<b>hp</b>": "<img src=x>"}, "global": {}})
    panel = _panel(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode())
    assert "<script>" not in panel and "<img" not in panel and "<b>" not in panel and "<i>" not in panel
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in panel and "&lt;b&gt;hp&lt;/b&gt;" in panel


def test_a_new_session_starts_with_the_engine_and_variables_chosen(users):
    answer = client_for(users["designer"]).post("/sessions/new/", {
        "name": "Fresh", "strategy": "builtin-st", "core_available": "on", "system_prompt_update": "head",
        "world_info_activation": "keywords", "macro_engine": "v2", "local_variables": '{"hp": 10}',
        "global_variables": '{"day": "1"}'})
    assert answer.status_code == 302
    made = Session.objects.get(name="Fresh")
    assert (made.macro_engine, made.global_variables, made.chat_file) == (
        "v2", {"day": "1"}, {"metadata": {"variables": {"hp": 10}}})
    exported = client_for(users["qa"]).get(f"/sessions/{made.pk}/chat.jsonl").content.decode().splitlines()
    assert json.loads(exported[0])["chat_metadata"] == {"variables": {"hp": 10}}


def test_a_chat_variable_with_an_empty_name_is_kept_in_the_file_but_never_sent(users, session):
    header = {**HEADER, "chat_metadata": {"variables": {"": "odd", "hp": 3}}}
    assert _import(users["designer"], session, _chat_file(header)).status_code == 302
    _messages, result = _sent(users["qa"], session)
    assert result["macro_variables"]["before"]["local"] == {"hp": 3}
    exported = client_for(users["qa"]).get(f"/sessions/{session.pk}/chat.jsonl").content.decode().splitlines()
    assert json.loads(exported[0]) == header
    services.session_update(session=Session.objects.get(pk=session.pk), macro_variables={"local": {"hp": 5}})
    assert Session.objects.get(pk=session.pk).chat_file["metadata"]["variables"] == {"": "odd", "hp": 5}


def test_the_macros_refusals_in_chinese_name_their_field_with_a_full_width_colon(users, session):
    """A bad JSON object and a bad clock, on the page in Chinese: each refusal sits by its field, in Chinese,
    names the field as its label does and has no English left."""
    data = _edit_data(session, global_variables='{"day": ', clock="tomorrow")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/", data,
                                                  HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 400
    html = markup.unescape(response.content.decode())
    variables = html[html.index('id="id_global_variables"') - 600:html.index('id="id_global_variables"')]
    assert "全局变量：不是有效的 JSON（第 1 行，第 9 列）。" in variables
    clock = html[html.index('id="id_clock"') - 900:html.index('id="id_clock"')]
    assert "时间宏读取的时刻：应为日期和时间，例如 2026-12-06T15:05" in clock
    assert "expected" not in clock and "clock:" not in clock


def test_the_variables_textareas_show_one_name_a_line(users, session):
    services.session_update(session=session, macro_variables={"local": {"hp": 3, "mood": "calm " * 30},
                                                              "global": {"day": 3}})
    html = markup.unescape(client_for(users["designer"]).get(f"/sessions/{session.pk}/").content.decode())
    start = html.index('id="id_local_variables"')
    textarea = html[start:html.index("</textarea>", start)]
    assert '\n "hp": 3,\n "mood": "calm calm' in textarea


def test_the_panels_scope_words_keep_to_one_line(users, session):
    services.session_update(session=session, current_input=TYPED, macro_variables={"local": {"hp": 3}, "global": {}})
    panel = _panel(markup.unescape(client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()))
    assert '<td class="nowrap">this chat</td>' in panel


@pytest.mark.parametrize(("language", "names"), [
    ("en", "<code>hp</code>, <code>flag</code>, <code>day</code><span class=\"muted\"> (global)</span>"),
    ("zh-hans", "<code>hp</code>、<code>flag</code>、<code>day</code><span class=\"muted\">（全局）</span>")])
def test_the_settings_list_names_the_variables_with_the_pages_punctuation(users, session, language, names):
    services.session_update(session=session, macro_variables={"local": {"hp": 3, "flag": "on"}, "global": {"day": 3}})
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f"<dd data-macro-variable-names>{names}</dd>" in html


def _composer(html):
    start = html.index("data-composer-preview")
    return html[start:html.index("</section>", start)]


def test_the_composer_preview_names_the_variables_the_next_turn_would_change(users, session):
    services.session_update(session=session, current_input=TYPED,
                            macro_variables={"local": {"hp": 3, "flag": "on"}, "global": {"day": "3"}})
    composer = _composer(markup.unescape(
        client_for(users["designer"]).get(f"/sessions/{session.pk}/?preview=1").content.decode()))
    assert "2 of 4 variables changed" in composer
    assert _rows(composer) == [("hp", "local", "changed"), ("mood", "local", "set")]  # the unchanged ones stay out
    hp = composer[composer.index('data-variable="hp"'):]
    assert hp.index("<code>3</code>") < hp.index("→") < hp.index("<code>4</code>") < hp.index("</li>")
    assert f'href="/sessions/{session.pk}/preview/#macro-variables"' in composer
    # a turn whose macros touch no variable says nothing of them
    services.session_update(session=session, current_input="Plain words.", macro_variables={"local": {}, "global": {}})
    composer = _composer(client_for(users["designer"]).get(f"/sessions/{session.pk}/?preview=1").content.decode())
    assert "data-composer-variables" in composer and _rows(composer) == []  # MAIN still reads {{getvar::hp}}
    assert "No variable is set" in composer


def test_the_composers_variables_read_in_chinese(users, session):
    services.session_update(session=session, current_input=TYPED, macro_variables={"local": {"hp": 3}, "global": {}})
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    composer = _composer(markup.unescape(client.get(f"/sessions/{session.pk}/?preview=1").content.decode()))
    assert "查看全部变量" in composer and "（本聊天）：<code>3</code> → <code>4</code>" in composer.replace(
        '<span class="muted small">', "").replace("</span>", "")
    assert "See every variable" not in composer and "this chat" not in composer
