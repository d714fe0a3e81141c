"""The request total against the window in a real Chromium: picking a model changes the bar's numbers (web.md
screen 3)."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def watch(role_users):
    designer, admin = role_users["designer"], role_users["admin"]
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                               name="Watch strategy")
    strategy_services.revision_save(strategy=strategy, user=designer, note="first")
    preset = strategy_services.preset_import(user=admin, data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True}]}, name="Watch preset")
    session = services.session_create(user=designer, name="Night watch", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id), current_input="Is the lamp lit?")
    services.event_append(session=session, role="user", content="Good evening.")
    services.strategy_apply(session=session, strategy=strategy)
    return {"session": session, "strategy": strategy}


def test_picking_a_model_on_the_preview_measures_the_request_against_its_window(live_server, page, login_as, watch):
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{watch['session'].pk}/preview/")
    bar = page.locator("section.window")
    expect(bar).not_to_have_attribute("data-context-window", re.compile(".*"))
    expect(bar).to_contain_text("Pick a model or set a budget")

    page.locator("[data-request-options] > summary").click()  # the options sit folded above the request
    page.locator("form.options-form select[name=model]").select_option("llama-3-8b-instruct")
    page.get_by_role("button", name="Show with these options").click()
    expect(page).to_have_url(re.compile(r"model=llama-3-8b-instruct"))
    bar = page.locator("section.window")
    expect(bar).to_have_attribute("data-context-window", "8192")
    expect(bar).to_have_attribute("data-fits", "true")
    after = int(bar.get_attribute("data-request-total"))
    expect(bar).to_contain_text(f"{after} / 8,192 tokens billed by the API (with the chat framing), 1,024 reserved for the reply")
    expect(bar.locator("[data-exact]")).to_have_text("exact")

    page.locator("form.options-form select[name=model]").select_option("mistral-nemo")
    page.get_by_role("button", name="Show with these options").click()
    bar = page.locator("section.window")
    expect(bar).to_have_attribute("data-context-window", "131072")
    expect(bar).to_contain_text(re.compile(r"\d+ / 131,072 tokens billed by the API \(with the chat framing\), 1,024 reserved for the reply"))
    expect(bar).to_contain_text("mistral-nemo (mistral-tekken)")


def test_picking_a_model_in_the_editor_redraws_the_live_preview_bar(live_server, page, login_as, watch):
    login_as("designer")
    strategy, session = watch["strategy"], watch["session"]
    page.goto(f"{live_server.url}/strategies/{strategy.slug}/edit/?session={session.pk}")
    bar = page.locator("#preview-panel section.window")
    expect(bar).to_contain_text("Pick a model to see it against its context window.")  # the editor sets no budget

    page.locator("#preview-model").select_option("claude")
    expect(page).to_have_url(re.compile(r"model=claude"))  # htmx pushed the choice into the URL
    bar = page.locator("#preview-panel section.window")
    expect(bar).to_have_attribute("data-context-window", "200000")
    expect(bar.locator("[data-exact]")).to_have_text("approximate")
    expect(page.locator("#workspace")).to_have_attribute("data-model", "claude")
