"""Statements the studio makes about a write or a page are true (web.md screens 2, 3, 7): a saved revision says it
was saved and nothing about the request (a save changes no request); the revisions diff compares two different
documents by default; the composer's request rows carry every preview row's markup; a read-only session page names
the reason (the role, or another user's session)."""

import re

import pytest

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for, make_user
from tests.web.test_editor import HTMX, editor  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_saved_revision_says_it_was_saved_and_claims_no_request_effect(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    fresh = Strategy.objects.get(pk=strategy.pk)
    answer = client_for(users["designer"]).post(f"/strategies/{fresh.slug}/revisions/save/", {
        "version": fresh.version, "session": session.pk, "note": "checkpoint"}, **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 200
    assert "Saved revision" in html or "nothing new was saved" in html
    assert "data-edit-effect" not in html and "decides nothing" not in html


def _diff_choice(html: str, side: str) -> str:
    select = re.search(rf'<select id="diff-{side}" name="{side}">(.*?)</select>', html, re.S).group(1)
    return re.search(r'<option value="([^"]+)" selected>', select).group(1)


def test_the_revisions_diff_compares_the_previous_revision_with_the_latest(users, world):
    own = world["own"]
    first = world["revision"]
    own.refresh_from_db()
    strategy_services.draft_update(strategy=own, user=users["designer"], document={
        **own.draft, "rules": [*own.draft["rules"], {"id": "tide", "kind": "custom", "enabled": True,
                                                     "text": "Mind the tide.", "role": "user"}]},
        expected_version=own.version)
    second, _created = strategy_services.revision_save(strategy=own, user=users["designer"], note="second")
    html = client_for(users["designer"]).get(f"/strategies/{own.slug}/revisions/").content.decode()
    assert (_diff_choice(html, "a"), _diff_choice(html, "b")) == (first.revision, second.revision)

    own.refresh_from_db()  # an unsaved draft: the latest revision against it
    strategy_services.draft_update(strategy=own, user=users["designer"], document={**own.draft, "name": "Renamed"},
                                   expected_version=own.version)
    html = client_for(users["designer"]).get(f"/strategies/{own.slug}/revisions/").content.decode()
    assert (_diff_choice(html, "a"), _diff_choice(html, "b")) == (second.revision, "draft")


def test_the_composer_request_rows_carry_the_preview_row_markup(users, world):
    session = world["session"]
    html = client_for(users["designer"]).get(f"/sessions/{session.pk}/?preview=1").content.decode()
    block = html[html.index("data-composer-preview"):]
    rows = re.findall(r'<li class="role-[a-z]+" data-index="(\d+)" data-role="([a-z]+)" data-delivery="([a-z-]+)" '
                      r'data-history-status="([a-z-]+)">', block)
    assert rows and [int(index) for index, *_rest in rows] == list(range(len(rows)))
    assert {"system", "user"} <= {role for _index, role, *_rest in rows}


def test_a_read_only_session_names_ownership_or_the_role(users, world):
    other_designer = make_user("second-designer", "designer")
    html = client_for(other_designer).get(f"/sessions/{world['session'].pk}/").content.decode()
    assert 'data-read-only-reason="owner"' in html
    assert "this session belongs to designer-user" in html and "your role" not in html
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/").content.decode()
    assert 'data-read-only-reason="role"' in html and "your role can look at this session" in html
    assert Session.objects.count() == 1 and session_services is not None
