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
