"""Windowed history in a real Chromium (quality.md, Performance): a 5,000-message session's preview folds the plain
history into one row, and its link expands the range in place with htmx (200 rows, then its own "show more"), and the
editor's live preview does the same in its list."""

import re

import pytest
from playwright.sync_api import expect

from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from studio.history_window import RANGE_ROWS
from tests.browser.screenshots import shoot
from tests.web.big_sessions import BIG, big_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def long_chat(role_users):
    return big_session(role_users["designer"])


def test_the_preview_folds_the_history_and_expands_it_in_place(live_server, page, login_as, long_chat):
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{long_chat.pk}/preview/")
    folded = page.locator("tbody.collapsed-run")
    expect(folded).to_have_count(1)
    expect(folded).to_have_attribute("data-collapsed-range", f"4-{BIG - 3}")
    expect(page.locator("tbody.msg")).to_have_count(9)
    expect(folded.get_by_role("link")).to_have_text(re.compile(rf"messages 4–{BIG - 3:,}: {BIG - 6:,} history"))
    shoot(page, "big-preview-collapsed")
    folded.get_by_role("link").click()
    # in place: the same page, the first RANGE_ROWS rows of the range, and the rest folded again after them
    expect(page.locator("tbody.msg")).to_have_count(9 + RANGE_ROWS)
    expect(page).to_have_url(re.compile(rf"/sessions/{long_chat.pk}/preview/$"))
    rest = page.locator("tbody.collapsed-run")
    expect(rest).to_have_attribute("data-collapsed-range", f"{4 + RANGE_ROWS}-{BIG - 3}")
    indices = page.locator("tbody.msg").evaluate_all("rows => rows.map(r => Number(r.dataset.index))")
    assert indices == sorted(indices) and indices[4:4 + RANGE_ROWS] == list(range(4, 4 + RANGE_ROWS))
    page.locator(f'tbody.msg[data-index="{4 + RANGE_ROWS - 2}"]').scroll_into_view_if_needed()
    shoot(page, "big-preview-expanded")
    href = rest.get_by_role("link").get_attribute("href")
    rest.get_by_role("link").click()
    expect(page.locator("tbody.msg")).to_have_count(9 + 2 * RANGE_ROWS)
    page.goto(f"{live_server.url}{href}")  # the link without JavaScript: the range as a page of its own
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Request messages {4 + RANGE_ROWS}–{BIG - 3}")
    expect(page.locator("tbody.msg")).to_have_count(RANGE_ROWS)
    shoot(page, "big-preview-range-page")


def test_the_editor_live_preview_expands_its_folded_run_in_place(live_server, page, login_as, long_chat,
                                                                  role_users):
    designer = login_as("designer")
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                          name="Long chat strategy")
    page.goto(f"{live_server.url}/strategies/{own.slug}/edit/?session={long_chat.pk}")
    panel = page.locator("#preview-panel")
    folded = panel.locator("li.collapsed-run")
    expect(folded).to_have_count(1)
    expect(panel.locator("li.message[data-index]")).to_have_count(9)
    shoot(page, "big-editor-collapsed")
    folded.get_by_role("link").click()
    expect(panel.locator("li.message[data-index]")).to_have_count(9 + RANGE_ROWS)
    expect(panel.locator("li.collapsed-run")).to_have_attribute("data-collapsed-range",
                                                                f"{4 + RANGE_ROWS}-{BIG - 3}")


def test_compare_folds_the_unchanged_history_and_chinese_names_the_run(live_server, page, login_as, long_chat):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{long_chat.pk}/compare/?a=applied&b=builtin-native-slots")
    folded = page.locator("tr.collapsed-run")
    expect(folded).to_have_count(1)
    shoot(page, "big-compare-collapsed")
    first, last = map(int, folded.get_attribute("data-collapsed-range").split("-"))
    rows = page.locator("tr.aligned[data-change]")
    before = rows.count()
    folded.get_by_role("link").click()
    expect(rows).to_have_count(before + RANGE_ROWS)  # in place, inside the same table
    expect(page.locator("tr.collapsed-run")).to_have_attribute("data-collapsed-range", f"{first + RANGE_ROWS}-{last}")
    page.goto(f"{live_server.url}/sessions/{long_chat.pk}/preview/")
    page.locator("#lang-select").select_option("zh-hans")
    page.get_by_role("button", name="Switch", exact=True).click()
    expect(page.locator("tbody.collapsed-run")).to_contain_text(f"{BIG - 6:,} 条历史消息")
    shoot(page, "big-preview-collapsed-zh")
