"""The studio's CACHES setting from the environment (config/settings.py).

Embedded by default: Django's local-memory cache in each process, nothing to set up (no cache table, nothing to
run). `CACHE_URL` (or `REDIS_URL`) names a shared cache instead, so several gunicorn workers or machines share the
engine results (studio/result_cache.py): `redis://`, `rediss://` or `unix://` selects Django's own
`django.core.cache.backends.redis.RedisCache`, which needs the `redis` package (`pip install -e '.[redis]'`);
`locmem://` is the default spelled out and `dummy://` keeps nothing.
"""

from __future__ import annotations

import importlib.util
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

RESULT_CACHE_ENTRIES = 64  # per process, local memory: each result at most STUDIO_RESULT_CACHE_MAX_BYTES
RESULT_CACHE_SECONDS = 60 * 60
RESOURCE_CACHE_ENTRIES = 256  # per process, local memory: parsed resources (a 300-entry world book about 0.2 MB)
REDIS_SCHEMES = ("redis", "rediss", "unix")


def _variable(environ: dict[str, str]) -> tuple[str, str] | None:
    for name in ("CACHE_URL", "REDIS_URL"):
        if environ.get(name, "").strip():
            return name, environ[name].strip()
    return None


def caches_setting(environ: dict[str, str], *, redis_installed: bool | None = None) -> dict[str, dict]:
    """CACHES for `environ`: a `default` alias, the engine results' `results` alias and the parsed resources'
    `resources` alias (studio/result_cache.py)."""
    chosen = _variable(environ)
    scheme = urlsplit(chosen[1]).scheme.lower() if chosen else "locmem"
    if scheme in REDIS_SCHEMES:
        installed = importlib.util.find_spec("redis") is not None if redis_installed is None else redis_installed
        if not installed:
            raise ImproperlyConfigured(f"{chosen[0]} names a Redis cache ({scheme}://) but the redis package is not "
                                       f"installed: pip install -e '.[redis]', or unset {chosen[0]} for the "
                                       f"embedded cache")
        backend = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": chosen[1]}
        return {"default": {**backend, "KEY_PREFIX": "studio"},
                "results": {**backend, "KEY_PREFIX": "studio-results", "TIMEOUT": RESULT_CACHE_SECONDS},
                "resources": {**backend, "KEY_PREFIX": "studio-resources", "TIMEOUT": RESULT_CACHE_SECONDS}}
    if scheme == "dummy":
        dummy = {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}
        return {"default": dummy, "results": dummy, "resources": dummy}
    if scheme != "locmem":
        raise ImproperlyConfigured(f"{chosen[0]}: the scheme {scheme}:// is not a cache the studio knows; use "
                                   f"redis://, rediss://, unix:// (Redis), locmem:// or dummy://")
    local = "django.core.cache.backends.locmem.LocMemCache"
    return {"default": {"BACKEND": local, "LOCATION": "studio"},
            "results": {"BACKEND": local, "LOCATION": "studio-results", "TIMEOUT": RESULT_CACHE_SECONDS,
                        "OPTIONS": {"MAX_ENTRIES": RESULT_CACHE_ENTRIES}},
            "resources": {"BACKEND": local, "LOCATION": "studio-resources", "TIMEOUT": RESULT_CACHE_SECONDS,
                          "OPTIONS": {"MAX_ENTRIES": RESOURCE_CACHE_ENTRIES}}}
