"""The studio's documented limits (docs/architecture.md "Input boundary and limits"), each refused with a 413 that
names the limit: one place to read them, so a page, the API and an importer say the same number."""

from __future__ import annotations

from assembly.reading import MAX_IMPORT_BYTES, MAX_JSON_DEPTH
from assembly.sillytavern.png import MAX_AVATAR_SIDE
from studio.errors import ServiceError

MAX_EVENTS_PER_SESSION = 20_000  # a session page and its preview stay usable (quality.md, Bad input)
MAX_CHAT_IMPORT_LINES = 20_000
MAX_UPLOAD_BYTES = MAX_IMPORT_BYTES
MAX_FIELDS = 1_000  # Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (the default)
MAX_FILE_NAME = 255
MAX_GREETINGS = 100_000  # a greeting number above it is refused before the card is read

__all__ = ["MAX_AVATAR_SIDE", "MAX_JSON_DEPTH", "MAX_UPLOAD_BYTES", "check_chat_lines", "check_event_count"]


def over_limit(field: str, expected: str, *, limit: int, got: int | None = None) -> ServiceError:
    tail = f", got {got}" if got is not None else ""
    return ServiceError("PAYLOAD_TOO_LARGE", f"{field}: expected {expected}{tail}", status=413,
                        detail={"path": field, "limit": limit, "expected": expected})


def check_event_count(current: int, adding: int = 1) -> None:
    """Refuse to grow a session's history past MAX_EVENTS_PER_SESSION."""
    if current + adding > MAX_EVENTS_PER_SESSION:
        raise over_limit("events", f"at most {MAX_EVENTS_PER_SESSION} events in a session (it has {current}, "
                         f"this adds {adding})", limit=MAX_EVENTS_PER_SESSION)


def check_chat_lines(data: bytes | str) -> None:
    """Refuse a chat file of more than MAX_CHAT_IMPORT_LINES lines before parsing any of it."""
    lines = data.count(b"\n" if isinstance(data, bytes) else "\n") + 1
    if lines > MAX_CHAT_IMPORT_LINES:
        raise over_limit("file", f"a chat file of at most {MAX_CHAT_IMPORT_LINES} lines", limit=MAX_CHAT_IMPORT_LINES,
                         got=lines)
