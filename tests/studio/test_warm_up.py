"""A gunicorn worker warms up before its first request: the views, one small engine run (the default tokenizer) and
every project template; a failing engine run is logged and the worker still serves."""

import logging
import runpy
from pathlib import Path

import pytest
from django.urls import get_resolver

import assembly.api
from studio import warm_up as warming

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def views_imported():
    """The views import the engine's `assemble` before a test wraps it (a module that imported the wrapper would keep
    it after the test)."""
    get_resolver().url_patterns  # noqa: B018


def test_the_warm_up_runs_the_engine_once_and_compiles_every_project_template(monkeypatch, caplog):
    runs = []
    real = assembly.api.assemble
    monkeypatch.setattr(assembly.api, "assemble", lambda request: runs.append(request) or real(request))
    with caplog.at_level(logging.WARNING, logger="studio.warm_up"):
        compiled = warming.warm_up()  # no database fixture: a query would fail and be logged
    assert runs == [warming.WARM_REQUEST] and "warm-up" not in caplog.text
    templates = sorted(p.relative_to(REPO / "templates").as_posix() for p in (REPO / "templates").rglob("*.html"))
    assert compiled == len(templates) == len(warming.project_templates()) and "preview/preview.html" in templates


def test_a_failing_engine_run_is_logged_and_the_templates_still_compile(monkeypatch, caplog):
    def broken(request):
        raise ValueError("no tokenizer files")

    monkeypatch.setattr(assembly.api, "assemble", broken)
    with caplog.at_level(logging.WARNING, logger="studio.warm_up"):
        assert warming.warm_up() == len(warming.project_templates())
    assert "warm-up: the engine's first run failed" in caplog.text


@pytest.mark.parametrize(("setting", "warmed"), [(None, 1), ("1", 1), ("0", 0)])
def test_gunicorn_warms_each_worker_unless_told_not_to(monkeypatch, setting, warmed):
    calls = []
    monkeypatch.setattr(warming, "warm_up", lambda: calls.append(True))
    if setting is None:
        monkeypatch.delenv("STUDIO_WARM_UP", raising=False)
    else:
        monkeypatch.setenv("STUDIO_WARM_UP", setting)
    hooks = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    hooks["post_worker_init"](worker=None)
    assert len(calls) == warmed
