"""The goldens page in a real Chromium (web.md screen 5, quality.md Performance): a 5,000-message session whose history
changed in 200 places shows the changed messages and a bounded JSON diff of the changed parts, with a note of how many
parts are left out (the full diff is the `goldens check` command's)."""

import pytest
from playwright.sync_api import expect

from preview_app import services as session_services
from preview_app.json_diff import PAGE_LINES
from preview_app.models import SessionEvent
from tests.browser.screenshots import shoot
from tests.web.big_sessions import big_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def changed_golden(role_users):
    session = big_session(role_users["designer"])
    golden = session_services.golden_pin(session=session, revision=session.applied_revision, user=role_users["qa"])
    events = list(SessionEvent.objects.filter(session=session, seq__lte=2000, seq__gt=1800))
    for event in events:
        event.content = f"Rewritten {event.seq}: the lanterns went out."
    SessionEvent.objects.bulk_update(events, ["content"])
    return golden


def test_a_long_diff_is_bounded_on_the_page(live_server, page, login_as, changed_golden):
    login_as("qa")
    page.goto(f"{live_server.url}/goldens/")
    card = page.locator(f"#golden-{changed_golden.pk}")
    expect(card).to_have_attribute("data-status", "differs")
    # the JSON diff's own details (the message-by-message one before it holds summaries of its own); found by what it
    # holds, so a page still being parsed cannot hand back the other one
    diff = card.locator("details.diff:has(pre.unified-diff)")
    diff.locator(":scope > summary").click()
    lines = diff.locator("pre.unified-diff > span")
    expect(lines).to_have_count(PAGE_LINES)
    # each changed part under its path: the budget left first (keys sorted), never a hunk of line numbers
    expect(lines.nth(2)).to_have_text("@@ budget.remaining @@")
    assert not diff.locator("span.hunk", has_text="@@ -").count()
    note = diff.locator("[data-diff-more]")
    expect(note).to_contain_text("changed parts not shown in full.")
    assert int(note.get_attribute("data-diff-more")) > 0
    note.scroll_into_view_if_needed()
    shoot(page, "goldens-bounded-diff")
    page.select_option("#lang-select", "zh-hans")
    page.locator("form.lang button[type=submit]").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    page.locator(f"#golden-{changed_golden.pk} details.diff:has(pre.unified-diff) > summary").click()
    expect(page.locator("[data-diff-more]")).to_contain_text("处变化未完整显示")
    shoot(page, "zh-goldens-bounded-diff")
