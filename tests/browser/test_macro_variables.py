"""Macro variables in Chromium: the designer chooses Macros 2.0 and types the chat's variables in the session's
settings form, and the preview shows the {{if}} that only Macros 2.0 evaluates and each variable before and after
the generation (SillyTavern's `{{setvar}}` stores the text it is given)."""

import pytest
from playwright.sync_api import expect

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def gate(role_users):
    preset = strategy_services.preset_import(user=role_users["admin"], name="Gate", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "{{if .mood}}mood is {{.mood}}{{else}}no mood{{/if}}"},
        {"identifier": "chatHistory", "marker": True}]})
    return services.session_create(user=role_users["designer"], name="Gate", host={"core_available": True},
                                   preset=Preset.objects.get(pk=preset.id), current_input="{{setvar::door::open}}Hi",
                                   strategy=Strategy.objects.get(slug="builtin-st"))


def test_the_settings_form_sets_the_engine_and_variables_and_the_preview_shows_them(live_server, page, login_as,
                                                                                    gate):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{gate.pk}/")
    page.locator("#settings details.edit > summary").click()
    page.get_by_label("Macro engine").select_option("v2")
    page.get_by_label("Chat variables").fill('{"mood": "calm"}')
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("[data-macro-engine]").first).to_have_attribute("data-macro-engine", "v2")
    page.goto(f"{live_server.url}/sessions/{gate.pk}/preview/")
    panel = page.locator("#macro-variables")
    expect(panel.locator('tr[data-variable="mood"]')).to_have_attribute("data-variable-state", "unchanged")
    expect(panel.locator('tr[data-variable="door"] [data-variable-after]')).to_contain_text('"open"')
    expect(panel.locator('tr[data-variable="door"] [data-variable-changed]')).to_have_text("set by this generation")
    expect(page.get_by_text("mood is calm").first).to_be_visible()
    panel.scroll_into_view_if_needed()
    shoot(page, "macro-variables")
