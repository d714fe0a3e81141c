"""The web process's garbage-collector thresholds.

One preview of a long session builds hundreds of thousands of short-lived objects (the request, the result, the rows)
that are freed by reference counting when the response is sent; CPython's default young-generation threshold (700
allocations) makes the cyclic collector walk them again and again meanwhile: a third of a 5,000-message page's time.
The server process (not the engine: a library must not change global state) raises the threshold once at startup.
`STUDIO_GC_THRESHOLD` sets it ("700,10,10" is CPython's default, "off" keeps whatever the interpreter has).
"""

from __future__ import annotations

import gc

from django.core.exceptions import ImproperlyConfigured

DEFAULT = (50_000, 20, 100)


def parse_threshold(raw: str | None) -> tuple[int, int, int] | None:
    """The thresholds `raw` names (None: leave the collector as it is); a bad value is refused naming the setting."""
    if raw is None or raw.strip() == "":
        return DEFAULT
    if raw.strip().lower() == "off":
        return None
    parts = [part.strip() for part in raw.split(",")]
    if len(parts) != 3 or not all(part.isdecimal() and int(part) > 0 for part in parts):
        raise ImproperlyConfigured("STUDIO_GC_THRESHOLD: expected three whole numbers above 0 separated by commas "
                                   f"(e.g. 50000,20,100) or 'off', got {raw!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def tune_collector(threshold: tuple[int, int, int] | None) -> None:
    if threshold is not None:
        gc.set_threshold(*threshold)
