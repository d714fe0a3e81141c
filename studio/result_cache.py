"""Engine results kept at the studio's boundary, in Django's cache framework (the `results` alias of CACHES).

An engine run is a pure function of its request and of the engine's code: no clock, no randomness but the request's
own seed, no state an earlier run left. So a result is kept under a digest of the request's whole content and of the
engine's version, and a lookup can only find the answer that running the engine again would give:

- every row the request is built from (the strategy's draft or revision, the preset and its prompts, the card, the
  persona, the world books and their entries, the regex scripts, the text templates, the session's history, input,
  options, seed and settings) is in the request, so an edit of any of them is another key; nothing depends on an
  object's identity or on a row's update time (the resource rows have none, and a history written with `bulk_create`
  or `update()` leaves the session's own untouched). The content is written as JSON in its own order (the strategy
  document's keys sorted, see `_canonical`), each engine model with its class, its values, the fields it was given
  and its private values. A tuple and a list, or an int key and its string, write alike: the engine reads both into
  the same typed values;
- the engine's version (`engine_version`) is a digest of every file of `assembly/` and the versions of the libraries
  whose behaviour or pickles a result depends on, so a deploy that changes the engine never reads an older result,
  even from a Redis cache shared across deploys.

Only a result is kept: a refusal, a failure or a run stopped at its deadline raises and is asked again next time. A
result is kept as its pickle and read back as a new object, so no caller can change another's (the pages shape the
result they are handed; nothing has to promise not to). A pickle larger than `STUDIO_RESULT_CACHE_MAX_BYTES` is not
kept (a 5,000-message result is about 3 MB): the local-memory backend holds at most its MAX_ENTRIES of them per
process. A request holding a value the key cannot name runs without the cache.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import logging
import pickle
import sys
import threading
import uuid
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.dummy import DummyCache
from pydantic import BaseModel

from assembly import AssemblyResult

logger = logging.getLogger(__name__)
T = TypeVar("T")

ALIAS = "results"
RESOURCES_ALIAS = "resources"
ENGINE = Path(__file__).resolve().parent.parent / "assembly"
# the libraries an engine result's content or its pickle depends on, beside the engine's own files
LIBRARIES = ("pydantic", "pydantic-core", "tiktoken", "tokenizers", "sentencepiece", "regex", "pyahocorasick")
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
_version: dict[str, str] = {}
_version_guard = threading.Lock()


def _library_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


def engine_version() -> str:
    """A digest of the engine's source files (every file under `assembly/`, by path and content), the Python
    version and the LIBRARIES' versions; computed once per process."""
    with _version_guard:
        if "digest" not in _version:
            digest = hashlib.sha256(f"python {sys.version_info[:3]}".encode())
            for name in LIBRARIES:
                digest.update(f"\0{name} {_library_version(name)}".encode())
            for path in sorted(p for p in ENGINE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
                digest.update(b"\0" + path.relative_to(ENGINE).as_posix().encode() + b"\0")
                digest.update(path.read_bytes())
            _version["digest"] = digest.hexdigest()[:20]
        return _version["digest"]


def _content(value: Any) -> Any:
    """What the JSON encoder cannot write itself, as JSON that names its type: a pydantic model (its class, fields,
    which fields were given, extra and private values), a dataclass, a set (sorted), bytes, a date or a number type;
    anything else cannot be keyed (TypeError)."""
    if isinstance(value, BaseModel):
        return {"<model>": _type_name(value), "fields": value.__dict__, "given": sorted(value.model_fields_set),
                "extra": value.__pydantic_extra__, "private": value.__pydantic_private__}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"<dataclass>": _type_name(value),
                "fields": {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}}
    if isinstance(value, (set, frozenset)):
        return {"<set>": sorted(_canonical(item) for item in value)}
    if isinstance(value, bytes):
        return {"<bytes>": value.hex()}
    if isinstance(value, (datetime.date, datetime.time, decimal.Decimal, uuid.UUID)):
        return {"<value>": _type_name(value), "text": str(value)}
    if isinstance(value, enum.Enum):
        return {"<enum>": _type_name(value), "value": value.value}
    raise TypeError(f"{_type_name(value)} cannot be keyed")


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _json(value: Any, *, sort_keys: bool = False) -> str:
    return json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, separators=(",", ":"), default=_content)


def _canonical(request: Any) -> str:
    """The request as JSON, its keys in their order (a world book's entries given as an object are read in that
    order), but the strategy document's sorted: the engine normalizes a strategy into a new document of a fixed shape
    (strategy.normalize_strategy), and PostgreSQL's jsonb hands a stored draft back with its keys in another order
    than the editor wrote them."""
    if isinstance(request, dict) and isinstance(request.get("strategy"), dict):
        rest = {key: value for key, value in request.items() if key != "strategy"}
        return _json(rest) + "\0" + _json(request["strategy"], sort_keys=True)  # JSON writes no raw NUL itself
    return _json(request)


def request_key(request: Any) -> str | None:
    """The cache key of an engine request: a digest of its content as JSON (`_canonical`; models and other values
    named by their type) under the engine's version; None when a value cannot be keyed (the request runs without
    the cache)."""
    try:
        content = _canonical(request)
    except (TypeError, ValueError, RecursionError):  # an unknown value, keys that do not sort, a cycle
        return None
    return f"engine-result:{engine_version()}:{hashlib.sha256(content.encode()).hexdigest()}"


def max_bytes() -> int:
    return int(getattr(settings, "STUDIO_RESULT_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))


def results_cache():
    return caches[ALIAS]


def _kept(cache, key: str) -> Any:
    """The value kept under `key` in `cache`, as a new object; None when there is none (or it cannot be read)."""
    try:
        kept = cache.get(key)
        return pickle.loads(kept) if isinstance(kept, bytes) else None
    except Exception:  # an unreachable Redis, a pickle from another engine: the engine answers instead
        logger.warning("engine cache: could not read %s", key, exc_info=True)
        return None


def _keep(cache, key: str, value: Any, limit: int | None = None) -> None:
    """`value` kept under `key` as its pickle (not when the pickle is over `limit` bytes)."""
    try:
        content = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if limit is None or len(content) <= limit:
            cache.set(key, content)
    except Exception:  # an unreachable Redis: the answer stands, only not kept
        logger.warning("engine cache: could not keep %s", key, exc_info=True)


def _kept_or_computed(cache, key: str, compute: Callable[[], T], usable: Callable[[Any], bool],
                      limit: int | None = None) -> T:
    """The value kept under `key` when it is `usable`, otherwise `compute()`'s, kept for the next time."""
    found = _kept(cache, key)
    if usable(found):
        return found
    value = compute()
    _keep(cache, key, value, limit)
    return value


def through_cache(request: Any, run: Callable[[], AssemblyResult]) -> AssemblyResult:
    """The result of `request`: the kept one when the same request was answered by this engine version before,
    otherwise `run()`'s, kept for the next one (a refusal or a failure raises and is not kept). With the dummy
    backend (CACHE_URL=dummy://) the request is neither digested nor its result pickled."""
    cache = results_cache()
    key = None if isinstance(cache, DummyCache) else request_key(request)
    if key is None:
        return run()
    return _kept_or_computed(cache, key, run, lambda found: isinstance(found, AssemblyResult), max_bytes())


def kept_import(read: Callable[[Any], T], document: Any) -> T:
    """`read(document)`: an engine reader (a pure function of the document, e.g. `import_worldbook`) of a resource
    document built from rows, kept in the `resources` cache by the document's content (in its own key order) and the
    engine's version, so a preview reads a stored world book, preset or card once, not at every request. Read back as
    a new object; a refusal raises and is not kept."""
    cache = caches[RESOURCES_ALIAS]
    try:
        content = None if isinstance(cache, DummyCache) else _json(document)
    except (TypeError, ValueError, RecursionError):
        content = None
    if content is None:
        return read(document)
    key = (f"engine-resource:{engine_version()}:{read.__module__}.{read.__qualname__}:"
           f"{hashlib.sha256(content.encode()).hexdigest()}")
    return _kept_or_computed(cache, key, lambda: read(document), lambda found: found is not None)
