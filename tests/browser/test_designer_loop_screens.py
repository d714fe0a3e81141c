"""The designer's loop in both languages at 1,400 and 800 px, as its users meet it: the editor with its one token
total, an edit's statement (a wide edit shown before it applies, then stated), the preset editor with a revision's
effect on a session, the session chat and the glossary; no page scrolls sideways. With STUDIO_SHOTS=<folder> each
page is saved at both widths (tests/browser/screenshots.py) for looking at."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services as session_services
from strategies_app.models import Strategy
from tests.browser.conftest import sillytavern_studio
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def harbour(role_users):
    studio = sillytavern_studio(role_users, strategy_name="Tavern")
    strategy, session, preset = studio["strategy"], studio["session"], studio["preset"]
    session = session_services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    session_services.turn_commit(session=session, reply="The barometer has been falling since noon.")
    session.refresh_from_db()
    session = session_services.session_update(session=session, current_input="Should we bring the boats in?")
    return {"strategy": strategy, "session": session, "preset": preset}


def _switch(page, code):
    page.locator("#lang-select").select_option(code)
    page.locator(".topbar form button[type=submit]").first.click()
    expect(page.locator("html")).to_have_attribute("lang", code)


def _no_sideways_scroll(page):
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, (page.url, width, scroll)
    page.set_viewport_size({"width": 1400, "height": 900})


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_designers_loop_in_both_languages(live_server, page, login_as, harbour, language):
    strategy, session, preset = harbour["strategy"], harbour["session"], harbour["preset"]
    login_as("designer")
    if language != "en":
        _switch(page, language)
    page.set_viewport_size({"width": 1400, "height": 900})

    page.goto(f"{live_server.url}/strategies/{strategy.slug}/edit/?session={session.pk}")
    expect(page.locator("[data-token-total]")).to_have_count(1)
    _no_sideways_scroll(page)
    shoot(page, f"loop-editor-{language}")

    persona = page.locator('#position-list > li[data-row-id="persona#persona"]')
    persona.locator("button[data-free-row]").click()
    confirm = page.locator("[data-confirm-edit]")
    expect(confirm).to_be_visible()
    confirm.scroll_into_view_if_needed()
    if language != "en":  # the removed messages' roles in the page's language too
        assert not re.search(r"#\d+ (system|user|assistant)", confirm.inner_text()), confirm.inner_text()
    _no_sideways_scroll(page)
    shoot(page, f"loop-edit-confirm-{language}")
    confirm.locator("button[type=submit]").first.click()
    statement = page.locator("[data-edit-effect]")
    expect(statement).to_be_visible()
    statement.scroll_into_view_if_needed()
    shoot(page, f"loop-edit-statement-{language}")

    page.goto(f"{live_server.url}/resources/presets/{preset.pk}/edit/?session={session.pk}")
    page.locator("tr[data-prompt=main] select").select_option("user")
    page.locator("[data-preset-editor] button[type=submit].primary").click()
    expect(page.locator("[data-preset-effect] [data-edit-effect]")).to_be_visible()
    _no_sideways_scroll(page)
    shoot(page, f"loop-preset-editor-{language}")

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    _no_sideways_scroll(page)
    shoot(page, f"loop-session-chat-{language}")

    page.goto(f"{live_server.url}/glossary/")
    expect(page.locator("dt#prompt-manager")).to_be_visible()
    _no_sideways_scroll(page)
    shoot(page, f"loop-glossary-{language}")
