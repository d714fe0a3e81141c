"""The first preview after the server starts: a fresh gunicorn (the project's gunicorn.conf.py, one sync worker, so
the page lands on the process that answered the login), a user logs in, and the first GET of a session's preview
page is timed on the wall clock; then the same page again (the engine result kept in the studio's result cache).
Two runs with the workers' warm-up (the default) and two without, each a new server process on a throwaway SQLite
database in a temporary folder, on 127.0.0.1.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.report import Table

TITLE = "start"
TARGET_S = 1.0
RUNS = 2
MESSAGES = 100


def _first_preview(db_path: Path, session_pk: int, warm_up: bool) -> tuple[float, float, float]:
    """(seconds until the server answered, the first preview page, the second) of one fresh server; `warm_up`:
    whether its worker warms up before its first request (gunicorn.conf.py, STUDIO_WARM_UP)."""
    from bench.stall import _start
    from bench.web import _Browser, _free_port

    port = _free_port()
    started = time.perf_counter()
    server = _start(db_path, port, GUNICORN_WORKERS="1", STUDIO_WARM_UP="1" if warm_up else "0")
    try:
        ready = time.perf_counter() - started
        browser = _Browser(port)
        browser.login("bench")
        timings = []
        for _page in range(2):
            begun = time.perf_counter()
            status, body = browser.request("GET", f"/sessions/{session_pk}/preview/")
            timings.append(time.perf_counter() - begun)
            if status != 200 or b"data-request-row" not in body and b"<html" not in body:
                raise RuntimeError(f"the preview page answered {status}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return ready, timings[0], timings[1]


def run() -> list[Table]:
    import tempfile

    from bench.stall import GUNICORN
    from bench.web import _setup_django, _world

    if not GUNICORN.exists():
        raise RuntimeError("gunicorn is not installed (pip install -e '.[dev]')")
    table = Table(f"first preview after the server starts (gunicorn.conf.py, 1 sync worker, SQLite, {MESSAGES} "
                  f"messages, default-shaped preset, builtin-st applied)",
                  ["worker warm-up", "run", "server answers s", "first preview ms", "same page again ms", "target",
                   "verdict"])
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "start.sqlite3"
        _setup_django(db_path)
        world = _world((MESSAGES,))
        from django.db import connections

        connections.close_all()  # the server owns the database from here
        for warm_up, index in ((warm_up, index) for warm_up in (True, False) for index in range(RUNS)):
            ready, first, again = _first_preview(db_path, world["sessions"][MESSAGES], warm_up)
            table.add("on (default)" if warm_up else "off", index + 1, f"{ready:.2f}", f"{first * 1000:.0f}", f"{again * 1000:.0f}",
                      f"< {TARGET_S * 1000:.0f} ms", "met" if first < TARGET_S else "NOT MET")
    table.notes.append("wall clock; the server answers = its login page's first 200 after the start (with the "
                       "warm-up: after its worker loaded the views, the engine with its default tokenizer and the "
                       "templates, studio/warm_up.py; off: STUDIO_WARM_UP=0, the first requests load them); then a "
                       "login and the preview page, the worker's first; again = the result cache's answer")
    return [table]
