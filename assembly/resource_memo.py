"""Parsed resources remembered by content, so a request that sends the same resources again (a re-preview, the next
turn of a chat) neither walks them for unsafe values nor parses them a second time.

The key is the raw JSON pickled in fast mode (no memo), or a digest of those bytes when they are long: the bytes say
only what the value is, every type written apart (bool from int, list from tuple, str from bytes), and they load back
to the value, so two values with one key are the same JSON. Only plain data is written (`_PlainData` refuses everything else, a model or any other
object, as marshal did before at twice the cost), so such a value has no key and the caller takes the slow path.
Only resources that arrived inside a request dict are remembered: that request was checked by `find_unsafe` first,
so a remembered key also means "already checked". The parsed models are frozen, so one copy can be shared.

A request's settings (everything but its conversation) are remembered the same way, by the same kind of key: what
`assemble()` decided from them (api._Decided) is the same for every request whose settings pickle to the same
bytes, and nearly every request of a chat repeats the last one's settings.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from assembly.sillytavern.models import Resources

_SIZE = 64
# Up to this size the pickled bytes are the key themselves (a dict lookup hashes and compares them: half the cost of a
# digest, and no collision at all), so at most _SIZE of them are kept; a longer one is keyed by its SHA-256 digest,
# after a prefix no pickle starts with (each starts with the PROTO opcode, b"\x80").
_WHOLE_KEY_BYTES = 64 * 1024
_DIGEST_PREFIX = b"sha256:"
_parsed: OrderedDict[bytes, Resources] = OrderedDict()
_lock = threading.Lock()


class _PlainData(pickle.Pickler):
    """Writes only what JSON decodes to (and a few more builtin types: bytes, sets); anything else is refused.
    The C pickler asks `reducer_override` about every object outside its exact builtin types."""

    def reducer_override(self, obj: Any) -> Any:
        raise ValueError(f"not plain data: {type(obj).__name__}")


def _pickled(raw: Any) -> io.BytesIO | None:
    out = io.BytesIO()
    pickler = _PlainData(out, 5)
    pickler.fast = True  # no memo: the bytes follow the content only, never which objects are shared
    try:
        pickler.dump(raw)
    except (ValueError, RecursionError):  # an object (a model), a cycle, or too deep: no key
        return None
    return out


def _key(out: io.BytesIO) -> bytes:
    if out.tell() <= _WHOLE_KEY_BYTES:
        return out.getvalue()
    return _DIGEST_PREFIX + hashlib.sha256(out.getbuffer()).digest()  # with the CPU's SHA instructions


def resources_key(raw: Any) -> bytes | None:
    """The content key of a request's raw `resources`, or None when it is not plain JSON data."""
    if not isinstance(raw, dict):
        return None
    out = _pickled(raw)
    return None if out is None else _key(out)


def _recall(memo: OrderedDict[bytes, Any], key: bytes) -> Any:
    """The value under `key` (now the most recent), or None: both memos are kept least recently used first."""
    with _lock:
        value = memo.get(key)
        if value is not None:
            memo.move_to_end(key)
        return value


def _keep(memo: OrderedDict[bytes, Any], key: bytes, value: Any, size: int) -> None:
    with _lock:
        memo[key] = value
        if len(memo) > size:
            memo.popitem(last=False)


def remembered(key: bytes | None) -> Resources | None:
    return None if key is None else _recall(_parsed, key)


def remember(key: bytes, parsed: Resources) -> None:
    _keep(_parsed, key, parsed, _SIZE)


@dataclass(frozen=True, slots=True)
class Settings:
    """A request's settings (its items but the conversation, in their order) as a content key, and as the pickled
    bytes that key stands for: `copy_of()` loads them into a copy of the settings that shares nothing with the caller's."""

    key: bytes
    data: bytes

    def copy_of(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` (whose settings these are) with a copy of its settings, in their places; the conversation is
        left as it is (it is read into the engine's own dicts)."""
        settings = pickle.loads(self.data)
        return {k: v if k == "conversation" else settings[k] for k, v in request.items()}


def settings_key(request: dict[str, Any]) -> Settings | None:
    """The settings of a plain request dict, or None when they are not plain JSON data."""
    out = _pickled({k: v for k, v in request.items() if k != "conversation"})
    if out is None:
        return None
    return Settings(_key(out), out.getvalue())


_SETTINGS_SIZE = 64
_settings: OrderedDict[bytes, Any] = OrderedDict()


def recalled_settings(key: bytes) -> Any:
    """What was decided from the settings under `key`, or None."""
    return _recall(_settings, key)


def remember_settings(key: bytes, decided: Any) -> None:
    _keep(_settings, key, decided, _SETTINGS_SIZE)


def clear_settings_memo() -> None:
    with _lock:
        _settings.clear()
