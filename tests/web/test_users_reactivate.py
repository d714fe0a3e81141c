"""Reactivating a user on the Users page (web.md, Users and permissions): admins only, CSRF, the role and work kept; a
deactivated admin counts as an admin again once reactivated."""

import pytest
from django.contrib.auth import get_user_model

from studio.user_services import user_role
from tests.web.conftest import client_for, csrf_client_for


def _deactivated(user):
    user.is_active = False
    user.save(update_fields=["is_active"])
    return user


def test_a_deactivated_user_can_be_reactivated_with_their_role(users):
    designer = _deactivated(users["designer"])
    client = client_for(users["admin"])
    page = client.get("/users/")
    assert f'action="/users/{designer.pk}/reactivate/"'.encode() in page.content
    assert f'action="/users/{designer.pk}/deactivate/"'.encode() not in page.content
    assert client.post(f"/users/{designer.pk}/reactivate/").status_code == 302
    designer.refresh_from_db()
    assert designer.is_active and user_role(designer) == "designer"
    page = client.get("/users/")
    assert b'data-user="designer-user" data-role="designer" data-active="true"' in page.content
    assert f'action="/users/{designer.pk}/deactivate/"'.encode() in page.content


def test_an_active_user_shows_no_reactivate_and_a_second_one_is_refused(users):
    client = client_for(users["admin"])
    assert b"/reactivate/" not in client.get("/users/").content
    page = client.post(f"/users/{users['qa'].pk}/reactivate/")
    assert page.status_code == 409 and b"This user is already active." in page.content
    assert client.post("/users/999999/reactivate/").status_code == 404


@pytest.mark.parametrize("role", ["qa", "designer"])
def test_only_admins_reactivate(users, role):
    other = _deactivated(users["qa" if role == "designer" else "designer"])
    assert client_for(users[role]).post(f"/users/{other.pk}/reactivate/").status_code == 403
    assert not get_user_model().objects.get(pk=other.pk).is_active


def test_reactivate_needs_csrf_and_a_post(users):
    designer = _deactivated(users["designer"])
    assert csrf_client_for(users["admin"]).post(f"/users/{designer.pk}/reactivate/").status_code == 403
    assert client_for(users["admin"]).get(f"/users/{designer.pk}/reactivate/").status_code == 405
    assert not get_user_model().objects.get(pk=designer.pk).is_active


def test_a_reactivated_admin_lets_the_other_admin_step_down(users):
    admin = users["admin"]
    second = get_user_model().objects.create_user("second-admin", password="a long pass phrase 42")
    client = client_for(admin)
    client.post(f"/users/{second.pk}/role/", {"role": "admin"})
    assert client.post(f"/users/{second.pk}/deactivate/").status_code == 302
    # with the second admin deactivated, the first is the last one again
    assert client.post(f"/users/{admin.pk}/role/", {"role": "qa"}).status_code == 409
    assert client.post(f"/users/{second.pk}/reactivate/").status_code == 302
    assert client.post(f"/users/{admin.pk}/role/", {"role": "qa"}).status_code == 302
    assert user_role(get_user_model().objects.get(pk=second.pk)) == "admin"
