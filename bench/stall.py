"""A stalled request beside another user's pages: the production set-up (gunicorn with the project's
gunicorn.conf.py, 3 sync workers, SQLite) on loopback, one user asking again and again for the preview of a session
whose world book stalls the engine, another user reading plain pages meanwhile. The stalled run ends at the engine's
deadline (STUDIO_ENGINE_DEADLINE_SECONDS, studio/engine_runs.py) with a coded 503, and each pathological key at the
pattern matcher's limit; the figure is the other user's worst page latency, against 2 s.

The stalling session: a world book of 40 regex keys `/(a|aa)+$|q{n}x/` (each one backtracks without end on a run of
a's followed by '!', and each is a pattern of its own, so each takes its full 0.25 s limit: 10 s together, past the
5 s deadline) over a chat of 200 such messages. Bounded: one window of WINDOW_S per row, a fixed number of stalling
clients; everything on 127.0.0.1, a throwaway database in a temporary folder.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.report import Table
from bench.web import PASSWORD, _Browser, _free_port, _setup_django

TITLE = "stall"
REPO = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
TARGET_S = 2.0
WINDOW_S = 10.0  # per row: how long the other user reads pages while the stalls go on
KEYS = 40
CHAT = 200
STALLERS = (1, 2)  # stalling clients at once; gunicorn.conf.py runs 3 workers, so one is always left
READER_PAGES = ("/sessions/", "/")


def _world() -> dict:
    from django.apps import apps
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from preview_app import services as session_services
    from preview_app.models import SessionEvent
    from strategies_app import services as strategy_services
    from strategies_app.models import Strategy, WorldBook
    from strategies_app.reference_data import ensure_reference_data

    ensure_reference_data(apps)
    users = get_user_model().objects
    staller = users.create_superuser("bench", "", PASSWORD)
    reader = users.create_user("reader", password=PASSWORD)
    reader.groups.add(Group.objects.get(name="qa"))
    book = strategy_services.worldbook_import(user=staller, name="Stall", data={"entries": {
        str(i): {"uid": i, "key": [f"/(a|aa)+$|q{{{i + 1}}}x/"], "content": f"never {i}"} for i in range(KEYS)}})
    session = session_services.session_create(
        user=staller, name="stalling", host={"core_available": True}, world_books=[WorldBook.objects.get(pk=book.id)],
        world_info_activation="keywords", current_input="a" * 34 + "!", strategy=Strategy.objects.get(slug="builtin-st"))
    SessionEvent.objects.bulk_create(
        SessionEvent(session=session, seq=i + 1, message_id=f"m{i}", role="user" if i % 2 == 0 else "assistant",
                     content="a" * 34 + "!") for i in range(CHAT))
    from django.db import connections

    connections.close_all()  # the server's workers own the database from here
    return {"session": session.pk}


def _start(db_path: Path, port: int, **settings: str) -> subprocess.Popen:
    """gunicorn with the project's gunicorn.conf.py on `port`, answering; `settings`: more environment variables
    (GUNICORN_WORKERS, ...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "GUNICORN_"))}
    env.update(DATABASE_URL=f"sqlite:///{db_path}", DJANGO_DEBUG="0", GUNICORN_BIND=f"127.0.0.1:{port}", **settings)
    server = subprocess.Popen([str(GUNICORN), "-c", "gunicorn.conf.py", "config.wsgi:application"], cwd=REPO,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        if server.poll() is not None:
            raise RuntimeError("gunicorn exited on start")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/accounts/login/")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.terminate()
            raise RuntimeError("gunicorn did not answer within 30 s")
        time.sleep(0.2)  # polling interval


def _answer(status: int, body: bytes) -> str:
    """A stalled preview's answer: its status and, for a refusal, its code."""
    try:
        code = json.loads(body).get("code") if status != 200 else None
    except ValueError:
        code = None
    return f"{status} {code}" if code else str(status)


def _row(port: int, session_pk: int, stallers: int) -> tuple[list[tuple[str, float]], list[float]]:
    """One window: `stallers` clients ask for the stalling preview back to back; the reader times its pages."""
    stop = threading.Event()
    stalls: list[tuple[str, float]] = []
    reads: list[float] = []
    lock = threading.Lock()
    browsers = [_Browser(port) for _ in range(stallers)]
    for browser in browsers:
        browser.login("bench")
    reader = _Browser(port)
    reader.login("reader")
    for _warm in range(2):  # the reader's pages rendered once before the window
        for page in READER_PAGES:
            reader.request("GET", page)

    def stall(browser: _Browser) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            status, body = browser.request("GET", f"/api/sessions/{session_pk}/preview")
            with lock:
                stalls.append((_answer(status, body), time.perf_counter() - started))

    threads = [threading.Thread(target=stall, args=(b,), daemon=True) for b in browsers]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the stalled runs are under way before the first read
    ends = time.perf_counter() + WINDOW_S
    index = 0
    while time.perf_counter() < ends:
        started = time.perf_counter()
        status, _ = reader.request("GET", READER_PAGES[index % len(READER_PAGES)])
        reads.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"the reader's page answered {status}")
        index += 1
    stop.set()
    for thread in threads:
        thread.join(timeout=40)
    return stalls, reads


def run() -> list[Table]:
    if not GUNICORN.exists():
        raise RuntimeError("gunicorn is not installed (pip install -e '.[bench]')")
    from studio.engine_runs import DEFAULT_DEADLINE_SECONDS

    table = Table(f"a stalled request beside another user's pages (gunicorn.conf.py: 3 sync workers, SQLite, "
                  f"{WINDOW_S:g} s per row)",
                  ["stalling clients", "stalled answers", "stall median s", "reader GETs", "reader p50 ms",
                   "reader worst ms", "target", "verdict"])
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "stall.sqlite3"
        _setup_django(db_path)
        world = _world()
        port = _free_port()
        server = _start(db_path, port)
        try:
            for stallers in STALLERS:
                stalls, reads = _row(port, world["session"], stallers)
                statuses = sorted({status for status, _ in stalls})
                answers = ", ".join(f"{sum(1 for s, _ in stalls if s == status)} x {status}" for status in statuses)
                worst = max(reads)
                table.add(stallers, answers, f"{statistics.median(s for _, s in stalls):.1f}", len(reads),
                          f"{statistics.median(reads) * 1000:.0f}", f"{worst * 1000:.0f}",
                          f"<= {TARGET_S * 1000:.0f} ms", "met" if worst <= TARGET_S else "NOT MET")
        finally:
            server.terminate()
            server.wait(timeout=30)
    table.notes.append(f"the stalling preview: {KEYS} regex keys of 0.25 s each over {CHAT} messages, stopped at the "
                       f"engine deadline ({DEFAULT_DEADLINE_SECONDS:g} s by default) with ENGINE_DEADLINE_EXCEEDED "
                       f"(503); the reader (QA role) alternates {' and '.join(READER_PAGES)}")
    table.notes.append("as many stalling clients as workers (3) would hold every worker until the deadline: the "
                       "deadline, not the 2 s target, bounds that wait")
    return [table]
