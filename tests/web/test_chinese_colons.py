"""Chinese pages write the colon after a label as Chinese typography does, full-width "：": never an ASCII ":"
beside Chinese words, neither in a translation nor where a page joins a translated label to its value."""

import gettext
import html
import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.web.conftest import client_for
from tests.web.text_sessions import make_text_session

pytestmark = pytest.mark.django_db

MO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
CJK = r"[\u3400-\u9fff“”（）]"
# An ASCII colon with Chinese on either side (spaces between allowed). "::" ({{outlet::name}}) and "://" (URLs) are
# markup, never a label's colon.
ASCII_COLON = re.compile(rf"{CJK}[ \t]*:(?![:/])|(?<![:]):[ \t]*{CJK}")


def _catalog() -> dict:
    with MO.open("rb") as stream:
        return gettext.GNUTranslations(stream)._catalog


def test_the_catalogue_is_checked_against_its_source():
    # the compiled catalogue is the one the pages use; its Chinese colon is the full-width one
    assert _catalog()[("between a label and its value\x04: ")] == "："


def test_no_chinese_translation_puts_an_ascii_colon_beside_chinese_words():
    found = []
    for msgid, msgstr in _catalog().items():
        texts = msgstr if isinstance(msgstr, tuple) else (msgstr,)
        for text in texts:
            if msgid and ASCII_COLON.search(text):
                found.append((msgid, text))
    assert found == []


def test_the_pattern_finds_a_label_colon_and_spares_markup():
    assert ASCII_COLON.search("预览: 会话") and ASCII_COLON.search("角色:Ada") and ASCII_COLON.search("名称 :")
    assert not ASCII_COLON.search("由 {{outlet::名字}} 标记放置") and not ASCII_COLON.search("见 https://例子")
    assert not ASCII_COLON.search("预览：会话") and not ASCII_COLON.search('{"name": "sandbox:policy"}')


def _visible_text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    shown = re.sub(r"<[^>]+>", " ", page)  # attributes (title, aria-label) are read below
    attributes = " ".join(re.findall(r'(?:title|aria-label|placeholder)="([^"]*)"', page))
    return html.unescape(shown + " " + attributes)


def _colons_on(client, path):
    answer = client.get(path)
    assert answer.status_code == 200, path
    text = _visible_text(answer.content.decode())
    return [text[max(0, m.start() - 30):m.end() + 30] for m in ASCII_COLON.finditer(text)]


def test_chinese_pages_join_a_label_and_its_value_with_the_full_width_colon(users, world):
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    session = world["session"]
    text_session = make_text_session(users["designer"], users["admin"], name="Ada")
    paths = ["/", f"/sessions/{session.pk}/", f"/sessions/{session.pk}/preview/",
             f"/sessions/{session.pk}/compare/", f"/sessions/{session.pk}/preview/projection/",
             f"/strategies/{world['own'].slug}/edit/", f"/sessions/{text_session.pk}/text/",
             f"/sessions/{text_session.pk}/text/compare/", f"/sessions/{session.pk}/parity/",
             f"/sessions/{session.pk}/preview/across-models/", "/strategies/", "/resources/", "/glossary/",
             f"/resources/presets/{world['preset']}/edit/", "/goldens/", "/sessions/",
             f"/strategies/{world['own'].slug}/revisions/"]
    found = {path: _colons_on(client, path) for path in paths}
    bad = {path: [" ".join(hit.split()) for hit in hits] for path, hits in found.items() if hits}
    assert bad == {}, "\n".join(f"{p}: {h}" for p, hits in bad.items() for h in hits)
    heading = re.search(r"<h1>(.*?)</h1>", client.get(f"/sessions/{session.pk}/preview/").content.decode()).group(1)
    assert heading.startswith("预览：")
