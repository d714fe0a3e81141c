"""The turn projection's own route (web.md, Users and permissions): login first, the session's read policy, refusals
with their status on the page (200 with the refusal inside for the htmx fragment, which htmx would not swap
otherwise)."""

import re

import pytest
from django.utils import translation

from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def _url(world, query=""):
    return f"/sessions/{world['session'].pk}/preview/projection/{query}"


def test_anonymous_callers_are_sent_to_log_in(world):
    answer = client_for(None).get(_url(world))
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("role", ["qa", "designer", "admin"])
def test_every_role_reads_the_projection(world, users, role):
    answer = client_for(users[role]).get(_url(world))
    assert answer.status_code == 200 and answer.content.decode().count("<tr data-turn=") == 6


def test_an_unknown_session_is_a_404_page(users):
    answer = client_for(users["qa"]).get("/sessions/999999/preview/projection/")
    assert answer.status_code == 404


def test_a_refused_choice_shows_in_the_projection_with_its_status(world, users):
    client = client_for(users["qa"])
    page = client.get(_url(world, "?strategy=no-such-strategy"))
    assert page.status_code == 404 and 'data-status="404"' in page.content.decode().split("data-turn-projection")[1]
    fragment = client.get(_url(world, "?strategy=no-such-strategy"), HTTP_HX_REQUEST="true")
    html = fragment.content.decode()
    assert fragment.status_code == 200 and html.lstrip().startswith("<section") and 'data-status="404"' in html


def test_a_bad_option_names_the_field_and_projects_nothing(world, users):
    page = client_for(users["qa"]).get(_url(world, "?context_window=lots"))
    html = page.content.decode()
    assert page.status_code == 400 and 'data-status="400"' in html and "context_window" in html
    assert "<tr data-turn=" not in html


def test_the_query_is_kept_escaped_in_the_form_and_the_back_link(world, users):
    html = client_for(users["qa"]).get(_url(world, '?turns=2&quiet_prompt=%3Cb%3Ehi%22')).content.decode()
    assert "<b>hi" not in html and "&lt;b&gt;hi&quot;" in html
    assert html.count("<tr data-turn=") == 3


def _keyword_session(users, entries):
    from preview_app import services
    from strategies_app import services as strategy_services
    from strategies_app.models import Strategy, WorldBook

    book = strategy_services.worldbook_import(user=users["admin"], name="Belfry", data={"entries": entries})
    return services.session_create(user=users["designer"], name="Belfry", host={"core_available": True},
                                   world_books=[WorldBook.objects.get(pk=book.id)],
                                   world_info_activation="keywords", current_input="Ring it.",
                                   strategy=Strategy.objects.get(slug="builtin-st"))


def _world_info_cells(html):
    rows = re.findall(r'<tr data-turn="(\d+)".*?</tr>', html, re.S)
    cells = re.findall(r'<tr data-turn="\d+".*?<td data-world-info="(\d+)">([^<]*)</td></tr>', html, re.S)
    assert len(rows) == len(cells)
    return [text for _count, text in cells]


def test_each_projected_turn_names_the_world_info_it_activates_with_cooldown_running(users):
    # a constant entry with a cooldown of 3 messages; each turn adds the user message and the reply to the chat:
    # length 1 active (cooling until 4), 3 cooling, 5 active (until 8), 7 cooling, 9 active, 11 cooling
    session = _keyword_session(users, {"0": {"uid": 0, "constant": True, "cooldown": 3, "comment": "Bell",
                                             "content": "The bell rings."}})
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/projection/?turns=5").content.decode()
    assert _world_info_cells(html) == ["Bell", "none", "Bell", "none", "Bell", "none"]


def test_the_world_info_column_in_chinese(users):
    session = _keyword_session(users, {"0": {"uid": 0, "constant": True, "cooldown": 3, "comment": "Bell",
                                             "content": "The bell rings."}})
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/projection/?turns=1",
                                       HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    with translation.override("zh-hans"):
        assert translation.gettext("World-info entries active") in html
        assert _world_info_cells(html) == ["Bell", translation.gettext("none")]
    assert "World-info entries active" not in html


def test_a_session_without_keyword_world_info_shows_no_entries_column_values(world, users):
    html = client_for(users["qa"]).get(_url(world, "?turns=2")).content.decode()
    assert html.count("<tr data-turn=") == 3 and "data-world-info=" not in html
