"""A page address that takes only a form's POST answers a visit with a refusal page in words (Django's own 405 is
an empty page); /api/ keeps its error JSON."""

import re

import pytest

from preview_app import services as session_services
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("language", "words"), [("en", "not a visit"), ("zh-hans", "不能直接打开")])
def test_visiting_a_form_only_address_says_what_it_takes(users, language, words):
    session = session_services.session_create(user=users["designer"], name="Lamp", current_input="Hello?")
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    for path in (f"/sessions/{session.pk}/copy/", f"/sessions/{session.pk}/events/", "/strategies/new/"):
        answer = client.get(path)
        page = answer.content.decode()
        assert answer.status_code == 405 and answer["Allow"] == "POST", path
        assert 'id="refusal"' in page and words in page and "POST" in page, (path, page)
        assert "METHOD_NOT_ALLOWED" not in page  # the code stays out of the words


def test_the_api_still_answers_405_as_error_json(users):
    answer = client_for(users["designer"]).delete("/api/strategies")
    assert answer.status_code == 405 and answer.json()["code"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(("language", "title"), [("en", "Not allowed"), ("zh-hans", "不允许")])
def test_a_refused_page_is_titled_in_words_not_its_code(users, language, title):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    answer = client.get("/sessions/new/")  # qa may not create sessions
    head = answer.content.decode().split("</title>", 1)[0]
    assert answer.status_code == 403 and f"<title>{title} · " in head and "FORBIDDEN" not in head


@pytest.mark.parametrize(("language", "words"), [
    ("en", "qa-user may not create sessions: their role does not allow it"), ("zh-hans", "qa-user 不能创建会话：其身份不允许")])
def test_a_refusal_for_a_missing_permission_says_the_action_in_words(users, language, words):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    page = client.get("/sessions/new/").content.decode()
    message = re.search(r'<p class="refusal-message">(.*?)</p>', page, re.S).group(1)
    assert words in message and "preview_app." not in message  # no permission codename


@pytest.mark.parametrize(("language", "words"), [("en", "Nothing is at this address"), ("zh-hans", "此地址下没有内容")])
def test_an_address_without_a_page_answers_in_the_studios_frame(users, language, words):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    for path in ("/no-such-page/", "/sessions/1/no-such-view/"):
        answer = client.get(path)
        page = answer.content.decode()
        assert answer.status_code == 404, path
        assert 'id="not-found"' in page and words in page and 'class="topbar"' in page, (path, page[:300])
    assert client.get("/api/sessions/999999/preview").json()["code"] == "NOT_FOUND"  # the API keeps its JSON


@pytest.mark.parametrize(("language", "words"), [("en", "Its security token is missing or out of date"),
                                                 ("zh-hans", "表单的安全令牌缺失或已过期")])
def test_a_form_without_its_csrf_token_is_refused_in_words(users, language, words):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(users["designer"])
    client.cookies["django_language"] = language
    answer = client.post("/sessions/new/", {"name": "Lamp"})
    page = answer.content.decode()
    assert answer.status_code == 403 and "data-csrf-failure" in page and words in page
    assert "CSRF verification failed" not in page


def test_the_server_error_page_renders_without_a_context():
    from django.test import RequestFactory
    from django.views.defaults import server_error

    answer = server_error(RequestFactory().get("/"))
    page = answer.content.decode()
    assert answer.status_code == 500 and "data-server-error" in page and "nothing was stored" in page


@pytest.mark.parametrize(("language", "title", "line"), [
    ("en", "Not found (404)", "session 999999 does not exist"),
    ("zh-hans", "(404)", "会话 999999 不存在"),
])
def test_a_missing_session_on_a_text_page_says_not_found_and_no_form_words(users, language, title, line):
    page = client_for(users["qa"]).get("/sessions/999999/text/", HTTP_ACCEPT_LANGUAGE=language)
    html = page.content.decode()
    assert page.status_code == 404 and title in html and line in html
    assert "Nothing was stored" not in html and "没有保存任何内容" not in html
