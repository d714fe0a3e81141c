"""Parsed resources remembered by content, so a request that sends the same resources again (a re-preview, the next
turn of a chat) neither walks them for unsafe values nor parses them a second time.

The key is a digest of `marshal.dumps` (format 2) of the raw JSON: marshal writes every type it stores (bool apart from int,
list apart from tuple) and its bytes load back to the value, so two values with one key are the same JSON. A value
marshal cannot write (an object) has no key, and the caller takes the slow path. Only resources that arrived inside
a request dict are remembered: that request was checked by `find_unsafe` first, so a remembered key also means
"already checked". The parsed models are frozen, so one copy can be shared.
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from collections import OrderedDict
from typing import Any

from assembly.sillytavern.models import Resources

_SIZE = 64
_parsed: OrderedDict[bytes, Resources] = OrderedDict()
_lock = threading.Lock()


def resources_key(raw: Any) -> bytes | None:
    """The content key of a request's raw `resources`, or None when it is not plain JSON data."""
    if not isinstance(raw, dict):
        return None
    try:
        data = marshal.dumps(raw, 2)  # version 2: no back-references, whose bytes follow reference counts
    except ValueError:  # an object marshal cannot write (a model): no key
        return None
    return hashlib.sha256(data).digest()  # with the CPU's SHA instructions: about twice blake2b's speed


def remembered(key: bytes | None) -> Resources | None:
    if key is None:
        return None
    with _lock:
        parsed = _parsed.get(key)
        if parsed is not None:
            _parsed.move_to_end(key)
        return parsed


def remember(key: bytes, parsed: Resources) -> None:
    with _lock:
        _parsed[key] = parsed
        if len(_parsed) > _SIZE:
            _parsed.popitem(last=False)
