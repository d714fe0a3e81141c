"""Imports recognise a file already stored (the same content, whatever its format: a PNG card and its V3 JSON are
one card): the dry run says so, and the import reuses the stored one or keeps both, told apart by name (presets,
world books) or id (cards, whose name is their {{char}}) in the pickers and the export file names."""

from django.core.files.uploadedfile import SimpleUploadedFile

from strategies_app.models import Character, Preset
from tests.web.conftest import client_for


def _upload(client, kind, raw, filename, query=""):
    return client.post(f"/api/resources/{kind}/import{query}", {"file": SimpleUploadedFile(filename, raw)})


def _fixture(shared_fixtures, name):
    return (shared_fixtures / "sillytavern" / name).read_bytes()


def test_the_same_card_as_png_then_v3_json_is_recognised_and_reused(shared_fixtures, users):
    client = client_for(users["admin"])
    first = _upload(client, "character", _fixture(shared_fixtures, "st_card_Seraphina.png"), "s.png").json()
    v3 = _fixture(shared_fixtures, "st_card_Seraphina.v3.ccv3.json")
    dry = _upload(client, "character", v3, "s.json", "?dry_run=1").json()
    assert dry["same_as"] == {"id": first["id"], "name": "Seraphina"}
    reused = _upload(client, "character", v3, "s.json", "?duplicate=reuse").json()
    assert reused["id"] == first["id"] and reused["creates"] == {"character": 0, "avatar": 0}
    assert Character.objects.count() == 1


def test_keeping_both_cards_tells_them_apart_by_id(shared_fixtures, users):
    client = client_for(users["admin"])
    png = _fixture(shared_fixtures, "st_card_Seraphina.png")
    first = _upload(client, "character", png, "s.png").json()["id"]
    second = _upload(client, "character", _fixture(shared_fixtures, "st_card_Seraphina.v3.ccv3.json"), "s.json",
                     "?duplicate=keep").json()["id"]
    assert second != first and Character.objects.get(pk=second).name == "Seraphina"  # {{char}} is unchanged
    names = {client.get(f"/api/resources/character/{pk}/export")["Content-Disposition"] for pk in (first, second)}
    assert names == {f'attachment; filename="seraphina-character-{first}.json"',
                     f'attachment; filename="seraphina-character-{second}.json"'}
    form = client_for(users["designer"]).get("/sessions/new/").content.decode()
    assert f"Seraphina (id {first})" in form and f"Seraphina (id {second})" in form


def test_a_preset_imported_twice_is_kept_under_a_distinct_name(shared_fixtures, users):
    client = client_for(users["admin"])
    raw = _fixture(shared_fixtures, "st_cc_preset_Default.json")
    _upload(client, "preset", raw, "Default.json")
    again = _upload(client, "preset", raw, "Default.json").json()
    assert again["name"] == "Default (2)" and again["same_as"]["name"] == "Default"
    assert sorted(Preset.objects.values_list("name", flat=True)) == ["Default", "Default (2)"]


def test_a_different_card_of_the_same_name_is_not_a_twin(users):
    client = client_for(users["admin"])
    card = b'{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ada", "description": "%s"}}'
    _upload(client, "character", card % b"one", "ada.json")
    other = _upload(client, "character", card % b"two", "ada.json", "?dry_run=1").json()
    assert other["same_as"] is None


def _stored_then_dry_run(shared_fixtures, client) -> str:
    """The default preset imported, then the same file's dry run on the import page (its HTML)."""
    raw = _fixture(shared_fixtures, "st_cc_preset_Default.json")
    _upload(client, "preset", raw, "Default.json")
    return client.post("/resources/import/", {"file": SimpleUploadedFile("Default.json", raw), "kind": "preset",
                                              "dry_run": "1"}).content.decode()


def test_the_import_page_offers_reuse_or_keep_both(shared_fixtures, users):
    client = client_for(users["admin"])
    html = _stored_then_dry_run(shared_fixtures, client)
    assert "The same content is already stored as “Default”" in html
    assert 'name="duplicate" value="reuse" checked' in html and 'name="duplicate" value="keep"' in html
    # the heading says what the file is; what would be stored is what keeping both stores
    assert "Dry run: the same content is already stored" in html and "Dry run: this would be created" not in html
    assert "Keeping both would store:" in html
    token = html.split('name="token" value="')[1].split('"')[0]
    done = client.post("/resources/import/", {"token": token, "kind": "preset", "duplicate": "reuse"})
    assert Preset.objects.count() == 1
    html = done.content.decode()
    assert "Nothing new stored: the stored one is used" in html and "<h2>Imported</h2>" not in html


def test_a_reused_import_says_nothing_was_stored_and_names_the_stored_copy_above_its_prompts(shared_fixtures,
                                                                                               users):
    client = client_for(users["admin"])
    token = _stored_then_dry_run(shared_fixtures, client).split('name="token" value="')[1].split('"')[0]
    stored = Preset.objects.get()
    html = client.post("/resources/import/", {"token": token, "kind": "preset", "duplicate": "reuse"}).content.decode()
    report = html[html.index("data-report-kind"):]
    assert (f"The stored “Default” (id {stored.pk}) holds the same content as the file."
            in report)
    assert report.count(f"(id {stored.pk})") == 1  # named once
    assert "Stored:</p>" not in report and ": 0</li>" not in report  # no counts that read as an empty preset
    prompts = report[report.index("data-items-heading"):]
    assert prompts.count("<li>") == stored.entries.count() > 0


def test_a_real_import_labels_its_counts_as_what_was_stored_in_both_languages(shared_fixtures, users):
    raw = _fixture(shared_fixtures, "st_cc_preset_Default.json")
    client = client_for(users["admin"])
    html = client.post("/resources/import/", {"file": SimpleUploadedFile("Default.json", raw),
                                              "kind": "preset"}).content.decode()
    count = Preset.objects.get().entries.count()
    assert "<p data-stored-counts>Stored:</p>" in html and f"prompts: {count}</li>" in html
    client.cookies["django_language"] = "zh-hans"
    html = client.post("/resources/import/", {"token": _stored_then_dry_run(shared_fixtures, client).split(
        'name="token" value="')[1].split('"')[0], "kind": "preset", "duplicate": "reuse"}).content.decode()
    assert "已保存的“Default”" in html and "与该文件的内容相同" in html


def test_keeping_both_says_imported(shared_fixtures, users):
    client = client_for(users["admin"])
    token = _stored_then_dry_run(shared_fixtures, client).split('name="token" value="')[1].split('"')[0]
    done = client.post("/resources/import/", {"token": token, "kind": "preset", "duplicate": "keep"})
    assert Preset.objects.count() == 2 and "<h2>Imported</h2>" in done.content.decode()


def test_an_unknown_duplicate_choice_is_refused_naming_the_field(shared_fixtures, users):
    client = client_for(users["admin"])
    answer = _upload(client, "preset", _fixture(shared_fixtures, "st_cc_preset_Default.json"), "D.json",
                     "?duplicate=merge")
    assert answer.status_code == 400 and answer.json()["detail"]["path"] == "duplicate"
    assert Preset.objects.count() == 0


def test_a_refused_import_explains_its_code_in_words(users):
    page = client_for(users["admin"]).post("/resources/import/", {
        "file": SimpleUploadedFile("broken.json", b"{not json"), "kind": "preset"})
    html = page.content.decode()
    assert page.status_code == 400 and 'data-code="INPUT_NOT_JSON"' in html
    assert "The text sent is not valid JSON" in html
    assert "No description for this code yet." not in html


def test_stored_prompt_fields_in_another_key_order_still_make_a_twin():
    from strategies_app.resource_twins import _entry_rows

    imported = [{"identifier": "main", "prompt_fields": {"b": 1, "a": [1, {"y": 2, "x": 1}]}}]
    stored = [{"identifier": "main", "prompt_fields": {"a": [1, {"x": 1, "y": 2}], "b": 1}}]  # as jsonb gives it back
    assert _entry_rows("preset", imported) == _entry_rows("preset", stored)
    assert _entry_rows("preset", imported) != _entry_rows("preset", [{"identifier": "main", "prompt_fields": {}}])
