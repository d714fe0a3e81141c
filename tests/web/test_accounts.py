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


def test_a_deactivated_user_with_their_password_is_told_the_account_is_deactivated(client, designer):
    designer.is_active = False
    designer.save()
    response = client.post(reverse("login"), {"username": "dana", "password": "correct horse battery"})
    assert response.status_code == 200
    assert "This account has been deactivated" in response.content.decode()
    assert "match" not in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_deactivated_user_with_a_wrong_password_reads_the_ordinary_refusal(client, designer):
    designer.is_active = False
    designer.save()
    response = client.post(reverse("login"), {"username": "dana", "password": "a guess"})
    assert "didn&#x27;t match" in response.content.decode()
    assert "deactivated" not in response.content.decode()


def test_a_throttled_login_never_says_the_account_is_deactivated(client, designer, settings):
    settings.AXES_FAILURE_LIMIT = 2
    designer.is_active = False
    designer.save()
    for _ in range(2):
        client.post(reverse("login"), {"username": "dana", "password": "a guess"}, REMOTE_ADDR="10.0.0.9")
    response = client.post(reverse("login"), {"username": "dana", "password": "correct horse battery"},
                           REMOTE_ADDR="10.0.0.9")
    assert "deactivated" not in response.content.decode()



def test_the_deactivated_account_message_is_in_chinese_on_a_chinese_page(client, designer):
    designer.is_active = False
    designer.save()
    response = client.post(reverse("login"), {"username": "dana", "password": "correct horse battery"},
                           HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "此账号已停用" in response.content.decode()


def test_the_language_is_chosen_before_logging_in():
    """The login page offers the language switch; choosing one needs no login (it only sets the cookie) but still
    needs the CSRF token, and each language is listed by its own name."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/login/?next=/sessions/")
    html = page.content.decode()
    assert 'action="/i18n/setlang/"' in html
    assert '<option value="en" lang="en" selected>English</option>' in html
    assert '<option value="zh-hans" lang="zh-hans">简体中文</option>' in html
    token = client.cookies["csrftoken"].value
    assert client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/accounts/login/"}).status_code == 403
    answer = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/accounts/login/?next=/sessions/"},
                         HTTP_X_CSRFTOKEN=token)
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/?next=/sessions/"
    html = client.get(answer["Location"]).content.decode()
    assert 'lang="zh-hans"' in html and '<option value="en" lang="en">English</option>' in html
    assert client.get("/sessions/")["Location"].startswith("/accounts/login/")  # the rest still needs a login
