"""Production settings (quality.md Security): secrets from the environment and a clean `check --deploy`."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_manage(*args, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    environment.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=environment, capture_output=True,
                          text=True, timeout=600)


def test_check_deploy_is_clean_in_production():
    done = run_manage("check", "--deploy", "--fail-level", "WARNING", DJANGO_ENV="production",
                      DJANGO_SECRET_KEY="x" * 20 + "a-long-random-production-secret-value-1234567890",
                      DJANGO_ALLOWED_HOSTS="studio.example.com")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_production_refuses_to_start_without_a_secret_key():
    done = run_manage("check", DJANGO_ENV="production", DJANGO_ALLOWED_HOSTS="studio.example.com")
    assert done.returncode != 0 and "DJANGO_SECRET_KEY" in done.stderr


def test_the_dev_user_command_refuses_in_production():
    done = run_manage("ensure_dev_user", DJANGO_ENV="production", DJANGO_SECRET_KEY="y" * 60,
                      DJANGO_ALLOWED_HOSTS="studio.example.com")
    assert done.returncode != 0 and "refuses" in (done.stderr + done.stdout)
