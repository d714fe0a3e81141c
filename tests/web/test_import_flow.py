"""The import page's one-pick flow (web.md screen 6): the kind detected from the file and changeable, a dry run
whose "Import it" imports the same upload by token (kept in the database, the uploader's only, expiring), exports
named after the resource, PNG exports with `ccv3` and `chara`; and credentials stripped from presets (quality.md,
Security)."""

import base64
import json
import re
from datetime import timedelta

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from assembly.sillytavern.png import _png_text_chunks
from strategies_app.models import Character, PendingUpload, Preset, WorldBook
from tests.web.conftest import client_for, csrf_client_for

SECRET_PRESET = {
    "prompts": [{"identifier": "main", "name": "Main", "content": "Be kind."}],
    "temperature": 0.7,
    "proxy_password": "hunter2",
    "reverse_proxy": "https://proxy.example/v1",
    "custom_include_headers": "Authorization: Bearer sk-live-123",
    "custom_url": "https://bob:pw@llm.example/v1",
    "openrouter_api_key": "sk-or-1",
    "api_key_custom": "k",
    "password_hint": "x",
}
CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Mira Vale", "description": "A scout.", "first_mes": "Hello."}}


def page_post(client, **data):
    return client.post("/resources/import/", data)


def token_of(page) -> str:
    return re.search(rb'name="token" value="([^"]+)"', page.content).group(1).decode()


def test_the_kind_is_detected_and_import_it_needs_no_second_pick(users):
    client = client_for(users["admin"])
    raw = json.dumps(CARD).encode()
    page = page_post(client, kind="auto", dry_run="1", file=SimpleUploadedFile("mira.json", raw))
    assert page.status_code == 200 and b'data-detected-kind="character"' in page.content
    assert b"data-import-it" in page.content and Character.objects.count() == 0
    token = token_of(page)
    assert PendingUpload.objects.get(token=token).owner == users["admin"]
    page = page_post(client, kind="character", token=token)  # no file this time
    assert page.status_code == 200 and b'data-dry-run="false"' in page.content
    assert Character.objects.get().name == "Mira Vale"
    assert not PendingUpload.objects.filter(token=token).exists()  # used once


def test_a_wrong_choice_explains_itself(users):
    page = page_post(client_for(users["admin"]), kind="persona", dry_run="1",
                     file=SimpleUploadedFile("mira.json", json.dumps(CARD).encode()))
    assert page.status_code == 400
    assert b"looks like a character card, not a persona" in page.content


def _dry_run_ticked(page) -> bool:
    box = re.search(rb'<input type="checkbox" name="dry_run"[^>]*>', page.content).group(0)
    return b" checked" in box


def test_a_refused_real_import_shows_the_form_again_with_dry_run_unticked(users):
    client = client_for(users["admin"])
    assert _dry_run_ticked(client.get("/resources/import/"))  # a fresh page starts with a dry run
    page = page_post(client, kind="preset", file=SimpleUploadedFile("broken.json", b"{not json"))
    assert page.status_code == 400 and not _dry_run_ticked(page)
    page = page_post(client, kind="preset", dry_run="1", file=SimpleUploadedFile("broken.json", b"{not json"))
    assert page.status_code == 400 and _dry_run_ticked(page)


def test_unknown_foreign_and_expired_tokens_are_refused_naming_the_token(users):
    admin = client_for(users["admin"])
    page = page_post(admin, kind="auto", dry_run="1",
                     file=SimpleUploadedFile("mira.json", json.dumps(CARD).encode()))
    token = token_of(page)
    unknown = page_post(admin, kind="auto", token="nope")
    assert unknown.status_code == 400 and b"token: expected the token of an upload of yours" in unknown.content
    other = users["admin"].__class__.objects.create_superuser("admin-two", password="x")
    assert page_post(client_for(other), kind="auto", token=token).status_code == 400  # not theirs
    PendingUpload.objects.filter(token=token).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = page_post(admin, kind="auto", token=token)
    assert expired.status_code == 410 and b"expired" in expired.content
    assert Character.objects.count() == 0


def test_import_it_needs_csrf(users):
    client = csrf_client_for(users["admin"])
    assert client.post("/resources/import/", {"kind": "auto", "token": "x"}).status_code == 403


def test_preset_credentials_are_removed_listed_and_never_exported(users):
    admin = client_for(users["admin"])
    raw = json.dumps(SECRET_PRESET).encode()
    page = page_post(admin, kind="auto", dry_run="1", file=SimpleUploadedFile("leaky.json", raw))
    assert page.status_code == 200 and b"data-removed-secrets" in page.content
    for name in ("proxy_password", "reverse_proxy", "custom_include_headers", "openrouter_api_key",
                 "api_key_custom", "password_hint", "custom_url"):
        assert name.encode() in page.content
    page = page_post(admin, kind="preset", token=token_of(page))
    preset = Preset.objects.get()
    stored = json.dumps(preset.options)
    assert "hunter2" not in stored and "Bearer" not in stored and "sk-or" not in stored and "bob" not in stored
    assert preset.options["custom_url"] == "https://llm.example/v1"
    exported = client_for(users["qa"]).get(f"/api/resources/preset/{preset.pk}/export")
    assert exported.status_code == 200
    assert "Authorization" not in exported.content.decode() and "hunter2" not in exported.content.decode()
    assert exported["Content-Disposition"] == 'attachment; filename="leaky-preset.json"'


def test_presets_stored_with_credentials_export_none(users):
    preset = Preset.objects.create(name="Old one", options={"custom_include_headers": "Authorization: x",
                                                            "temperature": 1}, has_prompt_order=False)
    exported = client_for(users["qa"]).get(f"/api/resources/preset/{preset.pk}/export").json()
    assert "custom_include_headers" not in exported and exported["temperature"] == 1


def test_png_export_is_named_after_the_card_and_carries_ccv3_and_chara(users):
    admin = client_for(users["admin"])
    page_post(admin, kind="character", file=SimpleUploadedFile("mira.json", json.dumps(CARD).encode()))
    row = Character.objects.get()
    response = admin.get(f"/api/resources/character/{row.pk}/export?format=png")
    assert response["Content-Disposition"] == 'attachment; filename="mira-vale-character.png"'
    chunks = _png_text_chunks(response.content)
    v2 = json.loads(base64.b64decode(chunks["chara"][0]))
    v3 = json.loads(base64.b64decode(chunks["ccv3"][0]))
    assert v2["spec"] == "chara_card_v2" and v3["spec"] == "chara_card_v3"
    assert v2["data"]["name"] == v3["data"]["name"] == "Mira Vale"


def test_a_charx_card_imports_from_the_page_with_its_kind_detected(users):
    from tests.engine.sillytavern.test_charx import CARD as V3
    from tests.engine.sillytavern.test_charx import archive
    raw = archive({"card.json": json.dumps(V3).encode(), "assets/icon/main.png": b"x"})
    page = page_post(client_for(users["admin"]), kind="auto", file=SimpleUploadedFile("ivo.charx", raw))
    assert page.status_code == 200, page.content
    assert b'data-detected-kind="character"' in page.content and Character.objects.get().name == "Ivo"


def test_a_world_book_role_null_round_trips(users):
    book = {"entries": {"0": {"uid": 0, "key": ["glade"], "content": "A glade.", "role": None},
                        "1": {"uid": 1, "key": ["river"], "content": "A river.", "role": 2}}}
    admin = client_for(users["admin"])
    page_post(admin, kind="auto", file=SimpleUploadedFile("wilds.json", json.dumps(book).encode()))
    row = WorldBook.objects.get()
    exported = admin.get(f"/api/resources/worldbook/{row.pk}/export")
    assert exported["Content-Disposition"] == 'attachment; filename="wilds-worldbook.json"'
    entries = exported.json()["entries"]
    assert entries["0"]["role"] is None and entries["1"]["role"] == 2


def test_sloppy_files_import_and_the_report_lists_what_was_defaulted(users):
    admin = client_for(users["admin"])
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {**CARD["data"], "character_book": None}}
    page = page_post(admin, kind="auto", dry_run="1", file=SimpleUploadedFile("mira.json", json.dumps(card).encode()))
    assert page.status_code == 200 and b"character_book is null" in page.content
    book = {"entries": {"7": {"uid": 7, "key": ["glade"], "content": "A glade."}}}
    page = page_post(admin, kind="auto", dry_run="1", file=SimpleUploadedFile("b.json", json.dumps(book).encode()))
    assert page.status_code == 200 and b"defaulted: scan_depth missing in entries 7" in page.content


def test_the_report_notes_are_in_the_pages_language(users):
    admin = client_for(users["admin"])
    admin.cookies["django_language"] = "zh-hans"
    entries = {str(uid): {"uid": uid, "key": ["glade"], "content": "A glade."} for uid in range(12)}
    page = page_post(admin, kind="auto", dry_run="1",
                     file=SimpleUploadedFile("b.json", json.dumps({"entries": entries}).encode()))
    html = page.content.decode()
    assert page.status_code == 200
    assert "已取默认值：条目 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 及另外 2 个 缺少 scan_depth，已使用默认值" in html
    assert "defaulted:" not in html and 'lang="en"' not in html.split('data-report-kind', 1)[1]


def test_a_big_books_report_names_its_first_entries_and_counts_the_rest(users):
    from strategies_app.resource_views import ITEMS_LISTED

    entries = {str(i): {"uid": i, "key": [f"k{i}"], "comment": f"entry {i:04d}", "content": f"c{i}"}
               for i in range(ITEMS_LISTED + 50)}
    raw = json.dumps({"entries": entries}).encode()
    page = page_post(client_for(users["admin"]), kind="worldbook", dry_run="1",
                     file=SimpleUploadedFile("big.json", raw)).content.decode()
    listed = re.findall(r"<li>entry (\d{4})</li>", page)
    assert listed == [f"{i:04d}" for i in range(ITEMS_LISTED)]
    assert 'data-unlisted-items="50"' in page and "And 50 more." in page
    assert not WorldBook.objects.exists()  # a dry run stores nothing
