"""A SillyTavern settings.json holds more than one resource (web.md screen 6): each import takes its own part
(the preset, the persona, the global regex scripts) and its report names what else the file holds and where that
goes in the studio, read from the file itself."""

import html
import json

from django.core.files.uploadedfile import SimpleUploadedFile

from strategies_app.models import RegexScript
from tests.web.conftest import client_for

SCRIPT = {"scriptName": "Trim stars", "findRegex": "/\\*+/g", "replaceString": "", "placement": [2],
          "disabled": False, "markdownOnly": False, "promptOnly": True, "runOnEdit": True}


def settings_file(**changes):
    data = {
        "username": "Aria",
        "power_user": {"persona_description": "A wandering cartographer.", "experimental_macro_engine": True},
        "oai_settings": {"prompts": [{"identifier": "main", "name": "Main", "content": "Be {{char}}."}],
                         "openai_max_context": 8000},
        "extension_settings": {"regex": [SCRIPT, {**SCRIPT, "scriptName": "Second", "findRegex": "/~/g"}],
                               "variables": {"global": {"mood": "calm", "visits": 3}},
                               "note": {"default": "Keep it short."}},
        "world_info_settings": {"world_info_depth": 2},
    }
    data.update(changes)
    return json.dumps({key: value for key, value in data.items() if value is not None}).encode()


def upload(client, kind, raw, *, dry_run=True):
    url = f"/api/resources/{kind}/import" + ("?dry_run=1" if dry_run else "")
    return client.post(url, {"file": SimpleUploadedFile("settings.json", raw)})


def test_a_preset_import_names_the_rest_of_the_settings_file(users):
    report = upload(client_for(users["admin"]), "preset", settings_file()).json()
    assert report["items"] == ["Main"]
    assert report["notes"] == [
        "also in this settings file: the persona description (import the file as a persona)",
        "also in this settings file: 2 global regex scripts (import the file as regex scripts)",
        "also in this settings file: Macros 2.0 switched on (a session's macro engine setting)",
        "also in this settings file: 2 global macro variables (a session's global variables)",
        "also in this settings file: the author's note default (a session's author's note)",
        "also in this settings file: the world info scan settings (each world book keeps its own)",
    ]


def test_the_notes_follow_what_the_file_holds(users):
    client = client_for(users["admin"])
    bare = settings_file(power_user={"persona_description": "  ", "experimental_macro_engine": False},
                         extension_settings={"regex": [], "variables": {"global": {}}, "note": {"default": ""}},
                         world_info_settings=None)
    assert upload(client, "preset", bare).json()["notes"] == []
    persona = upload(client, "persona", settings_file()).json()
    assert persona["items"] == ["Aria"]
    assert persona["notes"][0] == ("also in this settings file: the chat-completion preset (import the file as a "
                                   "preset)")
    assert not any("persona description" in note for note in persona["notes"])
    # a file that is no settings file gets no such note
    plain = json.dumps({"prompts": [{"identifier": "main", "content": "x"}]}).encode()
    assert upload(client, "preset", plain).json()["notes"] == []


def test_a_settings_file_imports_its_global_regex_scripts(users):
    client = client_for(users["admin"])
    response = upload(client, "regex", settings_file(), dry_run=False)
    assert response.status_code == 201, response.content
    report = response.json()
    assert report["items"] == ["Trim stars", "Second"]
    assert not any("regex" in note for note in report["notes"])
    assert [(s.name, s.find_regex, s.prompt_only) for s in RegexScript.objects.order_by("sort_order")] == [
        ("Trim stars", "/\\*+/g", True), ("Second", "/~/g", True)]
    assert RegexScript.objects.get(name="Trim stars").script_fields == {"runOnEdit": True}


def test_a_settings_file_without_regex_scripts_is_refused_naming_the_field(users):
    client = client_for(users["admin"])
    response = upload(client, "regex", settings_file(extension_settings={"regex": []}), dry_run=False)
    assert response.status_code == 400
    assert response.json()["detail"]["path"] == "extension_settings.regex"
    broken = settings_file(extension_settings={"regex": [SCRIPT, {**SCRIPT, "findRegex": 7}]})
    response = upload(client, "regex", broken, dry_run=False)
    assert response.status_code == 400
    assert response.json()["detail"]["path"] == "extension_settings.regex[1].findRegex"
    assert RegexScript.objects.count() == 0


def test_the_import_page_names_the_rest_in_chinese(users):
    client = client_for(users["admin"])
    client.cookies["django_language"] = "zh-hans"
    page = client.post("/resources/import/", {"kind": "persona", "dry_run": "1",
                                              "file": SimpleUploadedFile("settings.json", settings_file())})
    text = html.unescape(page.content.decode())
    assert page.status_code == 200
    assert "此设置文件中还有：2 个全局正则脚本（将该文件作为正则脚本导入）" in text
    assert "此设置文件中还有：已开启宏 2.0（在会话的宏引擎设置中选择）" in text
    assert "also in this settings file" not in text
