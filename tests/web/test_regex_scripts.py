"""Regex scripts in the studio (engine.md §5, SillyTavern parity): SillyTavern's regex script files import as global
scripts (one file or a list, dry run, refusals naming the field, nothing stored), export back, admins enable and disable
them, sessions choose them and the builtin-st preview names the script that changed a text; preset and card scripts
round trip with those files."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services, sillytavern
from strategies_app.models import Character, Preset, RegexScript, WorldBook
from tests.web.conftest import client_for, csrf_client_for

# As SillyTavern's regex extension exports a script (every key, in its order)
WOLF = {"id": "5b6f1c1e-1", "scriptName": "wolf to hound", "findRegex": "/wolf/gi", "replaceString": "hound",
        "trimStrings": [], "placement": [1, 2], "disabled": False, "markdownOnly": False, "promptOnly": True,
        "runOnEdit": True, "substituteRegex": 0, "minDepth": None, "maxDepth": None}
GREY = {**WOLF, "id": "5b6f1c1e-2", "scriptName": "grey to silver", "findRegex": "/grey/", "replaceString": "silver",
        "placement": [1]}


def upload(client, raw, *, dry_run=False, filename="regex-wolf.json"):
    url = "/api/resources/regex/import" + ("?dry_run=1" if dry_run else "")
    return client.post(url, {"file": SimpleUploadedFile(filename, json.dumps(raw).encode())})


def test_one_script_file_imports_and_exports_back_byte_for_byte(users):
    client = client_for(users["admin"])
    response = upload(client, WOLF)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["name"], body["creates"]) == ("regex", "wolf to hound", {"regex_scripts": 1})
    row = RegexScript.objects.get(pk=body["id"])
    assert (row.name, row.find_regex, row.placement, row.prompt_only, row.owner) == (
        "wolf to hound", "/wolf/gi", [1, 2], True, users["admin"])
    exported = client.get(f"/api/resources/regex/{row.pk}/export")
    assert exported.status_code == 200
    assert list(exported.json()) == list(WOLF)  # SillyTavern's key order
    assert exported.json() == WOLF


def test_a_list_imports_in_its_order_after_the_existing_scripts(users):
    client = client_for(users["admin"])
    assert upload(client, GREY).status_code == 201
    response = upload(client, [WOLF, {"findRegex": "/x/", "unknownKey": {"kept": True}}], filename="pack.json")
    assert response.status_code == 201
    assert response.json()["name"] == "pack" and response.json()["items"] == ["wolf to hound", "/x/"]
    assert [s.name or s.find_regex for s in RegexScript.objects.all()] == ["grey to silver", "wolf to hound", "/x/"]
    unnamed = RegexScript.objects.get(find_regex="/x/")
    assert sillytavern.regex_script_document(unnamed) == {
        "scriptName": "", "findRegex": "/x/", "replaceString": "", "placement": [], "disabled": False,
        "markdownOnly": False, "promptOnly": False, "unknownKey": {"kept": True}}


def test_a_dry_run_reports_and_stores_nothing(users):
    response = upload(client_for(users["admin"]), [WOLF, GREY], dry_run=True)
    assert response.status_code == 200
    assert response.json()["dry_run"] is True and response.json()["creates"] == {"regex_scripts": 2}
    assert RegexScript.objects.count() == 0


@pytest.mark.parametrize(("raw", "words"), [
    ({**WOLF, "findRegex": 5}, "findRegex: expected a string, got integer 5"),
    ([WOLF, {**GREY, "placement": [9]}], "[1].placement[0]: expected a placement number"),
    ({**WOLF, "minDepth": "deep"}, "minDepth: expected an integer >= -1"),
    ({**WOLF, "findRegex": ""}, "findRegex: expected a non-empty string"),
    ("just text", "expected a regex script object or a list of them"),
])
def test_a_bad_file_is_refused_naming_the_field_and_stores_nothing(users, raw, words):
    response = upload(client_for(users["admin"]), raw)
    assert response.status_code == 400
    assert response.json()["code"] == "IMPORT_INVALID" and words in response.json()["error"]
    assert RegexScript.objects.count() == 0


def test_the_import_page_takes_regex_scripts(users):
    client = client_for(users["admin"])
    page = client.get("/resources/import/").content.decode()
    assert 'value="regex"' in page
    response = client.post("/resources/import/", {"kind": "regex", "file": SimpleUploadedFile(
        "bad.json", json.dumps({**WOLF, "findRegex": 5}).encode())})
    assert response.status_code == 400 and "findRegex: expected a string" in response.content.decode()
    assert RegexScript.objects.count() == 0
    response = client.post("/resources/import/", {"kind": "regex", "file": SimpleUploadedFile(
        "w.json", json.dumps(WOLF).encode())})
    assert response.status_code == 200 and RegexScript.objects.count() == 1


def test_the_resources_page_lists_scripts_and_admins_toggle_them(users):
    script = RegexScript.objects.create(name="<b>wolf</b>", find_regex="/<i>/g", placement=[2])
    qa_page = client_for(users["qa"]).get("/resources/").content.decode()
    assert "&lt;b&gt;wolf&lt;/b&gt;" in qa_page and "<b>wolf</b>" not in qa_page  # escaped
    assert f'action="/resources/regex/{script.pk}/toggle/"' not in qa_page  # QA reads, does not manage
    assert f"/api/resources/regex/{script.pk}/export" in qa_page
    admin = client_for(users["admin"])
    page = admin.get("/resources/").content.decode()
    assert f'action="/resources/regex/{script.pk}/toggle/"' in page and f'hx-post="/resources/regex/{script.pk}' in page
    response = admin.post(f"/resources/regex/{script.pk}/toggle/", {"disabled": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("<tr") and f'id="regex-{script.pk}"' in html and "<html" not in html
    script.refresh_from_db()
    assert script.disabled is True
    response = admin.post(f"/resources/regex/{script.pk}/toggle/", {"disabled": "0"})
    assert response.status_code == 302 and response["Location"] == "/resources/"
    script.refresh_from_db()
    assert script.disabled is False


def test_a_designer_can_neither_import_nor_manage(users):
    script = RegexScript.objects.create(name="s", find_regex="/a/", placement=[1])
    designer = client_for(users["designer"])
    assert upload(designer, WOLF).status_code == 403
    assert designer.post(f"/resources/regex/{script.pk}/toggle/", {"disabled": "1"}).status_code == 403
    script.refresh_from_db()
    assert script.disabled is False and RegexScript.objects.count() == 1
    assert client_for(users["qa"]).get(f"/api/resources/regex/{script.pk}/export").status_code == 200


def test_the_toggle_needs_the_csrf_token(users):
    script = RegexScript.objects.create(name="s", find_regex="/a/", placement=[1])
    client = csrf_client_for(users["admin"])
    assert client.post(f"/resources/regex/{script.pk}/toggle/", {"disabled": "1"}).status_code == 403
    script.refresh_from_db()
    assert script.disabled is False
    page = client.get("/resources/").content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    assert client.post(f"/resources/regex/{script.pk}/toggle/", {"disabled": "1", "csrfmiddlewaretoken": token}
                       ).status_code == 302


def test_an_unknown_script_is_a_404_not_a_500(users):
    admin = client_for(users["admin"])
    assert admin.post("/resources/regex/999/toggle/", {"disabled": "1"}).status_code == 404
    assert admin.get("/api/resources/regex/999/export").status_code == 404


# ---------------------------------------------------------------------------------------------- sessions


@pytest.fixture
def st_session(users):
    preset = services.preset_import(user=users["admin"], name="Chat", data={
        "prompts": [{"identifier": "chatHistory", "marker": True}],
        "prompt_order": [{"character_id": 100001, "order": [{"identifier": "chatHistory", "enabled": True}]}]})
    session = session_services.session_create(user=users["designer"], name="Wolves", current_input="a grey wolf",
                                               preset=Preset.objects.get(pk=preset.id), host={"core_available": True})
    session_services.event_append(session=session, role="assistant", content="one old wolf")
    return session


def test_the_session_choice_changes_the_builtin_st_preview_and_names_the_script(users, st_session):
    wolf = RegexScript.objects.get(pk=services.regex_import(user=users["admin"], data=WOLF).id)
    client = client_for(users["designer"])
    before = client.get(f"/api/sessions/{st_session.pk}/preview?strategy=builtin-st").json()
    assert [m["content"] for m in before["request"]["messages"]] == ["one old wolf", "a grey wolf"]
    assert "regex_changes" not in before
    response = client.patch(f"/api/sessions/{st_session.pk}", json.dumps({"regex_scripts": [wolf.pk]}),
                            content_type="application/json")
    assert response.status_code == 200 and response.json()["regex_scripts"] == [wolf.pk]
    after = client.get(f"/api/sessions/{st_session.pk}/preview?strategy=builtin-st").json()
    assert [m["content"] for m in after["request"]["messages"]] == ["one old hound", "a grey hound"]
    assert [(c["script"], c["before"], c["after"]) for c in after["regex_changes"]] == [
        ("wolf to hound", "one old wolf", "one old hound"), ("wolf to hound", "a grey wolf", "a grey hound")]
    page = client.get(f"/sessions/{st_session.pk}/preview/?strategy=builtin-st").content.decode()
    assert page.count('data-regex-script="wolf to hound"') == 2
    assert "Regex script “wolf to hound” changed" in page and "<summary>" in page
    assert '<pre class="content before">one old wolf</pre>' in page


def test_a_disabled_script_or_a_bad_find_changes_nothing_and_the_bad_find_is_named(users, st_session):
    broken = RegexScript.objects.create(name="broken", find_regex="/(wolf/g", placement=[1, 2], prompt_only=True)
    off = RegexScript.objects.create(name="off", find_regex="/wolf/g", replace_string="x", placement=[1, 2],
                                     prompt_only=True, disabled=True)
    session_services.session_update(session=st_session, regex_scripts=[broken, off])
    client = client_for(users["designer"])
    result = client.get(f"/api/sessions/{st_session.pk}/preview?strategy=builtin-st").json()
    assert [m["content"] for m in result["request"]["messages"]] == ["one old wolf", "a grey wolf"]
    assert {"code": "ST_REGEX_FIND_INVALID", "script": "broken", "find": "/(wolf/g"} in result["diagnostics"]
    page = client.get(f"/sessions/{st_session.pk}/preview/?strategy=builtin-st").content.decode()
    assert "ST_REGEX_FIND_INVALID" in page and "SillyTavern can compile" in page


def test_the_session_form_chooses_scripts_and_a_copy_keeps_them(users, st_session):
    first = RegexScript.objects.create(name="b second by name", find_regex="/a/", placement=[1], sort_order=1)
    second = RegexScript.objects.create(name="a first by name", find_regex="/b/", placement=[1], sort_order=1)
    client = client_for(users["designer"])
    form = client.get(f"/sessions/{st_session.pk}/").content.decode()
    assert 'name="regex_scripts"' in form
    data = {"name": "Wolves", "preset": st_session.preset_id, "core_available": "on", "native_available": "on",
            "system_prompt_update": "head", "official_sections": "[]", "contexts": "[]", "variables": "{}",
            "current_input": "a grey wolf", "world_info_activation": "book", "extension_prompts": "[]",
            "regex_scripts": [first.pk, second.pk]}
    response = client.post(f"/sessions/{st_session.pk}/edit/", data)
    assert response.status_code in (200, 302), response.content[:500]
    st_session.refresh_from_db()
    assert list(st_session.regex_scripts.all()) == [second, first]  # same sort order: by name
    copy = session_services.session_copy(session=st_session, user=users["designer"])
    assert list(copy.regex_scripts.all()) == [second, first]
    assert client.get(f"/sessions/{copy.pk}/chat.jsonl").status_code == 200


def test_the_sessions_api_refuses_a_bad_choice_naming_it(users, st_session):
    client = client_for(users["designer"])
    for body, status in (({"regex_scripts": "all"}, 400), ({"regex_scripts": [999]}, 404)):
        response = client.patch(f"/api/sessions/{st_session.pk}", json.dumps(body), content_type="application/json")
        assert response.status_code == status
    assert Session.objects.get(pk=st_session.pk).regex_scripts.count() == 0
    script = RegexScript.objects.create(name="s", find_regex="/a/", placement=[1])
    created = client.post("/api/sessions", json.dumps({"name": "With", "regex_scripts": [script.pk]}),
                          content_type="application/json")
    assert created.status_code == 201
    assert client.get(f"/api/sessions/{created.json()['id']}").json()["regex_scripts"] == [script.pk]
    assert client.get("/api/resources").json()["regex"] == [{"id": script.pk, "name": "s"}]


# ---------------------------------------------------------------------------------------------- preset / card


def test_preset_scripts_round_trip_on_export(users):
    preset = {"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": [WOLF, GREY]}}
    report = services.preset_import(user=users["admin"], data=preset, name="With scripts")
    exported = client_for(users["qa"]).get(f"/api/resources/preset/{report.id}/export").json()
    assert exported["extensions"]["regex_scripts"] == [WOLF, GREY]


def test_card_scripts_round_trip_on_export(users):
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Nell", "extensions": {"regex_scripts": [WOLF]}}}
    report = services.character_import(user=users["admin"], data=card)
    exported = client_for(users["qa"]).get(f"/api/resources/character/{report.id}/export").json()
    assert exported["data"]["extensions"]["regex_scripts"] == [WOLF]
    assert Character.objects.get(pk=report.id).card_fields["extensions"]["regex_scripts"] == [WOLF]


def test_admins_manage_scripts_in_the_django_admin(users):
    script = RegexScript.objects.create(name="s", find_regex="/a/", placement=[1])
    client = client_for(users["admin"])
    listing = client.get("/admin/strategies_app/regexscript/")
    assert listing.status_code == 200 and b'name="form-0-sort_order"' in listing.content
    assert client.get(f"/admin/strategies_app/regexscript/{script.pk}/change/").status_code == 200
    assert client_for(users["designer"]).get("/admin/strategies_app/regexscript/").status_code == 302


@pytest.mark.parametrize(("language", "names", "books"), [
    ("en", 'hounds, wolves<span class="muted"> (disabled)</span>', "Forest, Moor"),
    ("zh-hans", 'hounds、wolves<span class="muted">（已停用）</span>', "Forest、Moor")])
def test_the_settings_list_names_scripts_and_books_with_the_pages_punctuation(users, st_session, language, names,
                                                                              books):
    hounds = RegexScript.objects.create(name="hounds", find_regex="/a/", placement=[1])
    wolves = RegexScript.objects.create(name="wolves", find_regex="/b/", placement=[1], disabled=True)
    shelf = [WorldBook.objects.get(pk=services.worldbook_import(user=users["admin"], name=name, data={"entries": {
        "0": {"uid": 0, "key": ["wolf"], "content": "A wolf."}}}).id) for name in ("Forest", "Moor")]
    session_services.session_update(session=st_session, regex_scripts=[hounds, wolves], world_books=shelf)
    html = client_for(users["qa"]).get(f"/sessions/{st_session.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f"<dd data-regex-script-names>{names}</dd>" in html
    assert f"<dd>{books}</dd>" in html
