"""Regex scripts in a real Chromium: an admin disables a global script on the resources page (htmx swaps its row),
a designer chooses scripts in the session form, and the builtin-st preview names the script that changed a message,
its before and after behind a summary. With STUDIO_SHOTS=<folder> the pages are saved at 1,400 and 800 px."""


import pytest
from playwright.sync_api import expect

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, RegexScript
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WOLF = {"id": "w1", "scriptName": "wolf to hound", "findRegex": "/wolf/gi", "replaceString": "hound",
        "trimStrings": [], "placement": [1, 2], "disabled": False, "markdownOnly": False, "promptOnly": True,
        "runOnEdit": True, "substituteRegex": 0, "minDepth": None, "maxDepth": None}


@pytest.fixture
def wolves(role_users):
    admin, designer = role_users["admin"], role_users["designer"]
    strategy_services.regex_import(user=admin, data=[WOLF, {**WOLF, "id": "w2", "scriptName": "grey to silver",
                                                           "findRegex": "/grey/", "replaceString": "silver",
                                                           "placement": [1]}])
    preset = strategy_services.preset_import(user=admin, name="Chat", data={
        "prompts": [{"identifier": "main", "content": "You are {{char}}."}, {"identifier": "chatHistory",
                                                                              "marker": True}],
        "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main", "enabled": True},
                                                            {"identifier": "chatHistory", "enabled": True}]}]})
    session = services.session_create(user=designer, name="Wolves", current_input="a grey wolf at the door",
                                      preset=Preset.objects.get(pk=preset.id), host={"core_available": True})
    services.event_append(session=session, role="assistant", content="One old wolf sleeps by the fire.")
    return session


def test_an_admin_disables_a_script_in_place(live_server, page, login_as, wolves):
    login_as("admin")
    page.goto(f"{live_server.url}/resources/")
    section = page.locator('section[data-kind="regex"]')
    expect(section.locator("tbody tr")).to_have_count(2)
    shoot(page, "resources")
    grey = RegexScript.objects.get(name="grey to silver")
    row = page.locator(f"#regex-{grey.pk}")
    row.get_by_role("button", name="Disable").click()
    expect(page.locator(f"#regex-{grey.pk}").get_by_role("button", name="Enable")).to_be_visible()
    grey.refresh_from_db()
    assert grey.disabled is True


def test_a_designer_chooses_scripts_and_the_preview_names_them(live_server, page, login_as, wolves):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{wolves.pk}/")
    page.locator("#settings details.edit > summary").click()
    choice = page.locator('input[name="regex_scripts"]')
    expect(choice).to_have_count(2)
    choice.first.scroll_into_view_if_needed()
    for box in choice.all():
        box.check()
    shoot(page, "session-form")
    page.get_by_role("button", name="Save settings").click()
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/sessions/{wolves.pk}/preview/?strategy=builtin-st")
    changes = page.locator("details.regex-change")
    expect(changes).to_have_count(3)
    first = changes.first
    expect(first.locator("summary")).to_contain_text("wolf to hound")
    expect(first.locator("pre.before")).to_be_hidden()
    first.locator("summary").click()
    expect(first.locator("pre.before")).to_have_text("One old wolf sleeps by the fire.")
    expect(first.locator("pre.after")).to_have_text("One old hound sleeps by the fire.")
    shoot(page, "preview")
