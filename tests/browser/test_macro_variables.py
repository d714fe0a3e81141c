"""Macro variables in Chromium: the designer chooses Macros 2.0 and types the chat's variables in the session's
settings form, and the preview shows the {{if}} that only Macros 2.0 evaluates and each variable before and after
the generation (SillyTavern's `{{setvar}}` stores the text it is given)."""

import re

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


def test_bad_variables_and_a_bad_clock_are_refused_by_their_fields_then_the_time_macros_read_the_clock(
        live_server, page, login_as, gate):
    """The designer types JSON that stops short and a clock no one can read: the page keeps what was typed and
    says, under each field, the field's name and what is wrong; mended, the typed message's time macros read the
    clock (SillyTavern's {{weekday}} "dddd" and {{time}} "LT" in the clock's own offset)."""
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{gate.pk}/")
    page.locator("#settings details.edit > summary").click()
    page.get_by_label("Global variables").fill('{"day": ')
    page.get_by_label("Time macros read").fill("tomorrow at noon")
    page.get_by_label("Current input").fill("It is {{weekday}}, {{time}}.")
    page.get_by_role("button", name="Save settings").click()
    globals_field = page.locator("[data-macro-settings] .field", has=page.get_by_label("Global variables"))
    expect(globals_field.locator(".errorlist")).to_have_text("Global variables: not valid JSON (line 1, column 9).")
    expect(page.get_by_label("Global variables")).to_have_value('{"day": ')
    clock_field = page.locator("[data-macro-settings] .field", has=page.get_by_label("Time macros read"))
    expect(clock_field.locator(".errorlist")).to_contain_text("Time macros read: expected a date and time such as")
    expect(page.get_by_label("Time macros read")).to_have_value("tomorrow at noon")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(page, "macro-settings-refused")
    page.get_by_label("Global variables").fill('{"day": 3}')
    page.get_by_label("Chat variables").fill('{"mood": "calm", "storm_warning_level": "' + "ab" * 200 + '"}')
    page.get_by_label("Time macros read").fill("2026-12-06T15:05+08:00")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("[data-session-clock] time")).to_have_attribute("datetime", "2026-12-06T15:05:00+08:00")
    # the saved variables come back one name a line, every line in view without scrolling the box
    page.locator("#settings details.edit > summary").click()
    chat = page.get_by_label("Chat variables")
    expect(chat).to_have_value(re.compile(r'^\{\n "mood": "calm",\n "storm_warning_level": "(ab)+"\n\}$'))
    assert chat.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
    page.goto(f"{live_server.url}/sessions/{gate.pk}/preview/")
    expect(page.get_by_text("It is Sunday, 3:05 PM.").first).to_be_visible()
    expect(page.locator('#macro-variables tr[data-variable="day"]')).to_have_attribute("data-variable-scope", "global")
    # in the side column (1,400 px) and the single one (800 px): a 400-character value without a space wraps in
    # its cell, no sideways scroll; names and scope words stay on one line
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
        for cell in ('tr[data-variable="mood"] td:first-child code',
                     'tr[data-variable="storm_warning_level"] td:first-child code',
                     'tr[data-variable="mood"] td:nth-child(2)'):
            assert page.locator(f"#macro-variables {cell}").evaluate(
                "el => { const r = document.createRange(); r.selectNodeContents(el);"
                " return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; }") == 1, (width, cell)
