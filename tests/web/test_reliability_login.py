"""Login throttling (django-axes, per user and IP) on the studio's and the admin's login, the four
password validators, and a clear start-up error for a missing production secret (quality.md, Security)."""

import pytest
from axes.models import AccessAttempt
from axes.utils import reset
from django.contrib.auth.password_validation import get_default_password_validators
from django.test import Client

from tests.web.conftest import PASSWORD, make_user
from tests.web.test_production_settings import run_manage


@pytest.fixture(autouse=True)
def fresh_axes():
    reset()  # no attempt of another test counts here, none of ours leaks out
    yield
    reset()


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_the_tenth_wrong_password_is_throttled_then_even_the_right_one(reference_data, url):
    user = make_user("target", "admin")
    client = Client()
    for attempt in range(1, 10):
        response = client.post(url, {"username": user.username, "password": f"wrong {attempt}"})
        assert response.status_code == 200, attempt  # the login page again, with its error
    tenth = client.post(url, {"username": user.username, "password": "wrong 10"})
    assert tenth.status_code == 429
    assert "Wait one hour" in tenth.content.decode()
    right = client.post(url, {"username": user.username, "password": PASSWORD})
    assert right.status_code == 429 and "_auth_user_id" not in client.session


def test_throttling_is_per_user_and_ip(reference_data):
    target, other = make_user("target"), make_user("other")
    client = Client()
    for attempt in range(10):
        client.post("/accounts/login/", {"username": target.username, "password": f"wrong {attempt}"})
    assert AccessAttempt.objects.filter(username="target").exists()
    # Another account from the same address, and the same account from another address, still log in.
    response = client.post("/accounts/login/", {"username": other.username, "password": PASSWORD})
    assert response.status_code == 302
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    response = elsewhere.post("/accounts/login/", {"username": target.username, "password": PASSWORD})
    assert response.status_code == 302


def test_behind_a_trusted_proxy_throttling_is_per_forwarded_address(reference_data, settings):
    """One proxy in front (STUDIO_TRUSTED_PROXIES=1): every login arrives from its address, and the client's is the
    last X-Forwarded-For entry; what the client wrote before it is not trusted."""
    settings.STUDIO_TRUSTED_PROXIES = 1
    target = make_user("target")
    proxy = "10.0.0.1"
    attacker = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.5")
    for attempt in range(10):
        attacker.post("/accounts/login/", {"username": target.username, "password": f"wrong {attempt}"})
    assert attacker.post("/accounts/login/", {"username": target.username, "password": PASSWORD}).status_code == 429
    # The owner, through the same proxy from another address, still logs in; a forged first entry changes nothing.
    owner = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.99")
    assert owner.post("/accounts/login/", {"username": target.username, "password": PASSWORD}).status_code == 302
    forged = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.99, 203.0.113.5")
    assert forged.post("/accounts/login/", {"username": target.username, "password": PASSWORD}).status_code == 429


def test_without_trusted_proxies_a_forwarded_header_is_ignored(reference_data):
    target = make_user("target")
    client = Client(HTTP_X_FORWARDED_FOR="203.0.113.5")
    for attempt in range(10):
        client.post("/accounts/login/", {"username": target.username, "password": f"wrong {attempt}"})
    other_header = Client(HTTP_X_FORWARDED_FOR="203.0.113.6")  # the same REMOTE_ADDR: still the same address
    assert other_header.post("/accounts/login/", {"username": target.username, "password": PASSWORD}).status_code == 429


def test_a_right_password_before_the_limit_resets_the_count(reference_data):
    user = make_user("target")
    client = Client()
    for attempt in range(9):
        client.post("/accounts/login/", {"username": user.username, "password": f"wrong {attempt}"})
    assert client.post("/accounts/login/", {"username": user.username, "password": PASSWORD}).status_code == 302
    assert not AccessAttempt.objects.filter(username="target", failures_since_start__gt=0).exists()


def test_all_four_password_validators_are_on():
    names = {type(validator).__name__ for validator in get_default_password_validators()}
    assert names == {"UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator",
                     "NumericPasswordValidator"}


def test_production_without_a_secret_key_names_the_variable():
    done = run_manage("check", DJANGO_ENV="production", DJANGO_ALLOWED_HOSTS="studio.example.com")
    assert done.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY is not set" in done.stderr
    assert "KeyError" not in done.stderr
