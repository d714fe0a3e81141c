"""Playwright on the system Chromium (quality.md): never a downloaded browser, never a silent skip."""

import os
import shutil

import pytest

# Playwright's sync API runs an event loop in the test thread; Django's ORM guard would refuse DB access there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.exit("No Chromium found: install it (Debian: apt-get install -y chromium) or set CHROMIUM_PATH", 1)
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": chromium_path(),
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"],
    }
