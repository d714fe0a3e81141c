"""{{timeDiff::a::b}}: moment's humanize(true) of a - b with its default thresholds."""

import pytest

from assembly.sillytavern.relative_time import time_diff


@pytest.mark.parametrize(("first", "second", "words"), [
    ("2020-05-01 10:00", "2020-05-01 08:00", "in 2 hours"),  # the st-macros oracle's answer
    ("2024-01-01", "2024-01-04", "3 days ago"),  # the st-macros oracle's answer
    ("2024-01-01 00:00:30", "2024-01-01", "in a few seconds"),
    ("2024-01-01 00:01", "2024-01-01", "in a minute"),
    ("2024-01-01", "2024-01-01 00:10", "10 minutes ago"),
    ("2024-01-01 01:00", "2024-01-01", "in an hour"),
    ("2024-01-02", "2024-01-01", "in a day"),
    ("2024-03-01", "2024-01-01", "in 2 months"),
    ("2026-01-01", "2024-01-01", "in 2 years"),
    ("soon", "2024-01-01", "Invalid date"),
])
def test_time_diff(first, second, words):
    assert time_diff(first, second) == words
