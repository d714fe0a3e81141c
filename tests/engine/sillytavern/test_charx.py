"""CharX cards (the CharX format): a zip with card.json (also appended to a JPEG) reads like a V3 card; paths
outside the archive, too many entries and zip bombs are refused naming the part."""

import io
import json
import zipfile

import pytest

from assembly.reading import MAX_IMPORT_BYTES, ImportInvalid
from assembly.sillytavern.card import import_character
from assembly.sillytavern.charx import MAX_ENTRIES, card_from_charx, is_charx

CARD = {"spec": "chara_card_v3", "spec_version": "3.0",
        "data": {"name": "Ivo", "description": "A smith.", "first_mes": "Hm.", "character_book": None}}


def archive(members: dict[str, bytes], *, compression=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return out.getvalue()


def test_a_charx_reads_like_its_v3_card():
    raw = archive({"card.json": json.dumps(CARD).encode(), "assets/icon/main.png": b"\x89PNG..."})
    assert is_charx(raw)
    assert import_character(card_from_charx(raw)).name == "Ivo"


def test_a_zip_appended_to_a_jpeg_is_read_too():
    raw = b"\xff\xd8\xff\xe0" + b"\x00" * 64 + b"\xff\xd9" + archive({"card.json": json.dumps(CARD).encode()})
    assert is_charx(raw) and card_from_charx(raw)["data"]["name"] == "Ivo"


@pytest.mark.parametrize("name", ["../evil.json", "/etc/passwd", "assets/../../x", "C:/x", "a\\..\\..\\b"])
def test_paths_outside_the_archive_are_refused(name):
    raw = archive({"card.json": json.dumps(CARD).encode(), name: b"x"})
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(raw)
    assert error.value.path.startswith("charx[") and "inside the archive" in error.value.expected


def test_a_zip_bomb_is_413():
    raw = archive({"card.json": json.dumps(CARD).encode(), "assets/big.bin": b"\x00" * (MAX_IMPORT_BYTES + 1)})
    assert len(raw) < MAX_IMPORT_BYTES // 100  # small on the wire, huge inflated
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(raw)
    assert error.value.status == 413 and "uncompressed" in error.value.expected


def test_too_many_entries_is_413():
    raw = archive({"card.json": b"{}", **{f"a/{i}": b"" for i in range(MAX_ENTRIES + 1)}},
                  compression=zipfile.ZIP_STORED)
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(raw)
    assert error.value.status == 413


@pytest.mark.parametrize(("members", "path"), [({"other.json": b"{}"}, "charx[card.json]"),
                                                ({"card.json": b"not json"}, "charx[card.json]")])
def test_a_missing_or_broken_card_json_names_it(members, path):
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(archive(members))
    assert error.value.path == path


def test_not_a_zip_is_415():
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(b"PK\x03\x04garbage")
    assert error.value.status == 415


def _patched(compression: int, patch) -> bytes:
    raw = bytearray(archive({"card.json": json.dumps(CARD).encode()}, compression=compression))
    patch(raw, 30 + len("card.json"), raw.index(b"PK\x01\x02"), raw.rindex(b"PK\x05\x06"))
    return bytes(raw)


def _garble(raw: bytearray, start: int, stop: int) -> None:
    for i in range(start, stop):
        raw[i] ^= 0xFF


CORRUPT = {  # each made one of zipfile's or a decompressor's own exceptions before they were refused
    "version 9.7 needed": _patched(zipfile.ZIP_STORED, lambda r, _d, cd, _e: r.__setitem__(
        slice(cd + 6, cd + 8), (97).to_bytes(2, "little"))),
    "deflate stream": _patched(zipfile.ZIP_DEFLATED, lambda r, d, _c, _e: r.__setitem__(slice(d, d + 2), b"\xff\xff")),
    "lzma stream": _patched(zipfile.ZIP_LZMA, lambda r, d, _c, _e: _garble(r, d + 4, d + 12)),
    "directory past the end": _patched(zipfile.ZIP_STORED, lambda r, _d, _c, e: r.__setitem__(
        slice(e + 16, e + 20), (int.from_bytes(r[e + 16:e + 20], "little") + 100_000).to_bytes(4, "little"))),
    "entry past the end": _patched(zipfile.ZIP_STORED, lambda r, _d, cd, _e: r.__setitem__(
        slice(cd + 20, cd + 28), (100_000).to_bytes(4, "little") * 2)),
}


@pytest.mark.parametrize("raw", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_or_unsupported_archive_is_refused_as_import_invalid(raw):
    with pytest.raises(ImportInvalid) as error:
        card_from_charx(raw)
    assert error.value.code == "IMPORT_INVALID" and error.value.path.startswith("charx")
