"""Tests that prove behaviour under real concurrency: they need PostgreSQL (row locks) and refuse anything else."""

import pytest
from django.db import connection


@pytest.fixture(autouse=True)
def require_postgresql(transactional_db):
    assert connection.vendor == "postgresql", "tests/postgres runs against PostgreSQL: make test-postgres"
