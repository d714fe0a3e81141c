"""Racing writes through a real 3-worker gunicorn on a SQLite file answer 2xx or 409, never 500
("database is locked" was the old answer). It waits for conditions (the server up, every request answered) with
generous timeouts, never for a fixed time, so a loaded machine only makes it slower."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
PASSWORD = "a long enough race password"

pytestmark = pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is a dev dependency: make install-dev")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)  # polling interval, not a wait for something to happen
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture
def server(tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    environment.update(DATABASE_URL=f"sqlite:///{tmp_path / 'race.sqlite3'}", DJANGO_DEBUG="0",
                       PYTHONUNBUFFERED="1")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=environment, check=True, timeout=600)
    script = ("from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group; "
              f"u = get_user_model().objects.create_user('racer', password={PASSWORD!r}, is_staff=True); "
              "u.groups.add(Group.objects.get(name='admin'))")
    subprocess.run([*manage, "shell", "-c", script], cwd=REPO, env=environment, check=True, timeout=600)
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen([str(GUNICORN), "--workers", "3", "--bind", f"127.0.0.1:{port}", "--timeout", "120",
                                "config.wsgi:application"], cwd=REPO, env=environment, stdout=log,
                               stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def answers():
        if process.poll() is not None:
            raise AssertionError("gunicorn exited: " + (tmp_path / "gunicorn.log").read_text())
        try:
            return urllib.request.urlopen(base + "/accounts/login/", timeout=10).status == 200
        except OSError:
            return False

    try:
        wait_for(answers, timeout=180, what="gunicorn to answer")
        yield base
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()
        shutil.rmtree(tmp_path, ignore_errors=True)


class Browser:
    """One logged-in user over real HTTP: the session and CSRF cookies, and JSON calls that return (status, body)."""

    def __init__(self, base: str):
        self.base, self.jar = base, CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.opener.open(base + "/accounts/login/", timeout=60).read()
        form = f"username=racer&password={PASSWORD.replace(' ', '+')}&csrfmiddlewaretoken={self.csrf}".encode()
        self.opener.open(urllib.request.Request(base + "/accounts/login/", data=form, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Referer": base + "/"}), timeout=60).read()

    @property
    def csrf(self) -> str:
        return next(cookie.value for cookie in self.jar if cookie.name == "csrftoken")

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        request = urllib.request.Request(self.base + path, method=method, headers={
            "Content-Type": "application/json", "X-CSRFToken": self.csrf, "Referer": self.base + "/"},
            data=None if body is None else json.dumps(body).encode())
        try:
            with self.opener.open(request, timeout=120) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, {"raw": text.decode("utf-8", "replace")[:300]}


def race(jobs):
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(pool.map(lambda job: job(), jobs))


def statuses(results):
    return sorted(status for status, _ in results)


def assert_no_500(results, allowed=(200, 201, 409)):
    bad = [(status, body) for status, body in results if status not in allowed]
    assert not bad, bad


def test_racing_writes_on_sqlite_under_three_workers_give_2xx_or_409(server):
    browser = Browser(server)
    status, copied = browser.call("POST", "/api/strategies/builtin-st/copy", {"name": "Raced"})
    assert status == 201, copied
    slug = copied["id"]
    status, session = browser.call("POST", "/api/sessions", {"name": "Raced session", "current_input": "hi",
                                                             "host": {"core_available": True}})
    assert status == 201, session
    pk = session["id"]

    copies = race([lambda: browser.call("POST", f"/api/strategies/{slug}/copy", {"name": "Same name"})] * 8)
    assert_no_500(copies)
    made = [body["id"] for status, body in copies if status == 201]
    assert len(made) == len(set(made)) and made  # each copy has its own slug

    events = race([lambda i=i: browser.call("POST", f"/api/sessions/{pk}/events",
                                            {"role": "user", "content": f"message {i}"}) for i in range(8)])
    assert_no_500(events)

    status, draft = browser.call("GET", f"/api/strategies/{slug}")
    assert status == 200
    version = draft["version"]
    edits = race([lambda i=i: browser.call("PUT", f"/api/strategies/{slug}/draft", {
        "draft": {**draft["draft"], "name": f"Edit {i}"}, "version": version}) for i in range(6)])
    assert_no_500(edits)
    assert statuses(edits).count(200) == 1  # one edit wins, the others are told the version moved on

    status, detail = browser.call("GET", f"/api/sessions/{pk}")
    assert status == 200
    last = max(event["seq"] for event in detail["history"])
    turns = race([lambda i=i: browser.call("POST", f"/api/sessions/{pk}/turns",
                                           {"reply": f"reply {i}", "expected_seq": last}) for i in range(6)])
    assert_no_500(turns)
    assert statuses(turns).count(201) == 1

    settings = race([lambda i=i: browser.call("PATCH", f"/api/sessions/{pk}", {"current_input": f"input {i}"})
                     for i in range(6)])
    assert_no_500(settings)
