import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


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
