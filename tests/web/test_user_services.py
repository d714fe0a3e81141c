"""Users' roles and deactivation (web.md "Users and permissions"): the role decides what a user may do, a superuser
flag included; the last admin (by group or superuser) stays; a deactivated user's sessions end for good."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.web.conftest import PASSWORD, client_for

pytestmark = pytest.mark.django_db


def _superuser(name="root"):
    return get_user_model().objects.create_superuser(name, password=PASSWORD)


@pytest.mark.parametrize("role", ["qa", "designer"])
def test_a_superuser_given_a_lesser_role_loses_the_superuser_flag(users, role):
    root = _superuser()
    assert client_for(users["admin"]).post(f"/users/{root.pk}/role/", {"role": role}).status_code == 302
    root.refresh_from_db()
    assert not root.is_superuser and not root.is_staff
    assert client_for(root).get("/users/").status_code == 403  # what the role says, nothing more
    assert client_for(root).post("/api/strategies/builtin-st/copy", {"name": "x"},
                                 content_type="application/json").status_code == (403 if role == "qa" else 201)


def test_a_superuser_counts_as_an_admin_for_the_last_admin_rule(users):
    root = _superuser()
    admin = users["admin"]
    # with the superuser there, the admin-group user is not the last admin
    assert client_for(root).post(f"/users/{admin.pk}/role/", {"role": "qa"}).status_code == 302
    # now the superuser is the last one: neither demoted nor deactivated
    refused = client_for(root).post(f"/users/{root.pk}/role/", {"role": "designer"})
    assert refused.status_code == 409 and b"This is the last active admin" in refused.content
    root.refresh_from_db()
    assert root.is_superuser
    assert client_for(root).post(f"/users/{root.pk}/deactivate/").status_code == 409  # (and not oneself)


def _logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_a_deactivated_user_stays_logged_out_after_a_reactivation(users):
    designer = users["designer"]
    old = _logged_in(designer)
    assert old.get("/api/sessions").status_code == 200
    admin = client_for(users["admin"])
    assert admin.post(f"/users/{designer.pk}/deactivate/").status_code == 302
    assert old.get("/api/sessions").status_code == 401
    assert admin.post(f"/users/{designer.pk}/reactivate/").status_code == 302
    assert old.get("/api/sessions").status_code == 401  # the old session cookie never works again
    assert old.get("/sessions/").status_code == 302  # to the login page
    assert _logged_in(designer).get("/api/sessions").status_code == 200  # a fresh login does


def test_deactivation_ends_only_that_users_sessions(users):
    designer, qa = _logged_in(users["designer"]), _logged_in(users["qa"])
    client_for(users["admin"]).post(f"/users/{users['designer'].pk}/deactivate/")
    assert designer.get("/api/sessions").status_code == 401
    assert qa.get("/api/sessions").status_code == 200


def test_deactivating_in_the_django_admin_ends_the_sessions_too(users):
    from django.contrib import admin
    from django.test import RequestFactory

    designer = users["designer"]
    old = _logged_in(designer)
    model_admin = admin.site._registry[get_user_model()]
    designer.is_active = False

    class Changed:
        changed_data = ["is_active"]

    model_admin.save_model(RequestFactory().post("/admin/"), designer, Changed(), change=True)
    designer.is_active = True
    designer.save()
    assert old.get("/api/sessions").status_code == 401
