"""The Users page (web.md, Users and permissions): admins manage users and roles in the studio; everyone else gets 403;
CSRF on every write; you cannot deactivate yourself and the last admin cannot be demoted. The home page says per role
what that role can do."""

import html

import pytest
from django.contrib.auth import get_user_model

from studio.user_services import user_role
from tests.web.conftest import client_for, csrf_client_for


def test_admins_see_users_with_roles(users):
    page = client_for(users["admin"]).get("/users/")
    assert page.status_code == 200
    for role in ("qa", "designer", "admin"):
        assert f'data-user="{role}-user" data-role="{role}" data-active="true"'.encode() in page.content
    assert b'href="/users/"' in page.content  # the nav link


@pytest.mark.parametrize("role", ["qa", "designer"])
def test_non_admins_get_403_everywhere(users, role):
    client = client_for(users[role])
    assert client.get("/users/").status_code == 403
    assert client.post("/users/add/", {"username": "x", "password": "a long pass phrase 42", "role": "admin"}
                       ).status_code == 403
    assert client.post(f"/users/{users['admin'].pk}/deactivate/").status_code == 403
    assert get_user_model().objects.get(pk=users["admin"].pk).is_active
    assert not get_user_model().objects.filter(username="x").exists()
    assert b'href="/users/"' not in client.get("/").content


def test_add_change_role_and_deactivate(users):
    client = client_for(users["admin"])
    assert client.post("/users/add/", {"username": "nia", "password": "a long pass phrase 42",
                                       "role": "designer"}).status_code == 302
    nia = get_user_model().objects.get(username="nia")
    assert user_role(nia) == "designer" and nia.check_password("a long pass phrase 42") and not nia.is_staff
    assert client.post(f"/users/{nia.pk}/role/", {"role": "admin"}).status_code == 302
    nia.refresh_from_db()
    assert user_role(nia) == "admin" and nia.is_staff
    assert client.post(f"/users/{nia.pk}/deactivate/").status_code == 302
    nia.refresh_from_db()
    assert not nia.is_active


def test_bad_input_names_the_field_and_stores_nothing(users):
    client = client_for(users["admin"])
    page = client.post("/users/add/", {"username": "zed", "password": "a long pass phrase 42", "role": "boss"})
    assert page.status_code == 400 and b"role: expected one of qa, designer, admin" in page.content
    page = client.post("/users/add/", {"username": "qa-user", "password": "a long pass phrase 42", "role": "qa"})
    assert page.status_code == 409 and "The user name “qa-user” is taken" in page.content.decode()
    assert not get_user_model().objects.filter(username="zed").exists()
    assert client.post("/users/999999/role/", {"role": "qa"}).status_code == 404


def test_no_self_deactivation_and_the_last_admin_stays(users):
    admin = users["admin"]
    client = client_for(admin)
    page = client.post(f"/users/{admin.pk}/deactivate/")
    assert page.status_code == 409 and b"cannot deactivate yourself" in page.content
    page = client.post(f"/users/{admin.pk}/role/", {"role": "qa"})
    assert page.status_code == 409 and b"This is the last active admin: make another user admin" in page.content
    add_form = page.content.decode().split('action="/users/add/"', 1)[1].split("</form>", 1)[0]
    assert '<option value="designer" selected' in add_form  # the refused change does not fill the add form
    assert b"Detail" not in page.content  # said once, in the page's words
    admin.refresh_from_db()
    assert admin.is_active and user_role(admin) == "admin"


def test_writes_need_csrf(users):
    client = csrf_client_for(users["admin"])
    assert client.post("/users/add/", {"username": "c", "password": "a long pass phrase 42",
                                       "role": "qa"}).status_code == 403
    assert not get_user_model().objects.filter(username="c").exists()


@pytest.mark.parametrize(("role", "words"), [("admin", b"As an admin"), ("designer", b"As a designer"),
                                             ("qa", b"As QA")])
def test_the_home_page_says_what_each_role_can_do(users, role, words):
    page = client_for(users[role]).get("/")
    assert f'data-role-help="{role}"'.encode() in page.content and words in page.content


@pytest.mark.parametrize(("language", "approves"), [("en", "answer as a golden snapshot"),
                                                   ("zh-hans", "并把会话的答案批准为金标")])
def test_the_qa_home_page_says_qa_approves_goldens(users, language, approves):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    page = client.get("/").content.decode()
    assert approves in page
    assert "you change nothing" not in page and "你不能做任何修改" not in page


def test_the_favicon_is_linked(users):
    assert b'rel="icon" href="/static/favicon.svg"' in client_for(users["qa"]).get("/").content


def test_the_admin_user_list_has_a_role_column(users):
    page = client_for(users["admin"]).get("/admin/auth/user/")
    assert page.status_code == 200 and b"column-studio_role" in page.content


def test_the_chinese_users_page_calls_a_users_role_shenfen_never_juese(users):
    # 角色 is a character card's character in Chinese; a user's (and a message's) role is 身份 on every page.
    client = client_for(users["admin"])
    client.cookies["django_language"] = "zh-hans"
    html = client.get("/users/").content.decode()
    assert "更改身份" in html and "<th scope=\"col\">身份</th>" in html and "<th scope=\"col\">操作</th>" in html
    assert "角色" not in html


def test_every_write_says_what_it_did(users):
    client = client_for(users["admin"])
    page = client.post("/users/add/", {"username": "ona", "password": "a long pass phrase 42", "role": "qa"},
                       follow=True)
    assert "Added ona as QA." in page.content.decode()
    ona = get_user_model().objects.get(username="ona")
    page = client.post(f"/users/{ona.pk}/role/", {"role": "designer"}, follow=True)
    assert "ona is now designer." in page.content.decode()
    page = client.post(f"/users/{ona.pk}/deactivate/", follow=True)
    assert "Deactivated ona: they can no longer log in." in page.content.decode()
    page = client.post(f"/users/{ona.pk}/reactivate/", follow=True)
    assert "Reactivated ona: they can log in again." in page.content.decode()


def test_a_refusal_explains_itself_in_the_pages_language(users):
    client = client_for(users["admin"])
    page = client.post("/users/add/", {"username": "qa-user", "password": "a long pass phrase 42", "role": "qa"})
    text = page.content.decode()
    assert page.status_code == 409 and "The user name “qa-user” is taken: pick another one." in text
    page = client.post("/users/add/", {"username": "qa-user", "password": "a long pass phrase 42", "role": "qa"},
                       HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "用户名“qa-user”已被占用" in page.content.decode()
    page = client.post("/users/add/", {"username": "", "password": "x", "role": "qa"})  # no situation: the code's
    assert page.status_code == 400
    assert "A field of the form is missing or has the wrong kind of value" in page.content.decode()


def test_a_weak_password_is_refused_in_one_language(users):
    client = client_for(users["admin"])
    client.cookies["django_language"] = "zh-hans"
    page = client.post("/users/add/", {"username": "ona", "password": "123", "role": "qa"})
    text = html.unescape(page.content.decode())
    assert page.status_code == 400 and not get_user_model().objects.filter(username="ona").exists()
    assert "密码长度太短。密码必须包含至少 8 个字符。" in text and "too short" not in text


@pytest.mark.parametrize("name", ["QA-User", "new user", "<b>x</b>"])
def test_a_user_name_another_differs_from_only_in_case_or_the_models_rule_refuses_is_not_added(users, name):
    client = client_for(users["admin"])
    before = get_user_model().objects.count()
    page = client.post("/users/add/", {"username": name, "password": "a long pass phrase 42", "role": "qa"})
    text = html.unescape(page.content.decode())
    assert get_user_model().objects.count() == before
    if name == "QA-User":  # "qa-user" holds it
        assert page.status_code == 409 and "The user name “qa-user” is taken" in text
    else:
        assert page.status_code == 400 and "letters, digits and @ . + - _ only" in text
