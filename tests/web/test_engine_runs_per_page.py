"""One engine run per page and per editor write (quality.md, Performance). Every module's `assemble` is counted, so a
run anywhere in a request (a view, a presenter, the turn projection) shows up; the editor keeps the result its page
showed, keyed by the whole engine request, so a change by someone else in between is a miss, never a stale answer."""

import sys

import pytest
from django.urls import get_resolver

import assembly.api
from preview_app import services as session_services
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from studio.result_cache import results_cache
from tests.web.conftest import client_for
from tests.web.test_editor import HTMX, editor  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(monkeypatch):
    """The engine requests assembled since the fixture started (a list of their request dicts), from an empty
    result cache (the world's set-up ran the engine on some of the same requests)."""
    results_cache().clear()
    seen: list[dict] = []
    engine = assembly.api.assemble
    get_resolver().url_patterns  # noqa: B018 - imports every view module, so their `assemble` can be counted

    def counted(request):
        seen.append(request)
        return engine(request)

    for module in list(sys.modules.values()):
        if getattr(module, "assemble", None) is engine:
            monkeypatch.setattr(module, "assemble", counted)
    return seen


def _edit_url(strategy, session):
    return f"/strategies/{strategy.slug}/edit/?session={session.pk}"


def _move(client, strategy, session, htmx=True):
    fresh = Strategy.objects.get(pk=strategy.pk)
    return client.post(f"/strategies/{fresh.slug}/rules/order/", {
        "version": fresh.version, "session": session.pk, "row": "history", "direction": "up"},
        **(HTMX if htmx else {}))


def test_the_editor_page_runs_the_engine_once(users, editor, runs):  # noqa: F811
    page = client_for(users["designer"]).get(_edit_url(editor["strategy"], editor["session"]))
    assert page.status_code == 200 and "data-edit-effect" not in page.content.decode()
    assert len(runs) == 1


def test_an_editor_write_runs_the_engine_once_after_the_page_it_came_from(users, editor, runs):  # noqa: F811
    client = client_for(users["designer"])
    client.get(_edit_url(editor["strategy"], editor["session"]))
    runs.clear()
    answer = _move(client, editor["strategy"], editor["session"])
    assert answer.status_code == 200 and "data-edit-effect" in answer.content.decode()
    assert len(runs) == 1
    # the next write starts from the page this one answered: one run again
    runs.clear()
    second = client.post(f"/strategies/{editor['strategy'].slug}/positions/order/", {
        "version": Strategy.objects.get(pk=editor["strategy"].pk).version, "session": editor["session"].pk,
        "row": "preset#jailbreak", "direction": "up"}, **HTMX)
    assert second.status_code == 200 and len(runs) == 1


def test_the_no_js_write_and_the_page_it_redirects_to_run_the_engine_once(users, editor, runs):  # noqa: F811
    client = client_for(users["designer"])
    client.get(_edit_url(editor["strategy"], editor["session"]))
    runs.clear()
    answer = _move(client, editor["strategy"], editor["session"], htmx=False)
    assert answer.status_code == 303
    page = client.get(answer["Location"]).content.decode()
    assert "Nothing changed in the request." in page and len(runs) == 1


def test_a_write_without_a_page_before_it_runs_the_draft_before_too(users, editor, runs):  # noqa: F811
    answer = _move(client_for(users["designer"]), editor["strategy"], editor["session"])
    assert answer.status_code == 200 and len(runs) == 2


def test_a_session_changed_by_someone_else_in_between_is_run_again_not_answered_stale(users, editor, runs):  # noqa: F811
    client = client_for(users["designer"])
    strategy, session = editor["strategy"], editor["session"]
    client.get(_edit_url(strategy, session))
    session_services.event_append(session=session, role="user", content="A message added in another tab")
    runs.clear()
    answer = _move(client, strategy, session)
    assert answer.status_code == 200 and len(runs) == 2  # the draft before, on the changed session, then after
    assert all("A message added in another tab" in str(request["conversation"]) for request in runs)
    # the effect compares the same session both times: the added message is no change of the write
    assert "Nothing changed in the request." in answer.content.decode()


def test_a_strategy_changed_by_someone_else_in_between_is_run_again(users, editor, runs):  # noqa: F811
    client = client_for(users["designer"])
    strategy, session = editor["strategy"], editor["session"]
    client.get(_edit_url(strategy, session))
    fresh = Strategy.objects.get(pk=strategy.pk)
    strategy_services.strategy_update(strategy=fresh, user=users["admin"], name="Renamed elsewhere",
                                      backend=None, placement=fresh.draft.get("placement"),
                                      expected_version=fresh.version)
    runs.clear()
    answer = _move(client, strategy, session)
    assert answer.status_code == 200 and len(runs) == 2
    assert all(request["strategy"].get("name") == "Renamed elsewhere" for request in runs)


def test_another_model_or_generation_is_another_run(users, editor, runs):  # noqa: F811
    client = client_for(users["designer"])
    strategy, session = editor["strategy"], editor["session"]
    client.get(_edit_url(strategy, session))
    client.get(_edit_url(strategy, session) + "&model=gpt-4o")
    client.get(_edit_url(strategy, session) + "&model=gpt-4o&generation=impersonate")
    assert len(runs) == 3
    client.get(_edit_url(strategy, session) + "&model=gpt-4o&generation=impersonate")
    assert len(runs) == 3  # the same request again is the kept result


def test_the_preview_page_runs_the_engine_once_and_its_projection_is_a_request_of_its_own(world, users, runs):
    client = client_for(users["qa"])
    page = client.get(f"/sessions/{world['session'].pk}/preview/?turns=3")
    assert page.status_code == 200 and 'data-turn-projection data-turns="3"' in page.content.decode()
    assert len(runs) == 1
    runs.clear()
    projection = client.get(f"/sessions/{world['session'].pk}/preview/projection/?turns=3", **HTMX)
    assert projection.status_code == 200 and projection.content.decode().count("<tr data-turn=") == 4
    assert len(runs) == 4  # now and three projected turns: the projection's own cost, not the page's


def test_the_compare_page_runs_the_engine_once_per_side(world, users, runs):
    page = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/compare/?a=applied&b=builtin-st")
    assert page.status_code == 200 and len(runs) == 2


def test_the_goldens_page_runs_the_engine_once_per_golden(world, users, runs):
    page = client_for(users["qa"]).get("/goldens/")
    assert page.status_code == 200 and f"golden-{world['golden'].pk}" in page.content.decode()
    assert len(runs) == 1


def test_the_session_page_runs_the_engine_only_for_the_composer_preview(world, users, runs):
    client = client_for(users["designer"])
    page = client.get(f"/sessions/{world['session'].pk}/")
    assert page.status_code == 200 and len(runs) == 0
    asked = client.get(f"/sessions/{world['session'].pk}/?preview=1")
    assert asked.status_code == 200 and len(runs) == 1


def test_a_long_history_projects_only_when_asked(world, users, runs, monkeypatch):
    from preview_app import views

    monkeypatch.setattr(views, "PROJECTED_BY_DEFAULT", 0)  # the session's one message counts as long
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    section = html.split("data-turn-projection")[1].split("</section>")[0]
    assert 'hx-trigger="load"' not in section and "runs only when asked: press Project." in section
    assert f'action="/sessions/{world["session"].pk}/preview/projection/"' in section and len(runs) == 1
    asked = client.get(f"/sessions/{world['session'].pk}/preview/?turns=2").content.decode()
    assert 'hx-trigger="load"' in asked.split("data-turn-projection")[1].split("</section>")[0]


def test_a_refused_comparison_of_one_document_runs_once(world, users, runs):
    session = world["session"]
    type(session).objects.filter(pk=session.pk).update(host={"core_available": False})
    page = client_for(users["qa"]).get(f"/sessions/{session.pk}/compare/?a=builtin-st&b=builtin-st")
    html = page.content.decode()
    assert page.status_code == 409 and html.count("REQUEST_ASSEMBLY_CORE_REQUIRED") >= 2  # both sides say why
    assert len(runs) == 1
