"""The engine's only process-wide state: a few caches of pure functions, each keyed by the content it was computed
from (never by an object's identity, a request or its settings), each bounded, all with one eviction policy (the
oldest entry leaves first), all emptied by `clear_caches()`.

| cache | key | value |
| --- | --- | --- |
| `TOKEN_COUNTS` | (encoding, text, or a digest of a long text) | the text's token count |
| `TOKENIZERS` | encoding name | the loaded tokenizer (its files read and checked once) |
| `PATTERNS` | (JavaScript source, flags, translation limit) | the translated, compiled pattern or why it cannot run |
| `TEMPLATES` | a story-string template's text (one of at most 8,192 characters) | its parsed pieces (a tuple) |

A new cache is one more `Cache(...)` line here, and the engine keeps at most five.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

V = TypeVar("V")
_MISSING: Any = object()


class Cache:
    """A bounded mapping from a content key to a computed value. Full, it lets its oldest entry go first (an entry's
    age is its insertion: a read does not renew it, so a read is one dict lookup)."""

    __slots__ = ("name", "size", "_entries", "_lock", "get")

    def __init__(self, name: str, size: int):
        self.name, self.size = name, size
        self._entries: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self.get: Callable[..., Any] = self._entries.get  # get(key, default=None)

    def put(self, key: Hashable, value: V) -> V:
        with self._lock:
            entries = self._entries
            entries[key] = value
            while len(entries) > self.size:
                del entries[next(iter(entries))]
        return value

    def computed(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value under `key`, computed (outside the lock) and kept when it is not there."""
        value = self.get(key, _MISSING)
        return self.put(key, compute()) if value is _MISSING else value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


TOKEN_COUNTS = Cache("token counts", 100_000)
TOKENIZERS = Cache("tokenizers", 16)
PATTERNS = Cache("patterns", 4096)
TEMPLATES = Cache("story-string templates", 256)
CACHES: tuple[Cache, ...] = (TOKEN_COUNTS, TOKENIZERS, PATTERNS, TEMPLATES)


def clear_caches() -> None:
    """Empty every cache (a benchmark's cold run; a test that counts work)."""
    for cache in CACHES:
        cache.clear()
