"""Limits with clear 413s (quality.md, Bad input; studio/limits.py): events per session, lines per chat import, inflated
PNG text, avatar size; and Django's own refusals of a body (too big, too many fields, a bad multipart) as friendly pages
/ JSON naming the limit."""

import io
import struct
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from assembly.reading import MAX_IMPORT_BYTES, ImportInvalid
from assembly.sillytavern.png import PNG_SIGNATURE, card_from_png, card_png, png_chunk, solid_png
from preview_app import services
from preview_app.models import SessionEvent
from strategies_app.models import Character, Persona
from studio import limits
from studio.errors import ServiceError
from tests.web.conftest import client_for

CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Big"}}


def huge_png(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` (its pixel data is a stub nothing should ever decode)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return PNG_SIGNATURE + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", zlib.compress(b"\x00")) + png_chunk(
        b"IEND", b"")


def test_an_avatar_declaring_30000_px_is_refused_before_decoding(users):
    client = client_for(users["admin"])
    before = Character.objects.count()
    png = card_png(CARD, huge_png(30_000, 30_000))
    response = client.post("/api/resources/character/import", data=png, content_type="image/png")
    assert response.status_code == 413, response.content
    assert "at most 4096 x 4096 pixels, got 30000 x 30000" in response.json()["error"]
    assert Character.objects.count() == before


def test_an_avatar_of_4096_px_is_accepted_by_the_reader():
    card, _ = card_from_png(card_png(CARD, huge_png(4096, 4096)))
    assert card["data"]["name"] == "Big"


def test_a_ztxt_chunk_inflating_past_the_upload_cap_is_a_413():
    bomb = zlib.compress(b"A" * (MAX_IMPORT_BYTES + 1024), 9)
    image = solid_png()
    png = image[:-12] + png_chunk(b"zTXt", b"chara\x00\x00" + bomb) + image[-12:]
    assert len(png) < 100_000  # small on the wire, big when inflated
    with pytest.raises(ImportInvalid) as refused:
        card_from_png(png)
    assert refused.value.status == 413 and "inflating to at most" in refused.value.message


def test_a_chat_import_of_more_lines_than_the_limit_is_refused_unread(world):
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    chat = b'{"user_name": "U"}\n' + b'{"mes": "w", "is_user": true}\n' * limits.MAX_CHAT_IMPORT_LINES
    with pytest.raises(ServiceError) as refused:
        services.chat_import(session=session, data=chat)
    assert refused.value.status == 413 and "at most 20000 lines" in refused.value.message
    assert SessionEvent.objects.filter(session=session).count() == before


def test_the_chat_import_page_says_the_line_limit(world):
    session = world["session"]
    client = client_for(session.owner)
    chat = b'{"mes": "w", "is_user": true}\n' * 120_000
    response = client.post(f"/sessions/{session.pk}/chat/import/",
                           {"file": SimpleUploadedFile("big.jsonl", chat, content_type="application/jsonl")})
    assert response.status_code == 413
    assert "at most 20000 lines" in response.content.decode()


def test_events_per_session_are_capped(world, monkeypatch):
    session = world["session"]
    count = SessionEvent.objects.filter(session=session).count()
    monkeypatch.setattr(limits, "MAX_EVENTS_PER_SESSION", count)
    client = client_for(session.owner)
    response = client.post(f"/api/sessions/{session.pk}/events", {"role": "user", "content": "one more"},
                           content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"]["path"] == "events" and f"at most {count} events" in response.json()["error"]
    with pytest.raises(ServiceError, match="events in a session"):
        services.turn_commit(session=session, reply="hi")
    assert SessionEvent.objects.filter(session=session).count() == count


# -------------------------------------------------------------------------------------------------- Django's own


def test_a_huge_urlencoded_post_is_a_friendly_413_page(world, settings):
    session = world["session"]
    client = client_for(session.owner)
    body = "content=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
    response = client.post(f"/sessions/{session.pk}/events/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413
    page = response.content.decode()
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in page and str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in page
    assert "<title>Too large" in page


def test_a_huge_urlencoded_post_to_the_api_is_json(users, settings):
    client = client_for(users["designer"])
    body = "name=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
    response = client.post("/api/sessions", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
    assert response.json()["detail"]["limit"] == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_too_many_fields_is_a_400_naming_the_limit(world, settings):
    session = world["session"]
    client = client_for(session.owner)
    body = "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 5))
    response = client.post(f"/sessions/{session.pk}/events/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert f"at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} form fields" in response.content.decode()


@pytest.mark.parametrize("name, says", [
    ("n" * 5000 + ".json", "part headers (file names included) of at most 10 KiB"),
    ("名" * 5000 + ".json", "part headers (file names included) of at most 10 KiB"),
    ("n" * 300 + ".json", "file: expected a file name of at most 255 characters, got 305"),
])
def test_a_long_upload_name_is_a_400_naming_the_limit(users, name, says):
    client = client_for(users["admin"])
    upload = io.BytesIO(b'{"name": "Sam"}')
    upload.name = name  # not SimpleUploadedFile: it would cut the name to 255 before sending
    before = Persona.objects.count()
    response = client.post("/resources/import/", {"kind": "persona", "file": upload})
    assert response.status_code == 400
    page = response.content.decode()
    assert says in page and "Bad Request (400)" not in page
    assert Persona.objects.count() == before
    upload.seek(0)
    api = client.post("/api/resources/persona/import", {"file": upload})
    assert api.status_code == 400 and says in api.json()["error"]


def test_a_png_card_with_a_nul_in_its_json_is_refused_at_the_boundary(users):
    client = client_for(users["admin"])
    before = Character.objects.count()
    png = card_png({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "A\x00"}})
    response = client.post("/api/resources/character/import", data=png, content_type="image/png")
    assert response.status_code == 400
    assert response.json()["detail"]["path"] == "file.png[ccv3].data.name"  # card_png writes ccv3 and chara; ccv3 is read first
    assert Character.objects.count() == before


def test_an_oversized_multipart_post_is_refused_before_its_file_is_written(client, monkeypatch):
    """Every posted form is read before the login and CSRF checks, and a file part past the memory cap was streamed
    to a temporary file whatever its size: anyone, logged in or not, could fill the disk. The body's declared
    length is checked first."""
    from django.core.files.uploadhandler import TemporaryFileUploadHandler

    written = []
    monkeypatch.setattr(TemporaryFileUploadHandler, "receive_data_chunk",
                        lambda self, raw, start: written.append(len(raw)))
    big = SimpleUploadedFile("big.json", b"x" * (12 * 1024 * 1024), content_type="application/json")
    response = client.post("/accounts/login/", {"file": big})
    assert response.status_code == 413 and not written
    assert "<title>Too large" in response.content.decode()
