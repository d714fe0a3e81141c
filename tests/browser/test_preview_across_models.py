"""The preview's across-models table is a request of its own, in a real Chromium (quality.md, Performance). A short
history loads it by itself (htmx on load); a long one counts it when the button is pressed, in place; the Chinese page
says so too."""

import pytest
from playwright.sync_api import expect

from assembly.tokens import ENCODINGS
from tests.browser.screenshots import shoot
from tests.web.big_sessions import big_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_long_history_counts_across_models_when_asked(live_server, page, login_as, role_users):
    session = big_session(role_users["designer"], size=1000, name="Thousand")
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    panel = page.locator("#across")
    expect(panel.locator("tr[data-encoding]")).to_have_count(0)
    button = panel.get_by_role("link", name="Count with every tokenizer")
    panel.scroll_into_view_if_needed()
    shoot(page, "across-asked-before")
    button.click()
    expect(page.locator("#across tr[data-encoding]")).to_have_count(len(ENCODINGS))
    expect(page).to_have_url(f"{live_server.url}/sessions/{session.pk}/preview/")  # in place
    page.locator("#across").scroll_into_view_if_needed()
    shoot(page, "across-asked-after")


def test_a_short_history_loads_the_table_by_itself_in_chinese(live_server, page, login_as, role_users):
    session = big_session(role_users["designer"], size=20, name="Short chat")
    login_as("qa")
    page.context.add_cookies([{"name": "django_language", "value": "zh-hans", "url": live_server.url}])
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    expect(page.locator("#across tr[data-encoding]")).to_have_count(len(ENCODINGS))
    expect(page.locator("#across h2")).to_have_text("各模型对比")
    page.locator("#across").scroll_into_view_if_needed()
    shoot(page, "across-auto-zh")
