"""Walking the studio as its users meet it, in a real Chromium: the Users page says what each write did and explains
a refusal; importing the same card twice offers to reuse it; the preview's request options sit above the request
and a pre-step copy is named as the host's; the glossary is one click from the header; a QA user who opens the
Django admin is told why. With STUDIO_SHOTS=<folder> the pages are saved at 1,400 and 800 px, English and Chinese."""

import pytest
from playwright.sync_api import expect

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy
from tests.browser.conftest import offer_the_card_again
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _switch(page, code):
    page.locator("#lang-select").select_option(code)
    page.locator(".topbar form button[type=submit]").first.click()
    expect(page.locator("html")).to_have_attribute("lang", code)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_users_page_says_what_each_write_did(live_server, page, login_as, language):
    login_as("admin")
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/users/")
    page.locator("#id_username").fill("nova")
    page.locator("#id_password").fill("a long pass phrase 42")
    page.locator("[data-user-add] button[type=submit]").click()
    expect(page.locator("ul.flash li")).to_contain_text("nova")
    shoot(page, f"users-added-{language}")
    page.locator("#id_username").fill("nova")
    page.locator("#id_password").fill("a long pass phrase 42")
    page.locator("[data-user-add] button[type=submit]").click()
    alert = page.locator("[role=alert][data-code=CONFLICT]")
    expect(alert).to_contain_text("The user name “nova” is taken" if language == "en" else "用户名“nova”已被占用")
    shoot(page, f"users-refused-{language}")


def test_importing_the_same_card_twice_offers_to_reuse_it(live_server, page, login_as, shared_fixtures):
    login_as("admin")
    offer_the_card_again(page, live_server.url, shared_fixtures / "sillytavern")
    expect(page.locator("[data-same-as]")).to_contain_text("Seraphina")
    shoot(page, "import-twin-en")
    page.locator("[data-import-it] button[type=submit]").click()
    report = page.locator("[data-report-kind=character][data-dry-run=false]")
    expect(report).to_contain_text("Nothing new stored: the stored one is used")
    expect(report.locator("[data-stored-counts=none]")).to_contain_text("holds the same content as the file")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_preview_puts_options_first_and_names_a_pre_step_copy(live_server, page, login_as, language):
    designer = login_as("designer")
    imported = strategy_services.preset_import(user=designer, name="Lamp", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]})
    session = services.session_create(user=designer, name="Harbour", preset=Preset.objects.get(pk=imported.id))
    session = services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))
    session = services.session_update(session=session, current_input="Hello?")
    services.turn_commit(session=session, reply="Evening.")
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    options = page.locator("[data-request-options]").bounding_box()
    request = page.locator("#request-title").bounding_box()
    assert options["y"] < request["y"]
    summaries = page.locator("details.parts summary").all_inner_texts()
    host = "host record: a pre-step message" if language == "en" else "宿主记录"
    assert any(host in text for text in summaries), summaries
    shoot(page, f"preview-{language}")
    page.get_by_role("link", name="Glossary" if language == "en" else "术语表").click()
    expect(page.locator("dt#pre-step")).to_be_visible()
    shoot(page, f"glossary-{language}")


def test_a_qa_user_opening_the_admin_is_told_why(live_server, page, login_as):
    login_as("qa")
    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#admin-denied")).to_contain_text("The Django admin is for admins")
    shoot(page, "admin-denied-en")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_designer_edits_a_preset_in_the_prompt_manager(live_server, page, login_as, shared_fixtures, language):
    designer = login_as("designer")
    raw = (shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_bytes()
    import json

    strategy_services.preset_import(user=designer, name="Default", data=json.loads(raw))
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/resources/")
    page.locator("[data-preset-editor-link]").first.click()
    expect(page.locator("tr[data-prompt=chatHistory] [data-marker-badge]")).to_be_visible()
    shoot(page, f"preset-editor-{language}")
    page.locator("tr[data-prompt=main] select").select_option("user")
    page.locator("#id_name").fill("Default, user main")
    page.locator("[data-preset-editor] button[type=submit].primary").click()
    expect(page.locator("ul.flash li")).to_contain_text("Default, user main")
    expect(page.locator("tr[data-prompt=main] select")).to_have_value("user")


def test_the_preset_admin_fits_a_1400_px_window(live_server, page, login_as, shared_fixtures):
    import json

    admin = login_as("admin")
    raw = (shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_bytes()
    preset = strategy_services.preset_import(user=admin, name="Default", data=json.loads(raw))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/admin/strategies_app/preset/{preset.id}/change/")
    width = page.evaluate("document.documentElement.scrollWidth")
    shoot(page, "admin-preset-en")
    assert width <= 1400, width
    expect(page.get_by_role("link", name="Edit in the studio's Prompt Manager")).to_be_visible()
