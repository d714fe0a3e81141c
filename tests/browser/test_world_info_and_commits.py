"""In Chromium (web.md screens 3 and 5, and two small gaps): the preview's world-info log in the request table's
numbering with where each entry landed (English and Chinese), the composer saying what a commit appended without a
page reload, built-in names in one language on the session pages, and the goldens' status lines.
STUDIO_SHOTS=<folder> saves screenshots at 1,400 and 800 px."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy, WorldBook
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def forest(role_users):
    """builtin-st on a forest session: "glade" is in history message 3 (request row #4), "wolf" in the input."""
    admin, designer = role_users["admin"], role_users["designer"]
    preset = strategy_services.preset_import(user=admin, name="Forest preset", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You guard the forest."},
        {"identifier": "worldInfoBefore", "marker": True},
        {"identifier": "worldInfoAfter", "marker": True},
        {"identifier": "chatHistory", "marker": True}]})
    book = strategy_services.worldbook_import(user=admin, name="Forest", data={"scan_depth": 10, "entries": {
        "0": {"uid": 0, "key": ["glade"], "comment": "Glade", "content": "The glade is a refuge.", "position": 0},
        "1": {"uid": 1, "key": ["wolf"], "comment": "Wolves", "content": "Wolves hunt at dusk.", "position": 4,
              "depth": 2},
        "2": {"uid": 2, "key": ["dragon"], "comment": "Dragon", "content": "No dragons here.", "position": 1}}})
    session = services.session_create(user=designer, name="Glade", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      world_books=[WorldBook.objects.get(pk=book.id)],
                                      world_info_activation="keywords", current_input="Any wolf about?")
    for role, text in [("assistant", "Welcome, traveller."), ("user", "Where am I?"),
                       ("assistant", "In the glade, where you are safe."), ("user", "Thank you.")]:
        services.event_append(session=session, role=role, content=text)
    return services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))


def _switch_to_chinese(page):
    page.locator("#lang-select").select_option("zh-hans")
    page.get_by_role("button", name="Switch").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")


def test_the_world_info_log_numbers_messages_as_the_request_table(live_server, page, login_as, forest):
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{forest.pk}/preview/")
    glade = page.locator('li[data-wb-entry="0"]')
    expect(glade).to_contain_text("key “glade” found in message #4")
    expect(glade.locator(".wb-landed")).to_have_text("→ in #1 (before the character description)")
    expect(page.locator('tbody.msg[data-index="4"]')).to_contain_text("In the glade, where you are safe.")
    expect(page.locator('tbody.msg[data-index="1"]')).to_contain_text("The glade is a refuge.")
    wolves = page.locator('li[data-wb-entry="1"]')
    expect(wolves).to_contain_text("key “wolf” found in message #7 (the current input)")
    expect(wolves.locator(".wb-landed")).to_have_text("→ at depth 2: #5")
    page.locator("#wb-title").scroll_into_view_if_needed()
    shoot(page, "world-info-log-en")
    _switch_to_chinese(page)
    expect(page.locator('li[data-wb-entry="0"]')).to_contain_text("在消息 #4中找到关键词“glade”")
    expect(page.locator('li[data-wb-entry="1"] .wb-landed')).to_have_text("→ 深度 2：#5")
    expect(page.locator("p.summary strong")).to_have_text("预设插槽优先（进阶）")
    shoot(page, "world-info-log-zh")


def test_an_htmx_commit_says_what_it_appended(live_server, page, login_as, forest):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{forest.pk}/")
    page.evaluate("window.__noReload = true")
    composer = page.locator("[data-composer]")
    composer.locator("textarea[name=content]").fill("Any wolf about?")
    composer.locator("textarea[name=reply]").fill("Not tonight.")
    composer.get_by_role("button", name="Commit turn").click()
    notice = page.locator("[data-composer-notice]")
    expect(notice).to_have_text("Turn committed: your message and the reply are now history #5 and #7. "
                                "The host also stored 1 record with it: #6.")
    expect(page.locator("li.event#event-7")).to_contain_text("Not tonight.")
    assert page.evaluate("window.__noReload") is True
    shoot(page, "composer-commit-notice")


def test_session_pages_name_a_built_in_in_one_language(live_server, page, login_as, forest):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{forest.pk}/")
    card = page.locator("#apply")
    expect(card).to_contain_text("Preset slots first (advanced)")
    expect(card).not_to_contain_text("预设插槽优先")
    _switch_to_chinese(page)
    expect(card).to_contain_text("预设插槽优先（进阶）")
    expect(card).not_to_contain_text("Preset slots first")
    shoot(page, "session-applied-zh")
    page.goto(f"{live_server.url}/sessions/new/")
    expect(page.locator("[data-strategy-choice]")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text(re.compile(r"\) / Preset|Preset slots first"))
    shoot(page, "session-new-zh")


def test_goldens_say_matches_the_applied_revision_and_the_latest_line(live_server, page, login_as, forest,
                                                                      role_users):
    designer = role_users["designer"]
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                               name="Forest strategy")
    revision, _ = strategy_services.revision_save(strategy=strategy, user=designer, note="first")
    services.strategy_apply(session=forest, strategy=strategy)
    services.golden_approve(session=forest, revision=revision, user=role_users["qa"])
    strategy.refresh_from_db()
    draft = {**strategy.draft, "rules": [{**rule, "enabled": False} if rule["kind"] == "worldbook" else rule
                                         for rule in strategy.draft["rules"]]}
    strategy_services.draft_update(strategy=strategy, user=designer, document=draft, expected_version=strategy.version)
    strategy_services.revision_save(strategy=strategy, user=designer, note="no world book")
    login_as("qa")
    page.goto(f"{live_server.url}/goldens/")
    golden = page.locator("li.golden")
    expect(golden.locator("[data-golden-status]")).to_have_text("Matches the applied revision.")
    expect(golden.locator("[data-golden-latest]")).to_contain_text("the latest revision would change it")
    shoot(page, "goldens-en")
    _switch_to_chinese(page)
    expect(golden.locator("[data-golden-status]")).to_have_text("与当前应用的修订版一致。")
    expect(golden.locator("[data-golden-latest]")).to_contain_text("最新修订版会改变它")
    shoot(page, "goldens-zh")
