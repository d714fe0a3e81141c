"""Goldens (web.md screen 5): QA pins a preview; the goldens page says matches or differs, checked against the
session run with the revision the golden approved, shows what changed message by message and as
a JSON diff, and says separately whether the strategy's latest revision would change it; approving again replaces
the golden of that session and strategy; an admin deletes one after a confirmation page."""

import re

import pytest
from django.utils.html import escape

from preview_app import services
from preview_app.goldens import golden_status
from preview_app.models import GoldenSnapshot
from strategies_app import services as strategy_services
from tests.web.conftest import client_for, with_loaded_fragments


def _statuses(html):
    return dict(re.findall(r'data-golden-id="(\d+)" data-status="(matches|differs)"', html))


def _new_revision(world, users, change):
    strategy = world["own"]
    strategy.refresh_from_db()
    document = change(dict(strategy.draft))
    strategy_services.draft_update(strategy=strategy, user=users["designer"], document=document,
                                   expected_version=strategy.version)
    revision, created = strategy_services.revision_save(strategy=strategy, user=users["designer"], note="changed")
    assert created
    return revision


def _without_world_book(document):
    return {**document, "rules": [{**rule, "enabled": False} if rule["kind"] == "worldbook" else rule
                                  for rule in document["rules"]]}


def test_a_fresh_golden_matches(world, users):
    golden = world["golden"]
    html = client_for(users["qa"]).get("/goldens/").content.decode()
    assert _statuses(html) == {str(golden.pk): "matches"}
    assert 'data-differing="0"' in html and "Every golden matches." in html


def test_without_a_model_a_goldens_window_asks_for_the_only_choice_the_page_has(world, users):
    html = client_for(users["qa"]).get("/goldens/").content.decode()
    assert "Pick a model to see it against its context window." in html
    assert "set a budget" not in html  # the page offers a model, no budget
    with_model = client_for(users["qa"]).get("/goldens/?model=gpt-4o").content.decode()
    assert "Pick a model" not in with_model and 'data-context-window="' in with_model


def test_a_new_revision_that_changes_the_request_is_a_separate_line_and_the_golden_still_matches(world, users):
    """Disabling the world book removes "The gate is shut at night." from the system message: the golden still
    matches the revision it approved (the session runs it); the latest revision's line says it would change it, its
    message-level diff marks that message's content, and its JSON diff shows the removed line."""
    golden = world["golden"]
    newer = _new_revision(world, users, _without_world_book)
    client = client_for(users["qa"])
    html = with_loaded_fragments(client, client.get("/goldens/").content.decode())
    assert _statuses(html) == {str(golden.pk): "matches"}
    assert 'data-differing="0"' in html and 'data-latest="newer"' in html and 'data-golden-latest="changes"' in html
    assert f"<code>{newer.revision[:12]}</code> <span class=\"chip warn\">newer revision</span>" in html
    assert "the latest revision would change it" in html
    latest = html[html.index("data-golden-latest="):]
    changed = re.findall(r'data-change="([^"]+)" data-changes="([^"]*)"', latest)
    assert ("changed", "content") in changed
    assert re.search(r'<span class="del">-.*The gate is shut at night\.', latest)
    status = golden_status(GoldenSnapshot.objects.get(pk=golden.pk))
    assert (status.status, status.checked_revision, status.latest.revision) == ("matches", world["revision"], newer)
    assert (status.latest.status, status.latest_changes, status.applied) == ("differs", True, "approved")


def test_a_change_of_the_session_makes_it_differ(world, users):
    services.event_append(session=world["session"], role="assistant", content="A new reply.", name="")
    html = client_for(users["qa"]).get("/goldens/").content.decode()
    assert _statuses(html) == {str(world["golden"].pk): "differs"}
    assert ("added", "added") in re.findall(r'data-change="([^"]+)" data-changes="([^"]*)"', html)
    assert "A new reply." in html


def test_a_revision_that_only_renames_changes_the_json_but_not_the_messages(world, users):
    _new_revision(world, users, lambda document: {**document, "name": "Renamed strategy"})
    client = client_for(users["qa"])
    html = with_loaded_fragments(client, client.get("/goldens/").content.decode())
    assert _statuses(html) == {str(world["golden"].pk): "matches"}
    latest = html[html.index("data-golden-latest="):]
    assert "The messages are the same; other fields of the result changed" in latest
    assert re.search(r'<span class="add">\+.*Renamed strategy', latest)


def test_approving_again_makes_it_match_and_keeps_one_golden_per_session_and_strategy(world, users):
    newer = _new_revision(world, users, _without_world_book)
    client = client_for(users["qa"])
    response = client.post("/goldens/pin/", {"session": world["session"].pk, "strategy": world["own"].slug,
                                             "revision": newer.revision})
    assert response.status_code == 302 and response["Location"].startswith("/goldens/#golden-")
    goldens = GoldenSnapshot.objects.filter(session=world["session"])
    assert list(goldens.values_list("revision", flat=True)) == [newer.pk]
    assert goldens.get().approved_by == users["qa"]
    html = client.get("/goldens/").content.decode()
    assert _statuses(html) == {str(goldens.get().pk): "matches"}


def test_pin_from_the_preview_of_another_strategy(world, users):
    session = world["session"]
    builtin = world["own"].__class__.objects.get(slug="builtin-st")
    revision = builtin.revisions.first()
    client = client_for(users["admin"])
    page = client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st&revision={revision.revision}")
    assert b'action="/goldens/pin/"' in page.content
    pinned = client.post("/goldens/pin/", {"session": session.pk, "strategy": "builtin-st",
                                           "revision": revision.revision}, follow=True)
    assert pinned.status_code == 200
    # the notice names the strategy as the pages list it, not by its slug
    assert f"with Preset slots first (advanced) @ {revision.revision[:12]}" in pinned.content.decode()  # English page
    assert "预设插槽优先" not in pinned.content.decode()
    assert "with builtin-st @" not in pinned.content.decode()
    assert GoldenSnapshot.objects.filter(session=session).count() == 2
    filtered = client.get(f"/goldens/?session={session.pk}").content.decode()
    assert len(_statuses(filtered)) == 2 and set(_statuses(filtered).values()) == {"matches"}


def test_pinning_a_refused_preview_is_an_error_and_stores_nothing(world, users):
    session = world["session"]
    services.session_update(session=session, host={"core_available": False})
    revision = world["own"].__class__.objects.get(slug="builtin-st").revisions.first()
    response = client_for(users["qa"]).post("/goldens/pin/", {"session": session.pk, "strategy": "builtin-st",
                                                               "revision": revision.revision})
    assert response.status_code == 409
    assert b'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in response.content
    assert GoldenSnapshot.objects.filter(session=session).count() == 1


def test_a_golden_whose_run_is_now_refused_differs_and_shows_the_error(world, users):
    """The fixture's golden is a standard-backend strategy; turning the host's native assembly off refuses it."""
    services.session_update(session=world["session"], host={"core_available": True, "native_available": False})
    html = client_for(users["qa"]).get("/goldens/").content.decode()
    assert _statuses(html) == {str(world["golden"].pk): "differs"}
    assert 'data-code="ASSEMBLY_NATIVE_UNAVAILABLE"' in html
    # Every approved message is now missing.
    assert len(re.findall(r'data-change="removed"', html)) == len(world["golden"].result["request"]["messages"])


def test_bad_pin_forms_name_the_field(world, users):
    client = client_for(users["qa"])
    response = client.post("/goldens/pin/", {"session": world["session"].pk, "strategy": world["own"].slug})
    assert response.status_code == 400 and b"revision: expected a revision sha" in response.content
    response = client.post("/goldens/pin/", {"session": world["session"].pk, "strategy": world["own"].slug,
                                             "revision": "0" * 64})
    assert response.status_code == 404


def test_an_admin_deletes_a_golden_after_a_confirmation_page_and_the_session_stays(world, users):
    golden = GoldenSnapshot.objects.get()
    client = client_for(users["admin"])
    listing = client.get("/goldens/").content.decode()
    assert f'href="/goldens/{golden.pk}/delete/"' in listing
    confirm = client.get(f"/goldens/{golden.pk}/delete/")
    assert confirm.status_code == 200 and "Delete this golden?" in confirm.content.decode()
    assert GoldenSnapshot.objects.filter(pk=golden.pk).exists()  # asking deletes nothing
    done = client.post(f"/goldens/{golden.pk}/delete/", follow=True)
    assert done.redirect_chain[-1][0] == "/goldens/"
    assert f"Golden deleted: session {escape(world['session'].name)}" in done.content.decode()
    assert not GoldenSnapshot.objects.filter(pk=golden.pk).exists()
    assert world["session"].__class__.objects.filter(pk=world["session"].pk).exists()


@pytest.mark.parametrize("role", ["designer", "qa"])
def test_only_an_admin_may_delete_a_golden(world, users, role):
    golden = GoldenSnapshot.objects.get()
    client = client_for(users[role])
    assert f"/goldens/{golden.pk}/delete/" not in client.get("/goldens/").content.decode()
    assert client.get(f"/goldens/{golden.pk}/delete/").status_code == 403
    refused = client.post(f"/goldens/{golden.pk}/delete/")
    assert refused.status_code == 403 and "may not delete golden snapshots" in refused.content.decode()
    assert GoldenSnapshot.objects.filter(pk=golden.pk).exists()


def test_deleting_a_golden_that_is_gone_is_a_404(world, users):
    client = client_for(users["admin"])
    assert client.post("/goldens/999999/delete/").status_code == 404


def test_deleting_a_golden_needs_the_csrf_token(world, users):
    from django.test import Client

    golden = GoldenSnapshot.objects.get()
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    assert client.post(f"/goldens/{golden.pk}/delete/").status_code == 403
    assert GoldenSnapshot.objects.filter(pk=golden.pk).exists()


def test_the_delete_confirmation_is_in_chinese_on_a_chinese_page(world, users):
    golden = GoldenSnapshot.objects.get()
    page = client_for(users["admin"]).get(f"/goldens/{golden.pk}/delete/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = page.content.decode()
    assert "删除这个金标？" in html and "会话、策略及其修订版仍保留" in html and "Delete this golden" not in html


def test_the_api_deletes_a_golden_for_an_admin_only(world, users):
    golden = GoldenSnapshot.objects.get()
    refused = client_for(users["qa"]).delete(f"/api/goldens/{golden.pk}")
    assert refused.status_code == 403 and refused.json()["detail"] == {"permission": "preview_app.delete_goldensnapshot"}
    assert client_for(users["admin"]).delete(f"/api/goldens/{golden.pk}").json() == {"ok": True}
    assert not GoldenSnapshot.objects.exists()
    assert client_for(users["admin"]).delete(f"/api/goldens/{golden.pk}").status_code == 404


def test_the_pin_form_says_a_golden_leaves_the_pages_options_out(world, users):
    session, client = world["session"], client_for(users["qa"])
    revision = world["revision"]
    plain = client.get(f"/sessions/{session.pk}/preview/?strategy={world['own'].slug}&revision={revision.revision}")
    assert "data-pin-without-options" not in plain.content.decode()
    asked = client.get(f"/sessions/{session.pk}/preview/?strategy={world['own'].slug}&revision={revision.revision}"
                       "&context_window=50&apply_budget=on")
    assert "data-pin-without-options" in asked.content.decode() and "are not part of it" in asked.content.decode()
