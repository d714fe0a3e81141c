"""Where the system Chromium is (quality.md: never a downloaded browser, never a silent skip)."""

import os
import shutil

MISSING = "No Chromium found: install it (Debian: apt-get install -y chromium) or set CHROMIUM_PATH"


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
