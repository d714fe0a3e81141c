"""Addresses a user can reach by hand answer with a page: the session settings URL opened with GET shows the
session with its settings open; the Django admin tells a logged-in user without admin rights why they cannot enter
(403), and still sends an anonymous visitor to log in."""

import pytest

from preview_app import services
from tests.web.conftest import client_for


@pytest.fixture
def session(users):
    return services.session_create(user=users["designer"], name="Harbour")


def test_the_settings_url_opened_with_get_is_the_session_with_its_settings_open(users, session):
    page = client_for(users["designer"]).get(f"/sessions/{session.pk}/edit/")
    html = page.content.decode()
    assert page.status_code == 200 and "Harbour" in html
    assert '<details class="edit" open>' in html


@pytest.mark.parametrize("role", ["qa", "designer"])
def test_the_admin_tells_a_user_without_admin_rights_why(users, role):
    page = client_for(users[role]).get("/admin/", follow=True)
    html = page.content.decode()
    assert page.status_code == 403 and "The Django admin is for admins" in html
    assert f"You are logged in as {role}-user" in html


def test_the_admin_still_asks_an_anonymous_visitor_to_log_in(client):
    page = client.get("/admin/", follow=True)
    assert page.status_code == 200 and 'name="password"' in page.content.decode()


def test_an_admin_enters_the_admin(users):
    assert client_for(users["admin"]).get("/admin/").status_code == 200
