"""The login page in a real Chromium: the first thing every user sees."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_log_in_through_the_form_and_reach_home(live_server, page):
    get_user_model().objects.create_user("quinn", password="a long enough password")
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.get_by_label("Username").fill("quinn")
    page.get_by_label("Password").fill("a long enough password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_text("Welcome, quinn.").is_visible()


def test_wrong_password_is_reported(live_server, page):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("nobody")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    assert page.get_by_role("alert").is_visible()


def test_each_role_logs_in(live_server, page, login_as):
    for role in ("qa", "designer", "admin"):
        user = login_as(role)
        assert page.locator(".who").inner_text() == user.username
        page.get_by_role("button", name="Log out").click()
