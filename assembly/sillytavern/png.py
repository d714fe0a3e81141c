"""PNG character cards: the card JSON in a `chara` / `ccv3` text chunk (base64), read and written here."""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from typing import Any

from assembly.reading import MAX_IMPORT_BYTES, ImportInvalid, read_object

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CARD_CHUNKS = ("ccv3", "chara")  # preferred first, as SillyTavern reads them
_MAX_INFLATED = MAX_IMPORT_BYTES  # a compressed chunk may not smuggle more than the upload cap
MAX_AVATAR_SIDE = 4096  # pixels a side; read from IHDR, before anything decodes the image


def _inflate(data: bytes, path: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, _MAX_INFLATED)
    except zlib.error as error:
        raise ImportInvalid(path, f"valid zlib-compressed text ({error})") from None
    if inflater.unconsumed_tail:
        raise ImportInvalid(path, f"compressed text inflating to at most {_MAX_INFLATED} bytes (the upload cap)",
                            status=413)
    return out


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, which the PNG format puts first."""
    if len(png) < 24 or png[12:16] != b"IHDR":
        raise ImportInvalid("png.chunks[0]", "an IHDR chunk first (the image header)")
    return struct.unpack(">II", png[16:24])


def check_avatar_size(png: bytes) -> None:
    width, height = png_size(png)
    if width > MAX_AVATAR_SIDE or height > MAX_AVATAR_SIDE:
        raise ImportInvalid("png.IHDR", f"an image of at most {MAX_AVATAR_SIDE} x {MAX_AVATAR_SIDE} pixels, got "
                            f"{width} x {height}", status=413)


def _png_text_chunks(png: bytes) -> dict[str, tuple[str, str]]:
    """Card text chunks (tEXt, zTXt, iTXt) by lower-case keyword -> (text, path)."""
    found: dict[str, tuple[str, str]] = {}
    position = len(PNG_SIGNATURE)
    index = 0
    while position < len(png):
        where = f"png.chunks[{index}]"
        if position + 8 > len(png):
            raise ImportInvalid(where, "a complete chunk header (the PNG is truncated)")
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        end = position + 12 + length
        if end > len(png):
            raise ImportInvalid(where, f"{length} bytes of chunk data and a CRC (the PNG is truncated)")
        body = png[position + 8:position + 8 + length]
        if zlib.crc32(kind + body) != int.from_bytes(png[end - 4:end], "big"):
            raise ImportInvalid(where, f"a correct CRC for the {kind.decode('latin-1')!r} chunk")
        position, index = end, index + 1
        if kind == b"IEND":
            break
        if kind not in (b"tEXt", b"zTXt", b"iTXt") or b"\x00" not in body:
            continue
        keyword_bytes, rest = body.split(b"\x00", 1)
        keyword = keyword_bytes.decode("latin-1").lower()
        if keyword not in _CARD_CHUNKS or keyword in found:
            continue
        chunk_path = f"png[{keyword}]"
        if kind == b"tEXt":
            text = rest.decode("latin-1")
        elif kind == b"zTXt":
            if not rest or rest[0] != 0:
                raise ImportInvalid(chunk_path, "zTXt compression method 0")
            text = _inflate(rest[1:], chunk_path).decode("latin-1")
        else:
            if len(rest) < 2 or rest[2:].count(b"\x00") < 2:
                raise ImportInvalid(chunk_path, "an iTXt chunk with language and translated keyword fields")
            compressed, _method = rest[0], rest[1]
            _language, _translated, payload = rest[2:].split(b"\x00", 2)
            raw = _inflate(payload, chunk_path) if compressed else payload
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ImportInvalid(chunk_path, "UTF-8 text in the iTXt chunk") from None
        found[keyword] = (text, chunk_path)
    return found


def card_from_png(png: bytes) -> tuple[dict[str, Any], str]:
    decoded, path = card_json_from_png(png)
    try:
        card = json.loads(decoded)
    except (ValueError, RecursionError):
        raise ImportInvalid(path, "base64-encoded JSON (the decoded text is not JSON)") from None
    return read_object(card, path, "a character card object"), path


def card_json_from_png(png: bytes) -> tuple[str, str]:
    """(the decoded JSON text of the card chunk, its path): for a caller that checks the JSON itself, like the web's
    input boundary."""
    check_avatar_size(png)
    chunks = _png_text_chunks(png)
    for keyword in _CARD_CHUNKS:
        if keyword in chunks:
            text, path = chunks[keyword]
            try:
                return base64.b64decode("".join(text.split()), validate=True).decode("utf-8"), path
            except (binascii.Error, ValueError):
                raise ImportInvalid(path, "base64-encoded UTF-8 JSON") from None
    raise ImportInvalid("png", "a PNG with a 'chara' or 'ccv3' text chunk (a SillyTavern character card)",
                        status=415)



# -------------------------------------------------------------------------------------------------- writing


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def solid_png(width: int = 1, height: int = 1, rgb: tuple[int, int, int] = (128, 128, 128)) -> bytes:
    """A PNG of one colour (for cards that came without an image, and the demo's avatar)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress((b"\x00" + bytes(rgb) * width) * height)
    return PNG_SIGNATURE + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", pixels) + png_chunk(b"IEND", b"")


def card_png(card: dict[str, Any], image: bytes | None = None) -> bytes:
    """`image` (a PNG; default a plain one) with `card` in a `chara` text chunk (the V2 card) and a `ccv3` one (the
    same card as V3), both base64 JSON, as SillyTavern writes cards. Card chunks already in the image (`chara`,
    `ccv3`) are dropped so the new card is the one read back."""
    image = image or solid_png()
    text = base64.b64encode(json.dumps(card, ensure_ascii=False).encode("utf-8"))
    v3 = {**card, "spec": "chara_card_v3", "spec_version": "3.0"}
    text_v3 = base64.b64encode(json.dumps(v3, ensure_ascii=False).encode("utf-8"))
    out, position = [image[:len(PNG_SIGNATURE)]], len(PNG_SIGNATURE)
    while position < len(image):
        length, kind = struct.unpack(">I4s", image[position:position + 8])
        chunk = image[position:position + 12 + length]
        position += 12 + length
        keyword = chunk[8:8 + length].split(b"\x00", 1)[0].lower()
        if kind in (b"tEXt", b"zTXt", b"iTXt") and keyword in (b"chara", b"ccv3"):
            continue
        if kind == b"IEND":
            out.append(png_chunk(b"tEXt", b"chara\x00" + text))
            out.append(png_chunk(b"tEXt", b"ccv3\x00" + text_v3))
            out.append(chunk)
            break
        out.append(chunk)
    return b"".join(out)
