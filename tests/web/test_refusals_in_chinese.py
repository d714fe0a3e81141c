"""Every refusal for a permission, an owner or a built-in is said in the page's language: a Chinese page never shows
an English refusal sentence (the users page, a template's copy and edit, another user's strategy or session)."""

import html
import re

import pytest

from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for, make_user
from tests.web.test_text_template_editor import _copy, _fields
from tests.web.text_sessions import builtin, make_text_session

pytestmark = pytest.mark.django_db

ENGLISH_REFUSALS = ("may not", "belongs to another user", "is a built-in", "admins only", "copy it to edit")


def _chinese(user):
    client = client_for(user)
    client.cookies["django_language"] = "zh-hans"
    return client


def _said(answer, status, words):
    page = html.unescape(answer.content.decode())
    assert answer.status_code == status, page[:400]
    assert words in page, page
    for english in ENGLISH_REFUSALS:
        assert english not in page, english


def test_the_users_page_refuses_a_designer_in_chinese(users):
    _said(_chinese(users["designer"]).get("/users/"), 403, "designer-user 不能管理用户：只有管理员可以")
    _said(_chinese(users["qa"]).post("/users/add/", {"username": "x", "password": "p", "role": "qa"}), 403,
          "qa-user 不能管理用户")


def test_a_template_copy_and_edit_are_refused_in_chinese(users):
    session = make_text_session(users["designer"], users["admin"])
    chatml = builtin("instruct", "ChatML")
    _said(_chinese(users["qa"]).post(f"/text-templates/{chatml.pk}/copy/"), 403, "qa-user 不能复制文本补全模板")
    digest = strategy_services.text_template_digest(chatml.fields)
    _said(_chinese(users["designer"]).post(f"/text-templates/{chatml.pk}/edit/", {
        "action": "save", "expected": digest, **_fields(chatml, input_sequence="x")}), 409,
        "模板“ChatML”是内置模板：复制后即可编辑")
    copy = _copy(client_for(users["admin"]), chatml, session)
    _said(_chinese(users["designer"]).post(f"/text-templates/{copy.pk}/edit/", {
        "action": "save", "expected": strategy_services.text_template_digest(copy.fields), **_fields(copy)}), 403,
        f"模板“{copy.name}”属于其他用户")


def test_another_designers_strategy_and_session_are_refused_in_chinese(users, world):
    other = make_user("other-designer", "designer")
    client = _chinese(other)
    _said(client.post(f"/strategies/{world['own'].slug}/settings/", {"name": "Mine now"}), 403,
          "策略“Designer's strategy”属于其他用户：你可以查看它，或复制一份自己编辑")
    _said(client.post(f"/sessions/{world['session'].pk}/edit/", {"name": "Mine now"}), 403,
          "会话“Designer's session”属于其他用户")
    assert Strategy.objects.get(pk=world["own"].pk).name == "Designer's strategy"


def test_a_built_in_strategy_and_a_missing_role_are_refused_in_chinese(users):
    answer = _chinese(users["designer"]).post("/strategies/builtin-st/settings/", {"name": "Mine now"})
    page = answer.content.decode()
    assert answer.status_code == 409 and "Built-in" not in page and "built-in" not in page
    refused = _chinese(users["qa"]).post("/strategies/builtin-st/settings/", {"name": "Mine now"})
    message = re.sub(r"<[^>]+>", "", refused.content.decode())
    assert refused.status_code == 403 and "qa-user 不能编辑策略：其身份不允许" in message
    assert "strategies_app.edit_strategy" not in message  # the permission is for API clients, in the detail


def test_a_clash_on_the_users_page_is_said_in_chinese_once(users):
    client = _chinese(users["admin"])
    answer = client.post("/users/add/", {"username": "qa-user", "password": "a long pass phrase 42", "role": "qa"})
    _said(answer, 409, "用户名“qa-user”已被占用：请另选一个。")
    page = html.unescape(answer.content.decode())
    assert page.count("未做任何更改") == 1 and "没有做任何改动" not in page  # "nothing was changed", said once
    _said(client.post(f"/users/{users['admin'].pk}/deactivate/"), 409, "你不能停用自己：可以由另一位管理员停用。")
    _said(client.post(f"/users/{users['qa'].pk}/reactivate/"), 409, "该用户已经是启用状态。")


def test_a_refused_chat_file_is_said_in_chinese_on_the_session_page(users, world):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = _chinese(users["designer"])
    answer = client.post(f"/sessions/{world['session'].pk}/chat/import/",
                         {"file": SimpleUploadedFile("chat.jsonl", b"\xff\xfe not utf-8")})
    page = html.unescape(answer.content.decode())
    assert answer.status_code == 400, page[:400]
    refusal = re.search(r'<p class="refusal" role="alert">(.*?)</p>', page, re.S).group(1)
    assert "输入：应为" in refusal and "expected" not in refusal, refusal


def test_an_empty_user_name_and_a_bad_chat_line_are_said_in_chinese(users, world):
    from django.core.files.uploadedfile import SimpleUploadedFile

    answer = _chinese(users["admin"]).post("/users/add/", {"username": " ", "password": "p", "role": "qa"})
    _said(answer, 400, "username：应为 1 到 150 个字符的用户名")
    answer = _chinese(users["designer"]).post(f"/sessions/{world['session'].pk}/chat/import/",
                                              {"file": SimpleUploadedFile("chat.jsonl", b'{"a": 1}\n[1, 2]\n')})
    page = html.unescape(answer.content.decode())
    assert answer.status_code == 400, page[:400]
    refusal = re.search(r'<p class="refusal" role="alert">(.*?)</p>', page, re.S).group(1)
    assert refusal.startswith("第 2 行：应为") and "expected" not in refusal, refusal
