import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BROWSER_TESTS = REPO / "tests" / "browser"


def pytest_configure(config):
    """A run that holds the browser tests stops at once, in one line, on a machine without Chromium: here, before
    pytest-xdist starts its workers (a worker that stops is a crash report, not a sentence)."""
    from tests.browser.chromium import MISSING, chromium_path

    paths = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    if any(path == BROWSER_TESTS or BROWSER_TESTS.is_relative_to(path) or path.is_relative_to(BROWSER_TESTS)
           for path in paths) and not chromium_path():
        pytest.exit(MISSING, 1)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real SillyTavern files beside the project (CI has them; a missing folder is a failure, not a skip)."""
    folder = Path(os.environ.get("PAS_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))
    assert folder.is_dir(), f"shared fixtures folder {folder} is missing; set PAS_SHARED_FIXTURES"
    return folder


# A loaded machine must not fail a test for being slow: no per-example deadline and no time-based health
# check by default; speed is measured by `make bench`, not here.
from hypothesis import HealthCheck  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402

hypothesis_settings.register_profile("suite", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
hypothesis_settings.load_profile("suite")
