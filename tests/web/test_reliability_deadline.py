"""No request holds a worker (quality.md "Performance"): a real gunicorn started from gunicorn.conf.py with 3 workers on
a SQLite file stops an engine run at STUDIO_ENGINE_DEADLINE_SECONDS and answers a coded 503 long before gunicorn's
own timeout, and the other users' requests are answered meanwhile. Waits for conditions, never for a fixed time."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.web.test_reliability_races import GUNICORN, PASSWORD, REPO, Browser, free_port, race, wait_for

pytestmark = pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is a dev dependency: make install-dev")


@pytest.fixture
def server(tmp_path):
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("DJANGO_", "DATABASE_URL", "GUNICORN_", "STUDIO_ENGINE"))}
    environment.update(DATABASE_URL=f"sqlite:///{tmp_path / 'deadline.sqlite3'}", DJANGO_DEBUG="0",
                       PYTHONUNBUFFERED="1", STUDIO_ENGINE_DEADLINE_SECONDS="0.25", GUNICORN_WORKERS="3")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=environment, check=True, timeout=600)
    script = ("from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group; "
              f"u = get_user_model().objects.create_user('racer', password={PASSWORD!r}, is_staff=True); "
              "u.groups.add(Group.objects.get(name='admin'))")
    subprocess.run([*manage, "shell", "-c", script], cwd=REPO, env=environment, check=True, timeout=600)
    port = free_port()
    environment["GUNICORN_BIND"] = f"127.0.0.1:{port}"
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen([str(GUNICORN), "-c", "gunicorn.conf.py", "config.wsgi:application"], cwd=REPO,
                               env=environment, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def answers():
        if process.poll() is not None:
            raise AssertionError("gunicorn exited: " + (tmp_path / "gunicorn.log").read_text())
        try:
            import urllib.request

            return urllib.request.urlopen(base + "/accounts/login/", timeout=10).status == 200
        except OSError:
            return False

    try:
        wait_for(answers, timeout=180, what="gunicorn to answer")
        yield base, tmp_path / "gunicorn.log"
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()
        shutil.rmtree(tmp_path, ignore_errors=True)


def _long_request(messages: int) -> dict:
    history = [{"id": f"m{i}", "role": "user" if i % 2 else "assistant",
                "content": f"message {i}: " + "the lanterns flicker by the river. " * 8} for i in range(messages)]
    return {"strategy": "builtin-st", "host": {"core_available": True},
            "conversation": {"history": history, "input": [{"id": "u", "role": "user", "content": "Hi"}]}}


def test_a_run_past_the_deadline_answers_503_and_frees_the_worker(server):
    base, log = server
    browser = Browser(base)
    heavy = _long_request(5_000)  # 1.7 MB, about a second of engine time, under the 2 MiB limit
    started = time.monotonic()
    results = race([lambda: browser.call("POST", "/api/assemble", heavy)] * 3
                   + [lambda: browser.call("GET", "/api/strategies")] * 3)
    took = time.monotonic() - started
    slow, quick = results[:3], results[3:]
    for status, body in slow:
        assert status in (200, 503), body  # a fast machine may finish in time; a slow one is stopped
        if status == 503:
            assert body["code"] == "ENGINE_DEADLINE_EXCEEDED" and body["detail"]["limit_seconds"] == 0.25
    assert any(status == 503 for status, _ in slow), "the heavy runs were expected to pass a quarter of a second"
    assert all(status == 200 for status, _ in quick)
    assert took < 30  # gunicorn.conf.py's timeout: no worker was killed to answer
    assert "WORKER TIMEOUT" not in log.read_text()
    status, _ = browser.call("GET", "/api/sessions")  # every worker still answers
    assert status == 200
