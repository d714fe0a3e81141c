"""Login is required everywhere but the login page (quality.md, Security)."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def designer():
    return get_user_model().objects.create_user("dana", password="correct horse battery")


def test_login_page_renders_for_anonymous_users(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content and b"csrfmiddlewaretoken" in response.content


@pytest.mark.parametrize(("url", "login_url"), [("/", "/accounts/login/"), ("/admin/", "/admin/login/")])
def test_anonymous_users_are_sent_to_login(client, url, login_url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(login_url)


def test_login_then_home_then_logout(client, designer):
    response = client.post(reverse("login"), {"username": "dana", "password": "correct horse battery"})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    home = client.get(reverse("home"))
    assert home.status_code == 200 and b"dana" in home.content
    client.post(reverse("logout"))
    assert client.get(reverse("home")).status_code == 302


def test_wrong_password_shows_an_error_and_no_session(client, designer):
    response = client.post(reverse("login"), {"username": "dana", "password": "nope"})
    assert response.status_code == 200
    assert b"role=\"alert\"" in response.content and b"match" in response.content
    assert "_auth_user_id" not in client.session


def test_logout_needs_post_with_csrf():
    from django.test import Client

    csrf_client = Client(enforce_csrf_checks=True)
    get_user_model().objects.create_user("erin", password="another long password")
    csrf_client.login(username="erin", password="another long password")
    assert csrf_client.post(reverse("logout")).status_code == 403
    assert csrf_client.get(reverse("logout")).status_code == 405
