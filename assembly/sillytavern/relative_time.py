"""`{{timeDiff::a::b}}`: moment's `duration(a - b).humanize(true)` with moment's default thresholds
(45 seconds, 45 minutes, 22 hours, 26 days, 11 months), as SillyTavern writes the difference of two dates."""

from __future__ import annotations

from datetime import datetime


def _moment(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def humanize(seconds: float) -> str:
    """moment's `duration(seconds).humanize()` without a suffix ("a few seconds", "2 hours", "3 days")."""
    s = abs(seconds)
    minutes, hours, days = round(s / 60), round(s / 3600), round(s / 86400)
    months = round(s / 86400 / 30.436875)
    years = round(s / 86400 / 365.2425)
    if round(s) < 45:
        return "a few seconds"
    if minutes <= 1:
        return "a minute"
    if minutes < 45:
        return f"{minutes} minutes"
    if hours <= 1:
        return "an hour"
    if hours < 22:
        return f"{hours} hours"
    if days <= 1:
        return "a day"
    if days < 26:
        return f"{days} days"
    if months <= 1:
        return "a month"
    if months < 11:
        return f"{months} months"
    if years <= 1:
        return "a year"
    return f"{years} years"


def time_diff(first: str, second: str) -> str:
    """How `first` stands to `second` ("in 2 hours", "3 days ago"); "Invalid date" when either is not a date."""
    a, b = _moment(first), _moment(second)
    if a is None or b is None:
        return "Invalid date"
    if (a.tzinfo is None) != (b.tzinfo is None):
        a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    seconds = (a - b).total_seconds()
    words = humanize(seconds)
    return f"in {words}" if seconds > 0 else f"{words} ago"
