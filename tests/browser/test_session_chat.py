"""The session page as a chat in Chromium (web.md screen 7): a new designer creates a session (builtin-st by default)
and chats five turns from the session page alone, previewing each with Enter, without a page reload; the same works
without JavaScript; the page in Chinese. STUDIO_SHOTS=<folder> saves screenshots at 1,400 and 800 px."""

import re

import pytest
from playwright.sync_api import expect

from preview_app.models import Session, SessionEvent
from strategies_app import services as strategy_services
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lamp_preset(role_users):
    return strategy_services.preset_import(user=role_users["admin"], data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}, name="Lamp preset")


def _create(page, live_server, name):
    page.goto(f"{live_server.url}/sessions/new/")
    expect(page.locator('input[name="strategy"][value="builtin-st"]')).to_be_checked()
    page.locator("#id_name").fill(name)
    page.locator("#id_preset").select_option(label="Lamp preset")
    page.get_by_role("button", name="Create session").click()
    page.wait_for_url(re.compile(r".*/sessions/\d+/$"))
    return Session.objects.get(name=name)


def test_a_new_designer_chats_five_turns_from_the_session_page(live_server, page, login_as, lamp_preset):
    login_as("designer")
    session = _create(page, live_server, "Five turns")
    assert session.applied_strategy.slug == "builtin-st"
    page.evaluate("window.__noReload = true")
    composer = page.locator("[data-composer]")
    for turn in range(1, 6):
        composer.locator("textarea[name=content]").fill(f"Question {turn}?")
        composer.locator("textarea[name=content]").press("Enter")  # Enter previews in place
        expect(page.locator("[data-composer-preview]")).to_contain_text(f"Question {turn}?")
        expect(page.locator("[data-composer-preview]")).to_contain_text("You keep the lighthouse.")
        if turn == 3:
            shoot(page, "session-chat-preview")
        page.locator("[data-composer] textarea[name=reply]").fill(f"Answer {turn}.")
        page.locator("[data-composer]").get_by_role("button", name="Commit turn").click()
        expect(page.locator("li.event.bubble.role-assistant")).to_have_count(turn)
        expect(page.locator("[data-composer] textarea[name=content]")).to_have_value("")
    assert page.evaluate("window.__noReload") is True  # htmx swapped the chat; the page never reloaded
    expect(page.locator("li.event.bubble.role-user")).to_have_count(5)
    history = list(SessionEvent.objects.filter(session=session, role__in=("user", "assistant"))
                   .order_by("seq").values_list("content", flat=True))
    assert [text for text in history if text.startswith(("Question", "Answer"))] == [
        text for turn in range(1, 6) for text in (f"Question {turn}?", f"Answer {turn}.")]
    shoot(page, "session-chat")


def test_host_records_are_collapsed_and_say_what_they_do(live_server, page, login_as, lamp_preset, role_users):
    from preview_app import services
    from strategies_app.models import Preset, Strategy

    session = services.session_create(user=role_users["designer"], name="Standard host",
                                      preset=Preset.objects.get(pk=lamp_preset.id))
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.locator("[data-composer] textarea[name=content]").fill("Hello?")
    page.locator("[data-composer]").get_by_role("button", name="Commit turn").click()
    record = page.locator("li[data-host-record]").first
    expect(record).to_be_visible()
    details = record.locator("details.host-record-body")
    assert details.get_attribute("open") is None  # collapsed by default
    expect(record.locator("summary")).to_contain_text("later request")
    shoot(page, "session-host-records")


def test_the_composer_works_without_javascript(live_server, browser, role_users, lamp_preset):
    from preview_app import services
    from strategies_app.models import Preset, Strategy
    from tests.browser.conftest import BROWSER_PASSWORD

    session = services.session_create(user=role_users["designer"], name="No JS",
                                      preset=Preset.objects.get(pk=lamp_preset.id))
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(role_users["designer"].username)
    page.get_by_label("Password").fill(BROWSER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.locator("[data-composer] textarea[name=content]").fill("Plain form?")
    page.locator("[data-composer]").get_by_role("button", name="Preview").click()
    expect(page.locator("[data-composer-preview]")).to_contain_text("Plain form?")
    page.locator("[data-composer] textarea[name=reply]").fill("Yes.")
    page.locator("[data-composer]").get_by_role("button", name="Commit turn").click()
    expect(page.locator("li.event.bubble.role-assistant")).to_have_count(1)
    expect(page.locator("li.event.bubble.role-user")).to_contain_text("Plain form?")


def test_the_session_page_in_chinese(live_server, page, login_as, lamp_preset):
    login_as("designer")
    session = _create(page, live_server, "中文会话")
    page.locator("#lang-select").select_option("zh-hans")
    page.get_by_role("button", name="Switch").click()
    page.wait_for_url(re.compile(r".*/sessions/\d+/.*"))
    expect(page.locator("[data-composer]")).to_contain_text("下一轮")
    page.locator("[data-composer] textarea[name=content]").fill("灯亮着吗？")
    page.locator("[data-composer] textarea[name=content]").press("Enter")
    expect(page.locator("[data-composer-preview]")).to_contain_text("灯亮着吗？")
    shoot(page, "session-chat-zh")
    page.goto(f"{live_server.url}/sessions/new/")
    shoot(page, "session-new-zh")
    assert session.pk
