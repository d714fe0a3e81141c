"""Web figures: preview server time by history size, a drag round trip, and a bounded loopback load run.

Everything runs on a throwaway SQLite database in a temporary folder: migrations, a generated session per size, and a
`runserver` child process on 127.0.0.1 for the load run, which stops by itself after a fixed number of requests.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from bench.report import Table
from bench.timing import measure

TITLE = "web"
REPO = Path(__file__).resolve().parent.parent
PASSWORD = "bench-password-not-secret"
SIZES = (10, 100, 1000)
LOAD_CLIENTS = 4
LOAD_REQUESTS = 400


def _setup_django(db_path: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_DEBUG"] = "0"
    # static files are served from static/ by the finders here; no collectstatic output is expected
    warnings.filterwarnings("ignore", message="No directory at", module="django.core.handlers.base")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _world(sizes: tuple[int, ...]) -> dict:
    from django.apps import apps
    from django.contrib.auth import get_user_model

    from bench.fixtures import DEFAULT_PRESET_PROMPTS, default_preset
    from preview_app import services as session_services
    from preview_app.models import SessionEvent
    from strategies_app import services as strategy_services
    from strategies_app.models import Preset, Strategy
    from strategies_app.reference_data import ensure_reference_data

    ensure_reference_data(apps)
    user = get_user_model().objects.create_superuser("bench", "", PASSWORD)
    preset = strategy_services.preset_import(user=user, data=default_preset(DEFAULT_PRESET_PROMPTS), name="Bench")
    strategy = strategy_services.strategy_copy(user=user, source=Strategy.objects.get(slug="builtin-st"),
                                               name="Bench strategy")
    strategy_services.revision_save(strategy=strategy, user=user, note="bench")
    sessions = {}
    for size in sizes:
        session = session_services.session_create(user=user, name=f"{size} messages", host={"core_available": True},
                                                  current_input="And then?",
                                                  preset=Preset.objects.get(pk=preset.id))
        SessionEvent.objects.bulk_create(
            SessionEvent(session=session, seq=i + 1, message_id=f"m{i}", role="user" if i % 2 == 0 else "assistant",
                         content=f"Message {i}: the road bends toward the river and the lanterns flicker.")
            for i in range(size))
        session_services.strategy_apply(session=session, strategy=strategy)
        sessions[size] = session.pk
    return {"user": user, "sessions": sessions, "strategy": strategy.slug}


def _server_time(world: dict) -> Table:
    from django.test import Client
    from django.urls import reverse

    table = Table("preview server time (in-process, SQLite, builtin-st, default-shaped preset)",
                  ["what", "messages", "runs", "median ms", "target", "verdict"])
    client = Client()
    client.force_login(world["user"])
    for size, pk in world["sessions"].items():
        urls = [("preview API", f"/api/sessions/{pk}/preview"), ("preview page", reverse("preview:preview", args=[pk]))]
        for label, url in urls:
            status = client.get(url).status_code
            if status != 200:
                raise RuntimeError(f"{url} answered {status}")
            # 20 runs at most: on a shared 2-core machine a median of 10 moved by a third from one run to the next
            timing = measure(lambda url=url: client.get(url), min_runs=5, max_runs=20, budget_s=3.0)
            target = "< 100 ms at 1,000" if size == 1000 else "-"
            verdict = ("met" if timing.median_ms < 100 else "NOT MET") if size == 1000 else "-"
            table.add(label, f"{size:,}", timing.runs, f"{timing.median_ms:.1f}", target, verdict)
    table.notes.append("server time = the Django test client's full request (middleware, view, engine, template).")
    return table


def _drag_round_trip(world: dict) -> Table:
    """The editor's module drag over htmx: the POST of the new order and the re-rendered editor with its preview."""
    from django.test import Client
    from django.urls import reverse

    from strategies_app.models import Strategy

    table = Table("drag-and-preview round trip (in-process, htmx request, preview session of 100 messages)",
                  ["what", "runs", "median ms", "target", "verdict"])
    client = Client()
    client.force_login(world["user"])
    slug = world["strategy"]
    url = reverse("strategies:rules-order", args=[slug])
    session = world["sessions"][100]

    def drag() -> None:
        current = Strategy.objects.get(slug=slug)
        order = [r["id"] for r in current.draft["rules"]
                 if r["kind"] not in ("dsh.runtime-context", "dsh.sandbox-policy", "dsh.approval-policy")]
        order[1], order[2] = order[2], order[1]
        response = client.post(url, {"order": order, "moved": order[1], "version": current.version,
                                     "session": session}, HTTP_HX_REQUEST="true")
        if response.status_code != 200:
            raise RuntimeError(f"drag answered {response.status_code}: {response.content[:200]!r}")

    drag()
    timing = measure(drag, min_runs=10, max_runs=30, budget_s=3.0)
    table.add("swap two modules", timing.runs, f"{timing.median_ms:.1f}", "< 50 ms",
              "met" if timing.median_ms < 50 else "NOT MET")
    table.notes.append("the answer is the editor workspace partial: drafts, position rows and the live preview.")
    return table


class _Browser:
    """A logged-in loopback client: cookies and the CSRF token, no third-party library."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        all_headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
        conn.request(method, path, body=body, headers=all_headers)
        response = conn.getresponse()
        data = response.read()
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name] = rest.split(";", 1)[0]
        conn.close()
        return response.status, data

    def login(self, username: str) -> None:
        _, page = self.request("GET", "/accounts/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        body = f"username={username}&password={PASSWORD}&csrfmiddlewaretoken={token}".encode()
        status, _ = self.request("POST", "/accounts/login/", body,
                                 {"Content-Type": "application/x-www-form-urlencoded",
                                  "Referer": f"http://127.0.0.1:{self.port}/accounts/login/"})
        if status != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"load client could not log in ({status})")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _load(world: dict, db_path: Path) -> Table:
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db_path}", "DJANGO_DEBUG": "0"}
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/accounts/login/")
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("runserver did not start") from None
                time.sleep(0.2)
        session_pk = world["sessions"][100]
        request_body = json.dumps({
            "strategy": "builtin-st", "host": {"core_available": True},
            "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Be brief."},
                                                 {"identifier": "chatHistory", "marker": True}]}},
            "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello"}]}}).encode()
        latencies: dict[str, list[float]] = {"preview API (100 messages)": [], "POST /api/assemble": []}
        errors: list[str] = []
        lock = threading.Lock()

        def client(worker: int) -> None:
            browser = _Browser(port)
            browser.login("bench")
            for i in range(LOAD_REQUESTS // LOAD_CLIENTS):
                start = time.perf_counter()
                if (i + worker) % 2:
                    label = "POST /api/assemble"
                    status, _ = browser.request("POST", "/api/assemble", request_body, {
                        "Content-Type": "application/json", "X-CSRFToken": browser.cookies.get("csrftoken", ""),
                        "Referer": f"http://127.0.0.1:{port}/"})
                else:
                    label = "preview API (100 messages)"
                    status, _ = browser.request("GET", f"/api/sessions/{session_pk}/preview")
                elapsed = time.perf_counter() - start
                with lock:
                    latencies[label].append(elapsed)
                    if status != 200:
                        errors.append(f"{label}: {status}")

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(w,)) for w in range(LOAD_CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        wall = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=10)
    table = Table(f"load: {LOAD_CLIENTS} loopback clients, {LOAD_REQUESTS} requests, runserver (threaded, SQLite)",
                  ["route", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors", "target"])
    for label, samples in latencies.items():
        samples.sort()

        def pct(p: float, samples: list[float] = samples) -> str:
            return f"{samples[min(len(samples) - 1, int(p * len(samples)))] * 1000:.1f}"

        table.add(label, len(samples), f"{len(samples) / wall:.1f}", pct(0.5), pct(0.95), pct(0.99),
                  sum(1 for e in errors if e.startswith(label)), "zero errors")
    total = sum(len(s) for s in latencies.values())
    table.notes.append(f"all routes: {total / wall:.1f} req/s over {wall:.1f} s; median of everything "
                       f"{statistics.median(x for s in latencies.values() for x in s) * 1000:.1f} ms")
    if errors:
        raise RuntimeError(f"load run had {len(errors)} errors, first: {errors[0]}")
    return table


def run() -> list[Table]:
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "bench.sqlite3"
        _setup_django(db_path)
        world = _world(SIZES)
        return [_server_time(world), _drag_round_trip(world), _load(world, db_path)]
