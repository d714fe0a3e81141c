"""Chinese pages space words as Chinese text does: no space between Chinese words, a word the studio fills in
included (the engine's words, which read in Chinese on a Chinese page), and one space on each side of a Latin word
beside Chinese (SillyTavern, token), as the rest of the catalogue writes it."""

import gettext
import re
from pathlib import Path

from django.conf import settings

MO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
CJK = "[\u3400-\u9fff]"
# placeholders the studio fills with its own words in the page's language: a lock's owner (a module kind,
# studio.wording.engine_word), the strategy's placement, what a host-settings list holds (preview_app.forms); a
# user's name (the session's owner) is no such word
CHINESE_FILLED = ("owner", "placement", "item")
FILLED_WITH_ENGINE_WORDS = re.compile(r"held by .*%\(owner\)s|In %\(placement\)s|JSON list of %\(item\)s")
SPACED_FILL = re.compile(rf"{CJK} %\((?:{'|'.join(CHINESE_FILLED)})\)s|%\((?:{'|'.join(CHINESE_FILLED)})\)s {CJK}")
LATIN_BESIDE_CHINESE = re.compile(rf"{CJK}[A-Za-z]|[A-Za-z]{CJK}")
NOT_WORDS = re.compile(r"<[^>]+>|%\(\w+\)s|\{\{[^}]*\}\}|`[^`]*`")  # markup, placeholders, macros, code


def _translations() -> list[tuple[str, str]]:
    with MO.open("rb") as stream:
        catalog = gettext.GNUTranslations(stream)._catalog
    return [(str(msgid), text) for msgid, msgstr in catalog.items() if msgid
            for text in (msgstr if isinstance(msgstr, tuple) else (msgstr,))]


def test_an_engine_word_the_studio_fills_in_sits_against_chinese_without_spaces():
    filled = [(msgid, text) for msgid, text in _translations() if FILLED_WITH_ENGINE_WORDS.search(msgid)]
    assert len(filled) >= 6  # the lock labels, the placement sentences, the host lists' refusal
    assert [(msgid, text) for msgid, text in filled if SPACED_FILL.search(text)] == []


def test_a_latin_word_beside_chinese_takes_a_space_on_each_side():
    assert [(msgid, text) for msgid, text in _translations()
            if LATIN_BESIDE_CHINESE.search(NOT_WORDS.sub(" ", text))] == []


def test_the_patterns_find_what_they_look_for():
    assert SPACED_FILL.search("由 %(owner)s 的") and SPACED_FILL.search("在 %(placement)s 中")
    assert not SPACED_FILL.search("由%(owner)s的") and not SPACED_FILL.search("要求深度 %(depth)s")
    assert LATIN_BESIDE_CHINESE.search("此会话中的token") and LATIN_BESIDE_CHINESE.search("取自SillyTavern 预设")
    assert not LATIN_BESIDE_CHINESE.search(NOT_WORDS.sub(" ", "由预设的 <code>worldInfoBefore</code> 插槽持有"))
