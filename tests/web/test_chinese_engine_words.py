"""In Chinese, no engine word shows untranslated. Every studio page is rendered in Chinese on the
demo data (a preview with diagnostics and a budget, world info, the editor with locks and placement controls, compare,
goldens, sessions, import, users, resources), and its visible text is searched for the engine's vocabulary, taken
from the engine's own tables so the test grows with them.

What may stay Latin is data: user content (names, prompt and message texts: read from the database, not listed by
hand), ids and codes shown as codes (inside `<code>`, in parentheses right after their translation, "标准后端（native）",
and the engine's ids, `worldbook:2`). The world-info log's words are another change's (its section and the `data-activation` lines are left
out here)."""

from __future__ import annotations

import io
import json
import os
import re
import typing
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import translation

from assembly import catalogue, fragments, native, strategy
from assembly.request import HostSettings
from assembly.sillytavern import budget as st_budget
from assembly.sillytavern import vocabulary as st_vocabulary
from assembly.sillytavern.detect import KIND_NAMES
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from preview_app.result_display import DECISION_WORDS, DELIVERY_WORDS, EVENT_KIND_WORDS, HISTORY_STATUS_WORDS
from strategies_app.models import Character, Persona, Preset, PromptEntry, Strategy, WorldBook, WorldBookEntry
from studio.wording import ENGINE_WORDS, LOCK_REASONS, engine_word
from tests.web.conftest import client_for


def engine_vocabulary() -> set[str]:
    """Every word of the engine's vocabularies that a page may show: roles, lifetimes, deliveries, backends,
    placements, regions, trusts, module kinds, priority stages, layout words, history statuses, event kinds, position
    decisions, lock reasons, SillyTavern positions and budget reasons."""
    tables = [strategy.ROLES, strategy.LIFETIMES, strategy.DELIVERIES, strategy.BACKENDS, strategy.PLACEMENTS,
              strategy.MODULE_KINDS, strategy.PRIORITY_STAGES, strategy.LAYOUT_SOURCES, strategy.LAYOUT_IDENTITIES,
              strategy.LAYOUT_FALLBACKS, strategy.SIDES, strategy.POSITION_PLACEMENTS, strategy.INPUT_MODES,
              native.REGIONS, fragments.TRUSTS, fragments.LIFETIMES, catalogue.CONTEXT_CONTROL_KINDS,
              HISTORY_STATUS_WORDS, EVENT_KIND_WORDS, DECISION_WORDS, DELIVERY_WORDS, LOCK_REASONS,
              typing.get_args(st_vocabulary.WorldPosition), typing.get_args(st_budget.DropReason),
              st_vocabulary.GENERATION_TYPES,
              typing.get_args(HostSettings.model_fields["system_prompt_update"].annotation),
              ("independent", "mixed", "empty")]  # placement controls (`PlacementControl.control`)
    words = set()
    for table in tables:
        for value in table:
            words.update(part for part in re.split(r"[:]", str(value)) if part)
    return {word for word in words if len(word) > 2}


SKIPPED = {"script", "style", "code", "pre", "textarea", "kbd", "samp"}
VOID = {"br", "img", "input", "meta", "link", "hr", "col", "source", "wbr", "area", "base", "embed", "track"}


class VisibleText(HTMLParser):
    """The text a reader sees: no scripts, no code, message bodies (`pre`) or their excerpts (`.excerpt`), no
    attributes; the world-info log (`aria-labelledby="wb-title"`, `data-activation`) left to its own change."""

    def __init__(self):
        super().__init__()
        self.stack: list[bool] = []  # per open element: does it hide its text
        self.lines: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        names = dict(attrs)
        hidden = (tag in SKIPPED or "excerpt" in (names.get("class") or "").split()  # content, cut short
                  or names.get("lang") == "en"  # an English message of the service, marked as such
                  or names.get("aria-labelledby") == "wb-title" or "data-activation" in names)
        self.stack.append(hidden or (bool(self.stack) and self.stack[-1]))
        self._tags = getattr(self, "_tags", [])
        self._tags.append(tag)

    def handle_endtag(self, tag):
        tags = getattr(self, "_tags", [])
        if tag not in tags:
            return
        while tags:
            self.stack.pop()
            if tags.pop() == tag:
                break

    def handle_data(self, data):
        if data.strip() and not (self.stack and self.stack[-1]):
            self.lines.append(" ".join(data.split()))


def data_texts() -> list[str]:
    """User content and names the pages show: kept Latin, as written (longest first, so a name inside a longer
    text goes with it)."""
    texts: set[str] = set()
    for model, fields in ((Session, ("name",)), (Strategy, ("name", "slug")), (Preset, ("name",)),
                          (PromptEntry, ("name", "identifier", "content")), (Character, ("name",)),
                          (Persona, ("name",)), (WorldBook, ("name",)), (WorldBookEntry, ("comment", "content")),
                          (SessionEvent, ("content",)), (get_user_model(), ("username",))):
        for row in model.objects.values_list(*fields):
            texts.update(str(value) for value in row if value)
    return sorted((t for t in texts if len(t) > 1), key=len, reverse=True)


CODE_IN_PARENTHESES = re.compile(r"[（(][A-Za-z0-9_.:/@ -]+[）)]")  # a code right after its translation
# {{macro}}, and a JSON example with the note on its fields that follows it: code
MACRO_OR_JSON = re.compile(r"\{\{[^{}]*\}\}|\[\{.*?\}\](?:（[^）]*）)?")
ENGINE_ID = re.compile(r"[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)+")  # a node or part id ("worldbook:2"): a code
WORD = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9](?![A-Za-z0-9_])")


def untranslated(html: str, vocabulary: set[str], data: list[str]) -> list[tuple[str, str]]:
    """(engine word, the line it stands in) for every engine word left in the visible text."""
    parser = VisibleText()
    parser.feed(html)
    found = []
    for number, line in enumerate(parser.lines):
        rest = ENGINE_ID.sub(" ", CODE_IN_PARENTHESES.sub(" ", MACRO_OR_JSON.sub(" ", line)))
        for text in data:
            if text in rest:
                rest = rest.replace(text, " ")
        where = " / ".join(parser.lines[max(0, number - 2):number + 1])  # with what stands before it
        found += [(word, where) for word in WORD.findall(rest) if word in vocabulary]
    return found


def demo_pages() -> list[str]:
    urls = ["/", "/sessions/", "/sessions/new/", "/strategies/", "/goldens/", "/resources/",
            "/resources/import/", "/users/"]
    for session in Session.objects.filter(completion="text"):  # a text session's pages are its text pages
        urls += [f"/sessions/{session.pk}/{page}" for page in ("", "text/", "text/compare/", "text/parity/")]
    for session in Session.objects.filter(completion="chat"):
        urls += [f"/sessions/{session.pk}/{page}" for page in (
            "", "preview/", "compare/", "parity/", "preview/?context_window=200&reserve_output=50",  # budget over
            "preview/?generation=continue", "preview/?turns=3", "compare/?a=applied&b=builtin-native-roles")]
    urls += [f"/goldens/{golden.pk}/latest/" for golden in GoldenSnapshot.objects.all()]
    for item in Strategy.objects.all():
        urls += [f"/strategies/{item.slug}/edit/", f"/strategies/{item.slug}/revisions/"]
    return urls


@pytest.fixture
def chinese_demo(db, reference_data):
    call_command("seed_demo", stdout=io.StringIO())
    assert GoldenSnapshot.objects.exists() and Session.objects.count() >= 2
    admin = client_for(get_user_model().objects.get(username="admin"))
    admin.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    return admin


def test_the_vocabulary_comes_from_the_engine():
    words = engine_vocabulary()
    assert {"appended", "operator", "pre-step", "request-only", "native-slots", "preserve", "snapshot",
            "before-input", "independent"} <= words


def _pages(client):
    """(name, response) for every page: the GET pages, then the import's dry run and a refused import."""
    for url in demo_pages():
        yield url, client.get(url)
    card = json.dumps({"spec": "chara_card_v2", "data": {"name": "Ivo", "first_mes": "Hi.", "character_book": {
        "entries": [{"id": 1, "keys": ["x"], "content": "y", "enabled": True}]}}}).encode()
    yield "import dry run", client.post("/resources/import/", {
        "kind": "auto", "dry_run": "1", "file": SimpleUploadedFile("ivo.json", card)})
    yield "import refused", client.post("/resources/import/", {
        "kind": "persona", "dry_run": "1", "file": SimpleUploadedFile("ivo.json", card)})


def test_no_engine_word_stays_english_on_any_page(chinese_demo):
    vocabulary, data = engine_vocabulary(), data_texts()
    report = {}
    for url, page in _pages(chinese_demo):
        assert page.status_code == (400 if url == "import refused" else 200), url
        assert 'lang="zh-hans"' in page.content.decode()
        found = untranslated(page.content.decode(), vocabulary, data)
        if found:
            report[url] = sorted(set(found))
    if os.environ.get("ENGINE_WORDS_REPORT"):
        with open(os.environ["ENGINE_WORDS_REPORT"], "w") as out:
            for url, found in report.items():
                out.write(f"== {url}\n" + "".join(f"  {word}\t{line}\n" for word, line in found))
    assert not report, report


@pytest.mark.parametrize(("vocabulary", "codes"), [
    ("role", strategy.ROLES + fragments.ROLES), ("delivery", strategy.DELIVERIES), ("lifetime", strategy.LIFETIMES),
    ("lifetime", fragments.LIFETIMES), ("module", strategy.MODULE_KINDS), ("placement", strategy.PLACEMENTS),
    ("backend", strategy.BACKENDS), ("layout_source", strategy.LAYOUT_SOURCES),
    ("layout_identity", strategy.LAYOUT_IDENTITIES), ("layout_fallback", strategy.LAYOUT_FALLBACKS),
    ("position_placement", strategy.POSITION_PLACEMENTS), ("side", strategy.SIDES), ("trust", fragments.TRUSTS),
    ("region", tuple(region.split(":")[0] for region in native.REGIONS)),
    ("history_status", tuple(HISTORY_STATUS_WORDS)), ("record_kind", tuple(EVENT_KIND_WORDS)),
    ("resource_kind", tuple(KIND_NAMES)),
    ("generation", st_vocabulary.GENERATION_TYPES),
    ("system_prompt_update", typing.get_args(HostSettings.model_fields["system_prompt_update"].annotation)),
])
def test_every_engine_code_has_a_word_in_both_languages(vocabulary, codes):
    missing = [code for code in codes if code not in ENGINE_WORDS[vocabulary]]
    assert not missing, f"{vocabulary}: no word for {missing}"
    with translation.override("zh-hans"):
        english_left = [code for code in codes if not re.search(r"[\u4e00-\u9fff]", engine_word(vocabulary, code))]
    assert not english_left, f"{vocabulary}: no Chinese for {english_left}"


def test_a_region_with_its_delivery_and_an_unknown_code():
    with translation.override("zh-hans"):
        assert engine_word("region", "after-input:pre-step") == "输入之后 · 预步骤消息"
        assert engine_word("role", "narrator") == "narrator"  # not an engine code: shown as it is
        assert engine_word("role", None) == ""
    with translation.override("en"):
        assert engine_word("role", "system") == "system"  # English keeps the code's own word
