"""The preview and compare pages group thousands with commas in both languages, as the folded-row line does
(Django's Chinese number format groups by nothing, so `floatformat:"0g"` wrote "109025" there), and the compare
table's roles, deliveries and history entries are in the page's language."""

import re

import pytest

from tests.web.big_sessions import big_session
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db

SIZE = 1_200  # 1,203 request messages: enough for a separator, quick to build


@pytest.fixture
def chat(users):
    return big_session(users["designer"], size=SIZE)


def _page(client, url, language):
    client.cookies["django_language"] = language
    return client.get(url).content.decode()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_preview_groups_its_counts_and_totals(users, chat, language):
    client = client_for(users["qa"])
    html = _page(client, f"/sessions/{chat.pk}/preview/", language)
    total = int(re.search(r'data-message-tokens="(\d+)"', html).group(1))
    assert total > 1000
    head = html[html.index("preview-head") if "preview-head" in html else 0:html.index('class="preview-layout"')]
    words = {"en": "1,203 messages", "zh-hans": "1,203 条消息"}[language]
    assert words in head and f"{total:,}" in head and f"{total} " not in head
    assert f'<td class="num">{total:,}</td>' in html  # the module table's total
    # the kept-in-history line: 1,200 messages
    assert re.search(r'data-history-total="native">.*?1,200', html, re.S)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_compare_sides_group_their_counts_and_totals(users, chat, language):
    html = _page(client_for(users["qa"]), f"/sessions/{chat.pk}/compare/?a=applied&b=builtin-native-roles", language)
    assert html.count({"en": "1,203 messages", "zh-hans": "1,203 条消息"}[language]) == 1  # side A
    assert not re.search(r"\d{4,} (tokens|个 token)", html)


def test_the_compare_table_says_roles_deliveries_and_history_entries_in_chinese(users, chat):
    html = _page(client_for(users["qa"]), f"/sessions/{chat.pk}/compare/?a=applied&b=builtin-native-roles",
                 "zh-hans")
    lines = re.findall(r'<div class="msg-line">(.*?)</div>', html, re.S)
    assert lines
    words = " ".join(re.sub(r"<[^>]+>", " ", line) for line in lines)
    for english in ("assistant", "user", "system", "history", "native", "appended", "request-only"):
        assert not re.search(rf"(?<![\w-]){english}(?![\w-])", words), english
    assert "助手" in words and "已在历史中" in words  # the assistant role, a native history entry


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_sessions_list_and_the_session_page_group_their_counts(users, chat, language):
    client = client_for(users["qa"])
    listing = _page(client, "/sessions/", language)
    row = re.search(rf'<tr data-session-id="{chat.pk}">.*?</tr>', listing, re.S).group(0)
    assert '<td class="num">1,200</td>' in row and ">1200<" not in row
    session = _page(client, f"/sessions/{chat.pk}/", language)
    assert re.search(r'id="history-title">[^<]*<span class="muted">\(1,200\)</span>', session)
    assert "1200" not in re.sub(r'"[^"]*"', '""', session.split('id="history-title"', 1)[1].split("</p>", 1)[0])


def test_the_editor_groups_its_row_tokens(users, chat):
    from strategies_app import services as strategy_services
    from strategies_app.models import Strategy

    designer = users["designer"]
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                          name="Long chat strategy")
    html = _page(client_for(designer), f"/strategies/{own.slug}/edit/?session={chat.pk}", "zh-hans")
    tokens = [int(t) for t in re.findall(r'data-tokens="(\d+)"', html)]
    big = [t for t in tokens if t >= 1000]
    assert big, "a 1,200-message chat has a row of a thousand tokens or more"
    shown = re.findall(r'<span class="row-tokens"[^>]*>([\d,]+) ', html)
    assert shown and all("," in s for s in shown if len(s.replace(",", "")) >= 4)
    assert f"{big[0]:,}" in shown
