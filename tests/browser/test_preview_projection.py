"""The preview's turn projection as its own request (quality.md, Performance): loaded into the preview with htmx, asked
again in place, and a page of its own without JavaScript."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import BROWSER_PASSWORD
from tests.browser.screenshots import shoot
from tests.browser.test_preview import lighthouse  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_preview_loads_its_projection_and_projects_again_in_place(live_server, page, login_as,
                                                                       lighthouse):  # noqa: F811
    login_as("qa")
    session = lighthouse["session"]
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    projection = page.locator("[data-turn-projection]")
    expect(projection.locator("tr[data-turn]")).to_have_count(6)
    expect(projection.locator('[data-code="PRE_STEP_ACCUMULATES"]')).to_contain_text("Answer in one line.")
    expect(page.locator("[data-projection-pending]")).to_have_count(0)
    shoot(page, "preview-projection-loaded-en")
    projection.get_by_label("Turns to project").fill("3")
    projection.get_by_role("button", name="Project").click()
    expect(page.locator('[data-turn-projection][data-turns="3"] tr[data-turn]')).to_have_count(4)
    expect(page).to_have_url(re.compile(rf"/sessions/{session.pk}/preview/$"))  # still the preview page
    page.locator("#lang-select").select_option("zh-hans")
    page.locator("form.lang button[type=submit]").click()
    page.wait_for_load_state()
    expect(page.locator("[data-turn-projection] tr[data-turn]")).to_have_count(6)
    shoot(page, "preview-projection-loaded-zh")


def test_the_projection_without_javascript_is_a_page_of_its_own(live_server, browser, role_users,
                                                                 lighthouse):  # noqa: F811
    session = lighthouse["session"]
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(role_users["qa"].username)
    page.get_by_label("Password").fill(BROWSER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    expect(page.locator("[data-projection-pending]")).to_be_visible()
    shoot(page, "preview-projection-nojs-en")
    page.get_by_role("link", name="Open the projection").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session.pk}/preview/projection/$"))
    expect(page.locator("tr[data-turn]")).to_have_count(6)
    page.goto(page.url + "?turns=99")  # past the input's max, which the browser itself would not submit
    expect(page.locator("[data-turn-projection]")).to_contain_text("turns: expected a whole number from 1 to 20")
    shoot(page, "projection-page-refused-en")
    page.get_by_label("Turns to project").fill("2")
    page.get_by_role("button", name="Project").click()
    expect(page.locator("tr[data-turn]")).to_have_count(3)
    shoot(page, "projection-page-en")
    page.get_by_role("link", name="Back to the preview").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session.pk}/preview/\?turns=2$"))
