"""CharX character cards (`.charx`): a zip holding `card.json` (a V3 card) and its assets, sometimes appended to a
JPEG. Read in memory with `zipfile` under the same limits as any upload: at most `MAX_ENTRIES` entries, their
declared and actual uncompressed sizes within the upload cap (no zip bomb), no path outside the archive."""

from __future__ import annotations

import io
import json
import lzma
import zipfile
import zlib
from pathlib import PurePosixPath
from typing import Any

from assembly.reading import MAX_IMPORT_BYTES, ImportInvalid, read_object

MAX_ENTRIES = 1000
_ZIP_SIGNATURE = b"PK\x03\x04"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
# what zipfile and its decompressors raise on a corrupt or unsupported archive (bz2 raises OSError)
_UNREADABLE = (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError, ValueError, zlib.error,
               lzma.LZMAError)


def is_charx(raw: bytes) -> bool:
    """A zip, or a JPEG with a zip appended (zipfile finds the archive from its end)."""
    return raw.startswith(_ZIP_SIGNATURE) or (raw.startswith(_JPEG_SIGNATURE) and _ZIP_SIGNATURE in raw)


def _check_path(name: str) -> None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise ImportInvalid(f"charx[{name}]", "a path inside the archive (no absolute path, no '..')")


def card_from_charx(raw: bytes) -> dict[str, Any]:
    """CharX bytes -> the card object of its `card.json`."""
    text = card_json_from_charx(raw)
    try:
        card = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ImportInvalid("charx[card.json]", "UTF-8 JSON (a character card)") from None
    return read_object(card, "charx[card.json]", "a character card object")


def card_json_from_charx(raw: bytes) -> bytes:
    """CharX bytes -> the bytes of its `card.json`, within the archive limits (a caller that checks the JSON
    itself, like the web's input boundary, parses them)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except _UNREADABLE:
        raise ImportInvalid("charx", "a CharX archive (a zip holding card.json)", status=415) from None
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ImportInvalid("charx", f"an archive of at most {MAX_ENTRIES} entries ({len(infos)} found)",
                            status=413)
    for info in infos:
        _check_path(info.filename)
    total = sum(info.file_size for info in infos)
    if total > MAX_IMPORT_BYTES:
        raise ImportInvalid("charx", f"at most {MAX_IMPORT_BYTES} bytes uncompressed in all ({total} declared)",
                            status=413)
    card_info = next((info for info in infos if info.filename == "card.json"), None)
    if card_info is None:
        raise ImportInvalid("charx[card.json]", "a card.json at the top of the archive")
    try:
        with archive.open(card_info) as member:
            text = member.read(MAX_IMPORT_BYTES + 1)  # the declared size may lie: read no further than the cap
    except _UNREADABLE as error:
        raise ImportInvalid("charx[card.json]", f"a readable entry ({str(error) or type(error).__name__})") from None
    if len(text) > MAX_IMPORT_BYTES:
        raise ImportInvalid("charx[card.json]", f"at most {MAX_IMPORT_BYTES} bytes", status=413)
    return text
