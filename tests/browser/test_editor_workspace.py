"""The designer's workspace in a real Chromium (web.md screen 2): every move answers with what it did to the session's
request or why it did nothing, locks offer their way out, the preview stays in view at 1,400 and 800 px, every row
shows its tokens, and each language shows its own names only. Screenshots go to /tmp/shots-d17/ for review."""

from pathlib import Path

import pytest

from strategies_app.models import Strategy
from tests.browser import test_editor
from tests.browser.test_editor import drag, editor_url, order, version, wait_for_new_version

studio = test_editor.studio  # the same fixture: the designer's copy of builtin-native-slots and a storm session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/shots-d17")


def shot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def effect(page):
    found = page.locator("[data-edit-effect]")
    return int(found.get_attribute("data-changed-messages")), found.inner_text()


def test_a_drag_that_changes_the_request_highlights_it_and_says_what_changed(live_server, page, login_as, studio):
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(editor_url(live_server, studio))
    assert page.locator("[data-edit-effect]").count() == 0  # nothing to report before a write
    old = version(page)
    drag(page, page.locator('#module-list > li[data-row-id="worldbook"] .drag-handle'),
         page.locator('#module-list > li[data-row-id="character"]'))
    wait_for_new_version(page, old)
    changed, words = effect(page)
    assert changed >= 1 and "changed in the request" in words
    assert page.locator("#preview-panel .message.changed").count() == changed - words.count("removed") or \
        page.locator("#preview-panel .message.changed").count() >= 1
    assert page.locator("#preview-panel .message.changed[data-changes]").first.is_visible()
    shot(page, "effect-changed-1400")


def test_a_keyboard_move_with_no_effect_says_why_and_keeps_focus(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    history = page.locator('#module-list > li[data-row-id="history"]')
    # muted before the move, with the engine's reason
    assert "muted-row" in history.get_attribute("class") and history.get_attribute("data-no-effect")
    up = page.locator("#rule-up-history")
    up.focus()
    old = version(page)
    page.keyboard.press("Enter")
    wait_for_new_version(page, old)
    changed, words = effect(page)
    assert changed == 0 and "Nothing changed in the request." in words and len(words) > 40
    assert page.evaluate("document.activeElement.closest('[data-row-id]').dataset.rowId") == "history"
    assert order(page, "module-list").index("history") < [r["id"] for r in Strategy.objects.get(
        pk=studio["strategy"].pk).draft["rules"]].index("input") + 1
    shot(page, "effect-none-1400")


def test_a_locked_rows_way_out_frees_it(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    row = page.locator('#position-list > li[data-row-id="character#description"]')
    assert row.get_attribute("data-locked") == "true"
    way_out = row.locator("[data-way-out]")
    assert "disable that marker" in way_out.inner_text()
    old = version(page)
    way_out.get_by_role("button").click()
    page.locator("[data-confirm-apply]").click()  # it frees more than its row: its effect is shown first
    wait_for_new_version(page, old)
    assert Strategy.objects.get(pk=studio["strategy"].pk).draft["layout"]["source"] == "manual"
    freed = page.locator('#position-list > li[data-row-id="character#description"]')
    assert freed.get_attribute("data-locked") == "false"
    assert page.locator("[data-edit-effect]").count() == 1


def test_five_moves_each_say_what_changed_or_why_not(live_server, page, login_as, studio):
    """The "Done when": a copy of builtin-native-slots, five different moves, an answer for each, preview in view."""
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(editor_url(live_server, studio))
    answers = []

    def after(move, refused_as: str | None = None) -> None:
        old = version(page)
        move()
        if refused_as:  # a move that would change nothing is refused with its reason, nothing stored
            refusal = page.locator(f'#editor-status [data-code="{refused_as}"], #editor-status [data-code]').first
            refusal.wait_for()
            answers.append((0, refusal.inner_text()))
            assert version(page) == old
        else:
            wait_for_new_version(page, old)
            answers.append(effect(page))
        box = page.locator("#preview-panel").bounding_box()
        assert box["y"] < 900 and box["y"] + 100 > 0  # the preview is in view after every move

    # 1. a module, by mouse
    after(lambda: drag(page, page.locator('#module-list > li[data-row-id="worldbook"] .drag-handle'),
                       page.locator('#module-list > li[data-row-id="character"]')))
    # 2. a resource position, by keyboard
    def position_key():
        page.locator("#pos-down-preset\\#main").focus()
        page.keyboard.press("Enter")
    after(position_key)
    assert page.evaluate("document.activeElement.closest('[data-row-id]').dataset.rowId") == "preset#main"
    # 3. the priority, by keyboard
    def priority_key():
        page.locator("#priority-panel > summary").click()
        page.locator("[id^=stage-down-]:not([disabled])").first.focus()
        page.keyboard.press("Enter")
    after(priority_key)
    # 4. a request block, with its form
    def block_form():
        page.locator("#blocks-panel > summary").click()
        movable = page.locator("#block-list > li .row-edit").first
        movable.locator("summary").click()
        movable.get_by_role("button").click()
    after(block_form, refused_as="BLOCK_ALREADY_THERE")
    # 5. a rule setting: switch a module off
    after(lambda: page.locator("#rule-enabled-persona").click())
    assert len(answers) == 5
    for changed, words in answers:
        assert words and (changed > 0 or "Nothing changed in the request." in words or "nothing was stored" in words
                          or "no move was stored" in words)
    assert any(changed > 0 for changed, _ in answers)
    for row in page.locator("#module-list > li, #position-list > li:not([data-part=held]), #block-list > li").all():
        assert row.get_attribute("data-tokens").isdigit()
    assert int(page.locator("#preview-panel [data-request-total]").get_attribute("data-request-total")) > 0
    shot(page, "five-moves-last-1400")


@pytest.mark.parametrize("width", [1400, 1100, 800])
def test_the_preview_stays_in_view_and_at_800_px_stacks_below(live_server, page, login_as, studio, width):
    login_as("designer")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(editor_url(live_server, studio))
    preview = page.locator("#preview-panel")
    lists = page.locator("#modules-panel").bounding_box()
    if width == 800:
        # one column: the preview is a block of its own after the editor (a sticky one covered the lists)
        assert preview.bounding_box()["y"] > lists["y"] + lists["height"]
        assert preview.evaluate("e => getComputedStyle(e).position") == "static"
        page.locator(".preview-jump").click()
        page.wait_for_function("() => location.hash === '#preview-panel'")
        assert 0 <= preview.bounding_box()["y"] < 900
        shot(page, f"layout-{width}")
        return
    assert preview.bounding_box()["y"] < 900
    if width == 1400:
        assert preview.bounding_box()["x"] > lists["x"] + lists["width"] - 1  # beside the lists
    else:
        assert preview.bounding_box()["width"] > width * 0.8  # in place, above the lists
    shot(page, f"layout-{width}")
    page.locator("#position-list").scroll_into_view_if_needed()
    page.mouse.wheel(0, 1200)
    page.wait_for_function("() => window.scrollY > 500")
    box = preview.bounding_box()
    assert 0 <= box["y"] < 900  # sticky: still in view while the lists scroll
    shot(page, f"layout-{width}-scrolled")
    if width == 1100:
        messages = preview.locator(".request")
        page.locator("[data-preview-toggle]").click()  # folds the preview to its sticky heading
        assert not messages.is_visible() and page.locator("[data-preview-toggle]").is_visible()
        page.locator("[data-preview-toggle]").click()
        assert messages.is_visible()


def test_each_language_shows_its_own_names(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(f"{live_server.url}/strategies/")
    text = page.locator("main").inner_text()
    assert "Preset slots first (standard)" in text and "预设插槽优先" not in text
    assert "advanced backend (core)" in text and "legacy" not in text
    page.goto(f"{live_server.url}/strategies/builtin-native-slots/edit/")
    assert page.locator("h1").inner_text() == "Preset slots first (standard)"
    page.locator("#lang-select").select_option("zh-hans")
    page.get_by_role("button", name="Switch", exact=True).click()
    page.wait_for_function("() => document.documentElement.lang === 'zh-hans'")
    assert page.locator("h1").inner_text() == "预设插槽优先（标准）"
    page.goto(f"{live_server.url}/strategies/")
    text = page.locator("main").inner_text()
    assert "预设插槽优先（标准）" in text and "Preset slots first" not in text
    page.goto(editor_url(live_server, studio))
    page.set_viewport_size({"width": 1400, "height": 900})
    shot(page, "layout-1400-zh")
