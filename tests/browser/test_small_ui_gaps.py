"""Small UI gaps in a real Chromium: the strategies list's buttons stay inside its card at 800 px, the
Users page's password field is as wide as the other inputs, the session pages and pickers name built-ins in one
language. With STUDIO_SHOTS=<folder> the pages are saved at 1,400 and 800 px, in English and Chinese."""

import pytest
from playwright.sync_api import expect

from assembly.catalogue import BUILTIN_NAMES
from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _switch(page, code):
    page.locator("#lang-select").select_option(code)
    page.locator(".topbar form button[type=submit]").first.click()
    expect(page.locator("html")).to_have_attribute("lang", code)


def _right(page, selector):
    return page.eval_on_selector_all(selector, "els => Math.max(...els.map(e => e.getBoundingClientRect().right))")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_strategies_list_keeps_its_buttons_inside_the_card(live_server, page, login_as, role_users, language):
    designer = login_as("designer")
    strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"))
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/strategies/")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        card = page.locator("main .card").first.bounding_box()
        assert _right(page, "table.strategies td.actions > *") <= card["x"] + card["width"], width
        assert _right(page, "table.strategies") <= card["x"] + card["width"], width
    name = BUILTIN_NAMES["builtin-native-slots"]["zh" if language != "en" else "en"]
    expect(page.locator("tr[data-strategy=builtin-native-slots] strong")).to_have_text(name)
    shoot(page, f"strategies-list-{language}")


def _inner_right(page, selector):
    """The right edge of the element's content: its box less its right padding and border."""
    return page.eval_on_selector(selector, """e => { const s = getComputedStyle(e);
        return e.getBoundingClientRect().right - parseFloat(s.paddingRight) - parseFloat(s.borderRightWidth); }""")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_strategies_table_stays_inside_its_cards_padding_with_sessions_using_its_strategies(
        live_server, page, login_as, role_users, language):
    designer = login_as("designer")
    copy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"))
    strategy_services.revision_save(strategy=copy, user=designer, note="demo: copied from the built-in")
    services.session_create(user=designer, name="Demo: the storm (SillyTavern order)", host={"core_available": True},
                            strategy=Strategy.objects.get(slug="builtin-st"))
    services.session_create(user=designer, name="Demo: first night at the lighthouse (standard backend)",
                            host={"core_available": True}, strategy=copy)
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/strategies/")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert _right(page, "table.strategies") <= _inner_right(page, "main .card") + 0.5, width
    shoot(page, f"strategies-list-with-sessions-{language}")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_users_password_field_looks_like_the_other_inputs(live_server, page, login_as, language):
    login_as("admin")
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/users/")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        name, password = page.locator("#id_username"), page.locator("#id_password")
        assert abs(name.bounding_box()["width"] - password.bounding_box()["width"]) < 1, width
        style = "e => [getComputedStyle(e).borderTopStyle, getComputedStyle(e).borderRadius, getComputedStyle(e).padding]"
        assert password.evaluate(style) == name.evaluate(style)
    shoot(page, f"users-{language}")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_compare_pickers_and_refused_projection(live_server, page, login_as, role_users, language):
    designer = login_as("designer")
    copy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"))
    strategy_services.revision_save(strategy=copy, user=designer, note="first")
    session = services.session_create(user=designer, name="Harbour", host={"core_available": True},
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    services.event_append(session=session, role="assistant", content="The tide is in.")
    if language != "en":
        _switch(page, language)
    shown, hidden = ("en", "zh") if language == "en" else ("zh", "en")
    page.goto(f"{live_server.url}/sessions/{session.pk}/compare/?a=applied&b=builtin-native-slots")
    groups = page.locator("#compare-a optgroup").evaluate_all("els => els.map(e => e.label)")
    slots = BUILTIN_NAMES["builtin-native-slots"]
    assert f"{slots[shown]} (builtin-native-slots) · " in " | ".join(groups)
    assert not any(slots[hidden] in label for label in groups)
    shoot(page, f"compare-{language}")
    page.goto(f"{live_server.url}/strategies/builtin-native-slots/revisions/")
    expect(page.locator("table.revisions tbody td").nth(1)).to_have_text("built-in" if language == "en" else "内置")
    shoot(page, f"revisions-{language}")
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/projection/?turns=99")
    expect(page.locator("#projection-title")).to_contain_text("99")
    expect(page.locator("#projection-title")).not_to_contain_text("After 99")
    shoot(page, f"projection-refused-{language}")


@pytest.mark.parametrize(("language", "notice"), [("en", "Turn committed"), ("zh-hans", "已提交本轮")])
def test_without_javascript_the_commit_notice_shows_once(live_server, browser, role_users, language, notice):
    from tests.browser.conftest import BROWSER_PASSWORD

    designer = role_users["designer"]
    copy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-roles"))
    strategy_services.revision_save(strategy=copy, user=designer, note="mine")
    session = services.session_create(user=designer, name="Quay", host={"core_available": True},
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    services.event_append(session=session, role="assistant", content="The boats are out.")
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(designer.username)
    page.get_by_label("Password").fill(BROWSER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.locator("#composer-content").fill("When do they return?")
    page.locator("#composer-reply").fill("At dusk.")
    page.locator("button[name=action][value=commit]").click()
    expect(page.locator("[data-composer-notice]")).to_contain_text(notice)
    expect(page.get_by_text(notice)).to_have_count(1)
    page.locator("#composer").scroll_into_view_if_needed()
    shoot(page, f"composer-notice-nojs-{language}")
    page.goto(f"{live_server.url}/sessions/new/")
    roles = BUILTIN_NAMES["builtin-native-roles"]
    copy_label = f"{roles['en']} (copy)" if language == "en" else f"{roles['zh']}（副本）"
    expect(page.locator(f"label[for] >> text={copy_label}")).to_have_count(1)
    shoot(page, f"new-session-{language}")


def test_a_long_name_without_spaces_wraps_inside_its_card(live_server, page, login_as):
    designer = login_as("designer")
    name = "Harbour" * 28 + "Quay"  # 200 characters, no space to wrap at
    session = services.session_create(user=designer, name=name, host={"core_available": True})
    services.event_append(session=session, role="user", content="The tide is in.")
    for path in ("/sessions/", f"/sessions/{session.pk}/", f"/sessions/{session.pk}/preview/"):
        page.goto(f"{live_server.url}{path}")
        for width in (1400, 800):
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate("document.documentElement.scrollWidth") <= width, (path, width)
            card = page.locator("main .card").first.bounding_box()
            assert _right(page, "main .card:first-of-type table, main .card:first-of-type h1") <= card["x"] + card["width"] + 0.5, (path, width)
    page.goto(f"{live_server.url}/sessions/")
    page.set_viewport_size({"width": 800, "height": 900})
    card = page.locator("main .card").first.bounding_box()
    assert _right(page, "table[data-list=sessions] td.links a") <= card["x"] + card["width"], "links"
    # ordinary words in the other cells still wrap at their spaces, not inside a word
    assert page.locator("table[data-list=sessions] th").evaluate_all(
        "els => els.every(e => e.getClientRects().length && e.scrollWidth <= e.clientWidth)")


def test_a_long_username_wraps_inside_the_users_card(live_server, page, login_as):
    from django.contrib.auth import get_user_model

    login_as("admin")
    get_user_model().objects.create_user(username="u" * 150, password="a long enough password")
    page.goto(f"{live_server.url}/users/")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
        card = page.locator("main .card").first.bounding_box()
        assert _right(page, "main .card:first-of-type table") <= card["x"] + card["width"] + 0.5, width
