"""One engine run per page (quality.md, Performance), the rest of the pages: the goldens page runs the engine once per
golden (the latest revision's line is a fragment of its own, which reuses the approved run the page kept), every editor
write runs it once after the page it came from, and the JSON reads run it once. Counted with `runs` (every module's
`assemble`)."""

import re

import pytest

from preview_app.models import GoldenSnapshot
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from studio.result_cache import results_cache
from tests.web.conftest import client_for, with_loaded_fragments
from tests.web.test_editor import HTMX, editor  # noqa: F401
from tests.web.test_engine_runs_per_page import runs  # noqa: F401

pytestmark = pytest.mark.django_db


def _new_revision(world, users):
    strategy = Strategy.objects.get(pk=world["own"].pk)
    draft = {**strategy.draft, "rules": [*strategy.draft["rules"], {
        "id": "weather", "kind": "custom", "enabled": True, "text": "Mention the weather.", "role": "user",
        "delivery": "pre-step"}]}
    strategy_services.draft_update(strategy=strategy, user=users["designer"], document=draft,
                                   expected_version=strategy.version)
    revision, created = strategy_services.revision_save(strategy=strategy, user=users["designer"], note="weather")
    assert created
    return revision


def _latest_url(golden):
    return f"/goldens/{golden.pk}/latest/"


def test_the_goldens_page_with_a_newer_revision_runs_once_and_its_line_is_a_fragment(world, users, runs):  # noqa: F811
    newer = _new_revision(world, users)
    golden = world["golden"]
    client = client_for(users["qa"])
    html = client.get("/goldens/").content.decode()
    assert len(runs) == 1  # the approved revision only; the newer one is named, not run
    card = html[html.index(f'id="golden-{golden.pk}"'):]
    assert 'data-latest="newer"' in card and f"<code>{newer.revision[:12]}</code>" in card
    placeholder = re.search(r'<div class="golden-latest" data-golden-latest="unchecked" hx-get="([^"]+)" '
                            r'hx-trigger="load" hx-swap="outerHTML">(.*?)</div>', card, re.S)
    assert placeholder.group(1) == _latest_url(golden)
    assert f'<a href="{_latest_url(golden)}">Check the latest revision</a>' in placeholder.group(2)  # without JS
    runs.clear()
    fragment = client.get(_latest_url(golden), **HTMX).content.decode()
    assert len(runs) == 1  # the newer revision; the approved run it is checked against is the one the page kept
    assert fragment.lstrip().startswith('<div class="golden-latest" data-golden-latest="changes">')
    assert "<html" not in fragment and "Mention the weather." in fragment
    assert "the latest revision would change it" in with_loaded_fragments(client, html)


def test_the_latest_line_alone_runs_both_revisions_and_is_a_page_without_js(world, users, runs):  # noqa: F811
    newer = _new_revision(world, users)
    golden = world["golden"]
    page = client_for(users["qa"]).get(_latest_url(golden))
    html = page.content.decode()
    assert page.status_code == 200 and len(runs) == 2  # nothing kept: the approved run, then the newer one
    assert "<html" in html and f'href="/goldens/#golden-{golden.pk}"' in html
    assert 'data-golden-latest="changes"' in html and f'name="revision" value="{newer.revision}"' in html
    assert 'data-status="matches"' in html


def test_the_latest_line_of_a_golden_without_a_newer_revision_says_so(world, users, runs):  # noqa: F811
    html = client_for(users["qa"]).get(_latest_url(world["golden"])).content.decode()
    assert 'data-golden-latest="none"' in html and "there is no newer one to check" in html
    assert len(runs) == 1


def test_an_unknown_golden_is_a_404_page(world, users, runs):  # noqa: F811
    assert client_for(users["qa"]).get("/goldens/999999/latest/").status_code == 404
    assert client_for(None).get(_latest_url(world["golden"])).status_code == 302  # to the login page
    assert runs == []


def test_the_golden_api_runs_once_and_twice_with_a_newer_revision_it_reports(world, users, runs):  # noqa: F811
    client = client_for(users["qa"])
    golden = world["golden"]
    row = client.get(f"/api/goldens/{golden.pk}").json()
    assert (row["status"], row["latest_revision"], row["latest_changes"]) == ("matches", None, False)
    assert len(runs) == 1
    newer = _new_revision(world, users)
    results_cache().clear()  # not the approved run the first answer kept
    runs.clear()
    row = client.get(f"/api/goldens/{golden.pk}").json()
    # the answer says whether the newer revision changes it (`latest_changes`): that is a run of its own
    assert (row["latest_revision"], row["latest_changes"]) == (newer.revision, True)
    assert len(runs) == 2
    runs.clear()
    assert client.get(f"/api/goldens/{golden.pk}").json() == row
    assert len(runs) == 0  # both runs are kept by their requests (studio/result_cache.py)


def test_the_goldens_check_command_runs_the_approved_revision_only(world, users, runs):  # noqa: F811
    import io

    from django.core.management import call_command

    _new_revision(world, users)
    runs.clear()
    call_command("goldens", "check", stdout=io.StringIO(), stderr=io.StringIO())
    assert len(runs) == GoldenSnapshot.objects.count() == 1


def test_the_json_preview_api_runs_once_its_variant_reads_the_kept_result_and_the_assemble_api_runs_once(world, users, runs):  # noqa: F811
    client = client_for(users["qa"])
    body = client.get(f"/api/sessions/{world['session'].pk}/preview").json()
    assert body["ok"] is True and len(runs) == 1
    runs.clear()
    assert client.get(f"/api/sessions/{world['session'].pk}/preview?texts=0").json()["ok"] is True
    assert len(runs) == 0  # the same engine request: the result kept by the first answer
    runs.clear()
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "conversation": {"history": [{"role": "user", "content": "Hi"}]}}
    answer = client.post("/api/assemble", request, content_type="application/json")
    assert answer.status_code == 200 and answer.json()["ok"] is True and len(runs) == 1


def test_the_preview_page_of_a_revision_runs_once_and_its_export_reads_the_kept_result(world, users, runs):  # noqa: F811
    client = client_for(users["qa"])
    query = f"?strategy={world['own'].slug}&revision={world['revision'].revision}"
    assert client.get(f"/sessions/{world['session'].pk}/preview/{query}").status_code == 200
    assert len(runs) == 1
    runs.clear()
    assert client.get(f"/sessions/{world['session'].pk}/preview/result.json{query}").status_code == 200
    assert len(runs) == 0  # the page's engine request: the result it kept


def test_comparing_a_strategy_with_itself_runs_once(world, users, runs):  # noqa: F811
    """Both sides the same document on the same session: one request, so one run (the honest count of a compare
    is one run per distinct side)."""
    page = client_for(users["qa"]).get(
        f"/sessions/{world['session'].pk}/compare/?a=applied&b={world['own'].slug}%40{world['revision'].revision}")
    assert page.status_code == 200 and 'data-change="same"' in page.content.decode()
    assert len(runs) == 1


WRITES = [
    ("rules/add/", {"kind": "custom", "name": "Scene note", "text": "It is night.", "role": "system"}),
    ("rules/phi/edit/", {"enabled": ["false"]}),
    ("priority/order/", {"row": "default", "direction": "up"}),
    ("layout/", {"source": "preset-slots", "identity": "preserve", "fallback": "error", "confirm": "yes"}),
    ("settings/", {"name": "Renamed", "backend": "native", "placement": "native-slots", "confirm": "yes"}),
]


@pytest.mark.parametrize(("path", "data"), WRITES, ids=[path for path, _ in WRITES])
def test_each_editor_write_runs_the_engine_once_after_its_page(users, editor, runs, path, data):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    assert client.get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").status_code == 200
    runs.clear()
    fresh = Strategy.objects.get(pk=strategy.pk)
    answer = client.post(f"/strategies/{strategy.slug}/{path}", {
        **data, "version": fresh.version, "session": session.pk}, **HTMX)
    assert answer.status_code == 200 and "data-edit-effect" in answer.content.decode()
    assert Strategy.objects.get(pk=strategy.pk).version == fresh.version + 1  # it wrote
    assert len(runs) == 1
