"""The designer's loop in both languages at 1,400 and 800 px, as its users meet it: the editor with its one token
total and its live preview, an edit's statement (a wide edit shown before it applies, then stated; a row moved, then
stated), the preset editor with a revision's effect on a session, the session chat, its preview, the glossary and a
text-completion prompt; no page scrolls sideways. With STUDIO_SHOTS=<folder> each page is saved at both widths
(tests/browser/screenshots.py) for looking at."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services as session_services
from strategies_app.models import Character, Persona, Strategy, TextTemplate
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
    return {"strategy": strategy, "session": session, "preset": preset, "text": _text_session(session)}


def _text_session(chat):
    """The same card and persona in a text-completion prompt: built-in ChatML, Chat and Role-play templates."""
    text = session_services.session_create(
        user=chat.owner, name="Lamp room", current_input="How often does the lamp need trimming?",
        character=Character.objects.get(pk=chat.character_id), persona=Persona.objects.get(pk=chat.persona_id))
    session_services.session_greet(session=text, index=0)
    session_services.event_append(session=text, role="user", content="May I see the lamp room?", name="Traveller")
    builtin = {kind: TextTemplate.objects.get(kind=kind, name=name, builtin=True)
               for kind, name in (("instruct", "ChatML"), ("context", "Chat"), ("sysprompt", "Role-play"))}
    return session_services.session_text_update(
        session=text, completion="text", instruct_template=builtin["instruct"], context_template=builtin["context"],
        sysprompt_template=builtin["sysprompt"], instruct_enabled=True)


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
    expect(page.locator("#preview-panel li[data-index]").first).to_be_visible()  # the live preview's rows
    _no_sideways_scroll(page)
    shoot(page, "editor", language)

    persona = page.locator('#position-list > li[data-row-id="persona#persona"]')
    persona.locator("button[data-free-row]").click()
    confirm = page.locator("[data-confirm-edit]")
    expect(confirm).to_be_visible()
    confirm.scroll_into_view_if_needed()
    if language != "en":  # the removed messages' roles in the page's language too
        assert not re.search(r"#\d+ (system|user|assistant)", confirm.inner_text()), confirm.inner_text()
    _no_sideways_scroll(page)
    shoot(page, "edit-confirm", language)
    confirm.locator("button[type=submit]").first.click()
    statement = page.locator("[data-edit-effect]")
    expect(statement).to_be_visible()
    statement.scroll_into_view_if_needed()
    freed = statement.inner_text()

    # now free, the card's description moves one row down by its form, past a row with text in this session
    description = page.locator('#position-list > li[data-row-id="character#description"]')
    description.locator("button[data-move=down]").click()
    expect(statement).not_to_have_text(freed)
    expect(statement).to_have_attribute("data-changed-messages", re.compile(r"[1-9]"))
    statement.scroll_into_view_if_needed()
    _no_sideways_scroll(page)
    shoot(page, "edit-statement", language)

    page.goto(f"{live_server.url}/resources/presets/{preset.pk}/edit/?session={session.pk}")
    page.locator("tr[data-prompt=main] select").select_option("user")
    page.locator("[data-preset-editor] button[type=submit].primary").click()
    expect(page.locator("[data-preset-effect] [data-edit-effect]")).to_be_visible()
    _no_sideways_scroll(page)
    shoot(page, "preset-editor", language)

    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    _no_sideways_scroll(page)
    shoot(page, "session-chat", language)

    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    expect(page.locator("table.request tbody[data-index]").first).to_be_visible()
    expect(page.locator("[data-token-total]")).to_have_count(1)
    _no_sideways_scroll(page)
    shoot(page, "preview", language)

    page.goto(f"{live_server.url}/glossary/")
    expect(page.locator("dt#prompt-manager")).to_be_visible()
    _no_sideways_scroll(page)
    shoot(page, "glossary", language)

    page.goto(f"{live_server.url}/sessions/{harbour['text'].pk}/text/")
    expect(page.get_by_text("<|im_start|>system").first).to_be_visible()
    _no_sideways_scroll(page)
    shoot(page, "text-preview", language)
