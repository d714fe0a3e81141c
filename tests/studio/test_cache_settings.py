"""The CACHES setting from the environment: embedded local memory by default, Redis through Django's own backend
when CACHE_URL or REDIS_URL names it, and a clear refusal when that needs a package that is not installed."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio.cache_settings import RESULT_CACHE_ENTRIES, caches_setting

REPO = Path(__file__).resolve().parents[2]
LOCAL = "django.core.cache.backends.locmem.LocMemCache"
REDIS = "django.core.cache.backends.redis.RedisCache"


def test_without_a_cache_url_every_cache_is_local_memory_and_the_results_bounded():
    caches = caches_setting({})
    assert {alias: c["BACKEND"] for alias, c in caches.items()} == {"default": LOCAL, "results": LOCAL,
                                                                   "resources": LOCAL}
    assert len({c["LOCATION"] for c in caches.values()}) == 3
    assert caches["results"]["OPTIONS"]["MAX_ENTRIES"] == RESULT_CACHE_ENTRIES
    assert caches_setting({"CACHE_URL": "locmem://"}) == caches


@pytest.mark.parametrize("variable", ["CACHE_URL", "REDIS_URL"])
def test_a_redis_url_selects_djangos_redis_backend_for_every_cache(variable):
    url = "redis://cache.internal:6379/2"
    caches = caches_setting({variable: url}, redis_installed=True)
    assert {alias: (c["BACKEND"], c["LOCATION"]) for alias, c in caches.items()} == {
        "default": (REDIS, url), "results": (REDIS, url), "resources": (REDIS, url)}
    assert len({c["KEY_PREFIX"] for c in caches.values()}) == 3  # one server, a key space each


def test_cache_url_comes_before_redis_url():
    caches = caches_setting({"CACHE_URL": "dummy://", "REDIS_URL": "redis://x:6379/0"}, redis_installed=True)
    assert caches["results"]["BACKEND"] == "django.core.cache.backends.dummy.DummyCache"


def test_a_redis_url_without_the_redis_package_is_refused_naming_the_variable_and_the_extra():
    with pytest.raises(ImproperlyConfigured) as refused:
        caches_setting({"REDIS_URL": "rediss://cache.internal:6380/0"}, redis_installed=False)
    assert "REDIS_URL" in str(refused.value) and "redis package" in str(refused.value)
    assert ".[redis]" in str(refused.value)


def test_an_unknown_scheme_is_refused_naming_the_known_ones():
    with pytest.raises(ImproperlyConfigured) as refused:
        caches_setting({"CACHE_URL": "memcached://127.0.0.1:11211"})
    assert "memcached://" in str(refused.value) and "redis://" in str(refused.value)


@pytest.mark.skipif(importlib.util.find_spec("redis") is not None, reason="the redis package is installed here")
def test_the_server_refuses_to_start_with_a_redis_url_and_no_redis_package():
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CACHE_URL", "REDIS_URL"))}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, capture_output=True, text=True,
                          env={**environment, "REDIS_URL": "redis://127.0.0.1:6379/0"}, timeout=600)
    assert done.returncode != 0 and "REDIS_URL" in done.stderr and "redis package" in done.stderr
