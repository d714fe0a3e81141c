"""One input boundary for every importer (quality.md "Bad input"): API bodies, JSON files, PNG and CharX cards,
chat files (JSON lines) and the JSON fields of forms refuse the same values the same way: NaN / Infinity, numbers
past Python's int-digits limit, NUL, lone surrogates, JSON nested past the limit, and a key given twice in one
object (JavaScript would keep the last silently), with a 400 naming the place, storing nothing, never a 500.
A table: importer x bad value."""

import base64
import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from assembly.sillytavern.png import png_chunk, solid_png
from preview_app.models import SessionEvent
from strategies_app.models import Character, PendingUpload
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db

# name -> (a JSON value's text, the error code, words the refusal says)
BAD = {
    "nan": ("NaN", "INPUT_UNSAFE", "finite"),
    "infinity": ("-Infinity", "INPUT_UNSAFE", "finite"),
    "huge number": ("9" * 5000, "INPUT_UNSAFE", "4300 digits"),
    "nul": ('"a\\u0000b"', "INPUT_UNSAFE", "NUL"),
    "lone surrogate": ('"a\\ud800b"', "INPUT_UNSAFE", "surrogate"),
    "deep": ("[" * 900 + "]" * 900, "INPUT_UNSAFE", "nested"),
    "past the decoder's depth": ("[" * 200_000 + "]" * 200_000, "INPUT_UNSAFE", "expected JSON nested at most 64"),
    "repeated key": ('{"k": 1, "k": 2}', "INPUT_DUPLICATE_KEY", "each key once"),
}


def card_text(bad: str) -> str:
    return ('{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bad Card", "description": "d", '
            '"extensions": {"x": ' + bad + "}}}")


def png_with(text: str) -> bytes:
    image = solid_png()
    end = image.rindex(b"IEND") - 4
    chunk = png_chunk(b"tEXt", b"chara\x00" + base64.b64encode(text.encode("utf-8")))
    return image[:end] + chunk + image[end:]


def charx_with(text: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("card.json", text.encode("utf-8"))
    return out.getvalue()


def _assert_json_refusal(response, code, words):
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == code and words in body["error"], body


def _assert_page_refusal(response, words):
    assert response.status_code == 400, response.content[:300]
    assert words in response.content.decode()


@pytest.mark.parametrize("bad", BAD)
def test_api_character_import_json_body(users, bad):
    text, code, words = BAD[bad]
    response = client_for(users["admin"]).post("/api/resources/character/import", card_text(text),
                                               content_type="application/json")
    _assert_json_refusal(response, code, words)
    assert not Character.objects.exists()


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("shape", ["png", "charx"])
def test_api_character_import_png_and_charx(users, bad, shape):
    text, code, words = BAD[bad]
    raw = png_with(card_text(text)) if shape == "png" else charx_with(card_text(text))
    for dry_run in ("1", "0"):
        response = client_for(users["admin"]).post(f"/api/resources/character/import?dry_run={dry_run}",
                                                   {"file": SimpleUploadedFile(f"bad.{shape}", raw)})
        _assert_json_refusal(response, code, words)
    assert not Character.objects.exists()


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("shape", ["json", "png", "charx"])
def test_import_page_refuses_in_the_dry_run(users, bad, shape):
    text, _code, words = BAD[bad]
    raw = {"json": card_text(text).encode("utf-8"), "png": png_with(card_text(text)),
           "charx": charx_with(card_text(text))}[shape]
    response = client_for(users["admin"]).post("/resources/import/", {
        "kind": "character", "dry_run": "1", "file": SimpleUploadedFile(f"bad.{shape}", raw)})
    _assert_page_refusal(response, words)
    assert not Character.objects.exists() and not PendingUpload.objects.exists()


@pytest.mark.parametrize("bad", BAD)
def test_api_event_body(world, users, bad):
    text, code, words = BAD[bad]
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    body = '{"role": "user", "content": ' + text + "}"
    response = client_for(users["designer"]).post(f"/api/sessions/{session.pk}/events", body,
                                                  content_type="application/json")
    _assert_json_refusal(response, code, words)
    assert SessionEvent.objects.filter(session=session).count() == before


def test_a_repeated_key_is_named_by_its_path(world, users):
    body = '{"role": "user", "content": "a", "content": "b"}'
    response = client_for(users["designer"]).post(f"/api/sessions/{world['session'].pk}/events", body,
                                                  content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]["path"] == "body.content"
    nested = card_text('{"a": [{"b": 1, "b": 2}]}')
    response = client_for(users["admin"]).post("/api/resources/character/import", nested,
                                               content_type="application/json")
    assert response.json()["detail"]["path"] == "file.data.extensions.x.a[0].b"  # an import's body is its file


@pytest.mark.parametrize("bad", BAD)
def test_chat_import_file(world, users, bad):
    text, _code, words = BAD[bad]
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    chat = ('{"user_name": "U", "character_name": "C", "chat_metadata": {}}\n'
            '{"name": "U", "is_user": true, "mes": "hi", "extra": {"x": ' + text + "}}\n")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/chat/import/", {
        "file": SimpleUploadedFile("chat.jsonl", chat.encode("utf-8"))})
    _assert_page_refusal(response, words)
    assert "line 2" in response.content.decode()
    assert SessionEvent.objects.filter(session=session).count() == before


@pytest.mark.parametrize("bad", BAD)
def test_form_json_field(world, users, bad):
    text, _code, words = BAD[bad]
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    calls = ('[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "x": ' + text
             + "}]")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/events/", {
        "new-role": "assistant", "new-content": "calling", "new-tool_calls": calls})
    _assert_page_refusal(response, words)
    assert SessionEvent.objects.filter(session=session).count() == before


def test_a_safe_card_still_imports_everywhere(users):
    card = json.dumps({"spec": "chara_card_v2", "spec_version": "2.0",
                       "data": {"name": "Fine", "description": "d", "extensions": {"x": {"k": [1, 2.5, "ü"]}}}})
    client = client_for(users["admin"])
    for raw, name in ((card.encode(), "fine.json"), (png_with(card), "fine.png"), (charx_with(card), "fine.charx")):
        response = client.post("/api/resources/character/import", {"file": SimpleUploadedFile(name, raw)})
        assert response.status_code == 201, response.content[:300]
    assert Character.objects.filter(name="Fine").count() == 3
