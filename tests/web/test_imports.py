"""SillyTavern import and export through the API (web.md screen 6): every shared fixture file round
trips import -> export -> import; dry runs store nothing; a bad or corrupted file is refused naming the field and
stores nothing, even when the failure comes half way through writing."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from assembly.sillytavern.card import import_character
from assembly.sillytavern.preset import import_preset
from assembly.sillytavern.settings import import_settings
from assembly.sillytavern.worldbook import import_worldbook
from strategies_app import sillytavern
from strategies_app.models import Character, Persona, Preset, PromptEntry, WorldBook, WorldBookEntry
from tests.web.conftest import client_for

# What each shared file is imported as. The settings file carries a preset (oai_settings) and a persona
# (power_user); a card carries an embedded world book.
FILE_KINDS = {
    "st_card_Seraphina.png": ("character", "worldbook"),
    "st_card_Seraphina.v2.chara.json": ("character", "worldbook"),
    "st_card_Seraphina.v3.ccv3.json": ("character", "worldbook"),
    "st_cc_preset_Default.json": ("preset",),
    "st_cc_preset_Default.v1.12.6.json": ("preset",),
    "st_default_settings.json": ("preset", "persona"),
    "st_worldinfo_Eldoria.json": ("worldbook",),
}
NOT_DATA = {"SOURCES.txt"}  # the folder's description of where the files come from
MODELS = {"preset": Preset, "character": Character, "worldbook": WorldBook, "persona": Persona}


def everything_count():
    return tuple(model.objects.count() for model in (Preset, PromptEntry, Character, Persona, WorldBook,
                                                     WorldBookEntry))


def upload(client, kind, raw: bytes, filename: str, *, dry_run=False):
    url = f"/api/resources/{kind}/import" + ("?dry_run=1" if dry_run else "")
    return client.post(url, {"file": SimpleUploadedFile(filename, raw)})


def row_model(kind, pk):
    row = MODELS[kind].objects.get(pk=pk)
    if kind == "preset":
        return sillytavern.preset_model(row, row.entries.all())
    if kind == "character":
        return sillytavern.character_model(row)
    if kind == "worldbook":
        return sillytavern.worldbook_model(row, row.entries.all())
    return sillytavern.persona_model(row)


def engine_reading(kind, raw: bytes):
    """What the engine itself reads from the original file: the expected content of the stored rows."""
    data = raw if raw.startswith(b"\x89PNG") else json.loads(raw)
    if kind == "preset":
        return import_settings(data).preset if "oai_settings" in data else import_preset(data)
    if kind == "persona":
        return import_settings(data).persona
    if kind == "character":
        return import_character(data)
    if isinstance(data, dict) and "entries" in data:
        return import_worldbook(data)
    return import_character(data).character_book


def test_every_shared_file_is_covered(shared_fixtures):
    names = {path.name for path in (shared_fixtures / "sillytavern").iterdir()}
    assert names == set(FILE_KINDS) | NOT_DATA


@pytest.mark.parametrize(("filename", "kind"), [(f, k) for f, kinds in FILE_KINDS.items() for k in kinds])
def test_round_trip_import_export_import(shared_fixtures, users, filename, kind):
    raw = (shared_fixtures / "sillytavern" / filename).read_bytes()
    client = client_for(users["admin"])

    first = upload(client, kind, raw, filename)
    assert first.status_code == 201, first.content
    first_id = first.json()["id"]
    assert row_model(kind, first_id) == engine_reading(kind, raw)

    exported = client.get(f"/api/resources/{kind}/{first_id}/export")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/json"
    second = upload(client, kind, exported.content, f"again-{filename}.json")
    assert second.status_code == 201, second.content
    second_id = second.json()["id"]
    assert row_model(kind, second_id) == row_model(kind, first_id)
    assert client.get(f"/api/resources/{kind}/{second_id}/export").json() == exported.json()


def test_a_png_card_exports_as_a_png_that_reads_back_equal(shared_fixtures, users):
    raw = (shared_fixtures / "sillytavern" / "st_card_Seraphina.png").read_bytes()
    client = client_for(users["admin"])
    first_id = upload(client, "character", raw, "seraphina.png").json()["id"]
    png = client.get(f"/api/resources/character/{first_id}/export?format=png")
    assert png.status_code == 200 and png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    second_id = upload(client, "character", png.content, "again.png").json()["id"]
    assert row_model("character", second_id) == import_character(raw)
    # The avatar is the original image: the same bytes are served back.
    assert client.get(f"/api/resources/character/{first_id}/avatar").content == raw


def test_the_preset_keeps_the_files_order_and_flags(shared_fixtures, users):
    raw = (shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_bytes()
    preset_id = upload(client_for(users["admin"]), "preset", raw, "Default.json").json()["id"]
    preset = Preset.objects.get(pk=preset_id)
    expected = import_preset(json.loads(raw))
    assert preset.name == "Default"  # the file name, since preset files carry none
    sent = [(e.identifier, e.enabled) for e in preset.entries.filter(in_order=True).order_by("position")]
    assert sent == [(e.identifier, e.enabled) for e in expected.prompt_order]
    defined = [e.identifier for e in preset.entries.order_by("definition_index")]
    assert defined == [p.identifier for p in expected.prompts]


# ---------------------------------------------------------------------------------------------- dry runs


def test_a_dry_run_reports_what_would_be_created_and_stores_nothing(shared_fixtures, users):
    raw = (shared_fixtures / "sillytavern" / "st_worldinfo_Eldoria.json").read_bytes()
    before = everything_count()
    response = upload(client_for(users["admin"]), "worldbook", raw, "Eldoria.json", dry_run=True)
    assert response.status_code == 200
    report = response.json()
    entries = json.loads(raw)["entries"]
    assert report["dry_run"] is True and report["id"] is None and report["kind"] == "worldbook"
    assert report["creates"] == {"worldbook": 1, "entries": len(entries)}
    assert report["items"] == [entry["comment"] or f"entry {entry['uid']}, untitled" for entry in entries.values()]
    assert everything_count() == before


def test_the_import_page_shows_the_dry_run_then_imports(users):
    client = client_for(users["admin"])
    preset = json.dumps({"prompts": [{"identifier": "main", "name": "Main <b>bold</b>", "content": "x"}]}).encode()
    page = client.post("/resources/import/", {"kind": "preset", "dry_run": "1",
                                              "file": SimpleUploadedFile("mine.json", preset)})
    assert page.status_code == 200 and b'data-dry-run="true"' in page.content
    assert b"Main &lt;b&gt;bold&lt;/b&gt;" in page.content  # the prompt name is escaped, not markup
    assert Preset.objects.count() == 0
    page = client.post("/resources/import/", {"kind": "preset", "file": SimpleUploadedFile("mine.json", preset)})
    assert page.status_code == 200 and b'data-dry-run="false"' in page.content
    assert Preset.objects.get().name == "mine"


# ---------------------------------------------------------------------------------------------- bad files


def corrupted_png(raw: bytes) -> bytes:
    index = raw.index(b"tEXtchara") + 20  # a byte inside the card text: the chunk's CRC no longer matches
    return raw[:index] + bytes([raw[index] ^ 0x01]) + raw[index + 1:]


BAD_FILES = [
    # (kind, file bytes, status, code, words the error must contain)
    ("preset", json.dumps({"prompts": [{"identifier": "main"}, {"identifier": "x", "role": "narrator"}]}).encode(),
     400, "IMPORT_INVALID", "prompts[1].role"),
    ("preset", b'{"prompts": [', 400, "INPUT_NOT_JSON", "not JSON"),
    ("preset", b"\x89PNG\r\n\x1a\nrest", 415, "UNSUPPORTED_MEDIA_TYPE", "PNG"),
    ("preset", b"\xff\xfe\x00binary", 415, "UNSUPPORTED_MEDIA_TYPE", "UTF-8"),
    ("character", b"\x89PNG\r\n\x1a\n" + b"\x00" * 4, 400, "IMPORT_INVALID", "png.chunks[0]"),
    ("character", json.dumps({"spec": "chara_card_v2", "data": {"name": 7}}).encode(), 400, "IMPORT_INVALID",
     "data.name"),
    ("worldbook", json.dumps({"entries": {"1": {"uid": 1, "content": "x", "position": 12}}}).encode(), 400,
     "IMPORT_INVALID", "entries.1.position"),
    ("worldbook", json.dumps({"spec": "chara_card_v2", "data": {"name": "No book"}}).encode(), 400,
     "IMPORT_INVALID", "character_book"),
    ("persona", json.dumps({"name": "P", "depth": -1}).encode(), 400, "IMPORT_INVALID", "depth"),
]


@pytest.mark.parametrize(("kind", "raw", "status", "code", "words"), BAD_FILES,
                         ids=[f"{b[0]}-{b[3]}-{i}" for i, b in enumerate(BAD_FILES)])
def test_a_bad_file_is_refused_naming_the_field_and_stores_nothing(users, kind, raw, status, code, words):
    before = everything_count()
    response = upload(client_for(users["admin"]), kind, raw, "bad.json")
    assert response.status_code == status
    error = response.json()
    assert (error["ok"], error["code"], error["status"]) == (False, code, status)
    assert words in error["error"]
    assert everything_count() == before


def test_a_file_with_an_unterminated_string_is_refused_in_plain_words(users):
    response = upload(client_for(users["admin"]), "preset", b'{"name": "Lamp', "bad.json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "at at" not in error
    assert error.endswith("not JSON (Unterminated string starting at: line 1, column 10)")


def test_a_corrupted_png_card_stores_nothing(shared_fixtures, users):
    raw = (shared_fixtures / "sillytavern" / "st_card_Seraphina.png").read_bytes()
    response = upload(client_for(users["admin"]), "character", corrupted_png(raw), "broken.png")
    assert response.status_code == 400
    assert "CRC" in response.json()["error"] and "png.chunks[" in response.json()["error"]
    assert everything_count() == (0, 0, 0, 0, 0, 0)


def test_an_upload_over_5_mib_is_413(users):
    big = b'{"prompts": [], "padding": "' + b"x" * (5 * 1024 * 1024) + b'"}'
    response = upload(client_for(users["admin"]), "preset", big, "big.json")
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE" and "file" in response.json()["error"]
    assert everything_count() == (0, 0, 0, 0, 0, 0)


def test_a_failure_half_way_through_writing_stores_nothing(shared_fixtures, users, monkeypatch):
    """The preset row is written, then the entries fail: the transaction leaves neither."""
    raw = (shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_bytes()

    def refuse(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(PromptEntry.objects, "bulk_create", refuse)
    from strategies_app.services import preset_import

    with pytest.raises(RuntimeError):
        preset_import(user=users["admin"], data=json.loads(raw), name="Default")
    assert everything_count() == (0, 0, 0, 0, 0, 0)


def test_a_preset_with_null_and_tolerated_fields_imports_and_exports_as_written(users):
    from strategies_app import services

    data = {"prompts": [
        {"identifier": "main", "name": "Main", "role": None, "content": "Be brief.", "injection_position": None},
        {"identifier": "chatHistory", "name": "Chat History", "role": "", "marker": True, "injection_depth": -1},
        {"identifier": "main", "name": "Shadow", "content": "unused", "enabled": False}],
        "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main", "enabled": True},
                                                           {"identifier": "chatHistory", "enabled": True}]}]}
    report = services.preset_import(user=users["admin"], data=data, name="Lenient")
    assert any("prompts[1].role" in note for note in report.notes)
    assert any("prompts[2].identifier" in note for note in report.notes)
    row = Preset.objects.get(pk=report.id)
    exported = sillytavern.preset_document(row, row.entries.all())
    main, history = exported["prompts"][0], exported["prompts"][1]
    assert (main["role"], main["injection_position"], main["content"]) == (None, None, "Be brief.")
    assert (history["role"], history["injection_depth"]) == ("system", -1)
    assert [p["identifier"] for p in exported["prompts"]].count("main") == 1  # the shadowed definition is gone
