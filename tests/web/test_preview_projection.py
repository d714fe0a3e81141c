"""The turn projection's own route (issue 19 point 3): login first, the session's read policy, refusals with their
status on the page (200 with the refusal inside for the htmx fragment, which htmx would not swap otherwise)."""

import pytest

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
