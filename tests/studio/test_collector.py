"""The server process's collector thresholds (studio/collector.py): parsed from STUDIO_GC_THRESHOLD, refused naming
the setting, and applied once at startup."""

import gc

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studio.collector import DEFAULT, parse_threshold, tune_collector


@pytest.mark.parametrize(("raw", "expected"), [
    (None, DEFAULT), ("", DEFAULT), ("700,10,10", (700, 10, 10)), (" 50000, 20 ,100 ", (50_000, 20, 100)),
    ("off", None), ("OFF", None),
])
def test_the_setting_names_the_thresholds(raw, expected):
    assert parse_threshold(raw) == expected


@pytest.mark.parametrize("raw", ["700", "700,10", "1,2,3,4", "0,10,10", "-1,10,10", "a,b,c", "1.5,2,3"])
def test_a_bad_value_is_refused_naming_the_setting(raw):
    with pytest.raises(ImproperlyConfigured, match=r"STUDIO_GC_THRESHOLD: expected three whole numbers"):
        parse_threshold(raw)


def test_startup_applied_the_configured_thresholds():
    assert settings.STUDIO_GC_THRESHOLD == DEFAULT  # the test run does not set the variable
    assert gc.get_threshold() == DEFAULT


def test_off_leaves_the_collector_alone():
    before = gc.get_threshold()
    try:
        gc.set_threshold(123, 4, 5)
        tune_collector(None)
        assert gc.get_threshold() == (123, 4, 5)
        tune_collector((700, 10, 10))
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
