"""Every editor write states what it did to the preview's request, walked as a designer in Chromium: a block
dragged into place does what the same move by its form does, and the statement is computed from the request before
and after it (web.md screen 2)."""

import re

import pytest

from preview_app import services as session_services
from strategies_app.models import Strategy
from tests.browser.conftest import sillytavern_studio
from tests.browser.test_editor import version, wait_for_new_version

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = "/tmp/shots-ux"


@pytest.fixture
def st_studio(role_users):
    """SillyTavern's default preset, the demo card, persona and book, the designer's copy of builtin-st and a session whose host runs it (core available)."""
    studio = sillytavern_studio(role_users, strategy_name="Tavern copy")
    return {"strategy": studio["strategy"], "session": studio["session"]}


def open_editor(live_server, page, st_studio):
    page.goto(f"{live_server.url}/strategies/{st_studio['strategy'].slug}/edit/?session={st_studio['session'].pk}")


def drag(page, handle, target) -> None:
    """A slow mouse drag from `handle` to the top edge of `target`, pausing as a hand does (SortableJS animates
    each swap; a drag faster than its animation drops the row short of where the pointer is)."""
    target.scroll_into_view_if_needed()
    handle.scroll_into_view_if_needed()
    start, end = handle.bounding_box(), target.bounding_box()
    x, y = start["x"] + start["width"] / 2, start["y"] + start["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 8, steps=4)
    for step in range(1, 21):
        page.mouse.move(x, y + (end["y"] + 4 - y) * step / 20)
        page.wait_for_timeout(30)
    page.wait_for_timeout(300)
    page.mouse.up()


def block_ids(page) -> list[str]:
    return page.locator("#block-list > li").evaluate_all("items => items.map(item => item.dataset.blockId)")


def block_index(page, label: str) -> int:
    labels = page.locator("#block-list > li .row-title strong").all_inner_texts()
    return next(i for i, text in enumerate(labels) if label in text)


def preview_roles(page) -> list[str]:
    return page.locator("#preview-panel [data-index]").evaluate_all("rows => rows.map(r => r.dataset.role)")


def test_a_block_drag_the_request_ignores_stores_nothing_and_says_why(live_server, page, login_as, st_studio):
    """In SillyTavern order the preset's prompt order places the request: the drag is refused with that reason,
    nothing is stored, and no sentence claims a move (the drag posts what the form posts)."""
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 1800})
    open_editor(live_server, page, st_studio)
    page.locator("#blocks-panel > summary").click()
    separator, main = block_index(page, "New chat separator"), block_index(page, "Main Prompt")
    before_ids = block_ids(page)
    posted = []
    page.on("request", lambda r: posted.append(r.post_data) if r.method == "POST" else None)
    blocks = page.locator("#block-list > li")
    drag(page, blocks.nth(separator).locator(".drag-handle"), blocks.nth(main))
    refusal = page.locator('#editor-status [data-code="BLOCK_MOVE_IGNORED"]')
    refusal.wait_for()
    refusal.scroll_into_view_if_needed()
    page.screenshot(path=f"{SHOTS}/block-drag-refused-1400.png")
    assert "preset's prompt order" in refusal.inner_text() and "no move was stored" in refusal.inner_text()
    assert "anchor=block%3A%5B%22preset%22%2C%22preset%22%2C%22main%22" in posted[0]  # before Main Prompt
    assert block_ids(page) == before_ids
    workspace = page.locator("#workspace").inner_text()
    assert "Block moved" not in workspace and "already sat there" not in workspace
    assert page.locator("#override-list").count() == 0
    assert not Strategy.objects.get(pk=st_studio["strategy"].pk).draft.get("layout", {}).get("overrides")


def test_a_slot_source_switch_shows_its_effect_first_then_says_it_and_one_click_undoes_it(
        live_server, page, login_as, st_studio):
    """The switch on one locked row (Persona) frees every slot-held row and changes the placement: the editor lists
    that before anything is stored, states the request's change after, and "Undo" puts the draft back."""
    strategy = st_studio["strategy"]
    original = Strategy.objects.get(pk=strategy.pk).draft
    login_as("designer")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 1000})
        open_editor(live_server, page, st_studio)
        persona = page.locator('#position-list > li[data-row-id="persona#persona"]')
        persona.get_by_role("button", name="Switch the slot source to manual").click()
        confirm = page.locator("[data-confirm-edit]")
        confirm.wait_for()
        confirm.scroll_into_view_if_needed()
        page.screenshot(path=f"{SHOTS}/slot-switch-confirm-{width}.png")
        items = confirm.locator("[data-confirm-item]").all_inner_texts()
        assert any("rows are freed from their slots" in item and "Persona" in item for item in items), items
        assert any(item.startswith("The placement changes from") for item in items), items
        assert Strategy.objects.get(pk=strategy.pk).draft == original  # nothing stored yet
        if width == 1400:
            with page.expect_navigation():
                confirm.locator("[data-confirm-cancel]").click()
            assert page.locator("[data-confirm-edit]").count() == 0 and re.search(r"/edit/\?session=", page.url)
    old = version(page)
    confirm.get_by_role("button", name="Apply this change").click()
    wait_for_new_version(page, old)
    page.screenshot(path=f"{SHOTS}/slot-switch-applied-800.png", full_page=False)
    stored = Strategy.objects.get(pk=strategy.pk).draft
    assert stored["layout"]["source"] == "manual" and stored != original
    effect = page.locator("[data-edit-effect]").inner_text()
    assert "changed in the request" in effect or effect.startswith("Nothing changed")
    old = version(page)
    page.get_by_role("button", name="Undo the last edit").click()
    wait_for_new_version(page, old)
    assert "Undone:" in page.locator("#editor-status").inner_text()
    assert Strategy.objects.get(pk=strategy.pk).draft == original
    # After an undo the offer is to put the same edit back, named as such, and it does.
    redo = page.get_by_role("button", name="Redo the undone edit")
    assert redo.count() == 1 and page.get_by_role("button", name="Undo the last edit").count() == 0
    old = version(page)
    redo.click()
    wait_for_new_version(page, old)
    status = page.locator("#editor-status").inner_text()
    assert "Redone:" in status and "Undone:" not in status
    assert Strategy.objects.get(pk=strategy.pk).draft == stored
    assert page.get_by_role("button", name="Undo the last edit").count() == 1


def test_the_editor_opens_on_a_session_that_runs_the_strategy_and_parity_says_why_it_cannot(
        live_server, page, login_as, st_studio):
    """A SillyTavern-order strategy's editor opens on a session whose host has the core backend, though a standard
    one comes first by name; on the standard one the parity check says why before anything is pasted."""
    harbour = st_studio["session"]
    standard = session_services.session_create(user=harbour.owner, name="A standard chat", preset=harbour.preset,
                                               character=harbour.character, current_input="Hello?")
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/strategies/{st_studio['strategy'].slug}/edit/")
    assert page.locator("#workspace").get_attribute("data-session") == str(harbour.pk)
    assert page.locator("#preview-panel [data-code]").count() == 0  # no refusal: the engine runs it
    assert page.locator("#preview-panel [data-index]").count() > 0

    page.goto(f"{live_server.url}/sessions/{standard.pk}/")
    link = page.locator("[data-parity-unavailable]")
    assert "needs the core backend" in link.inner_text()
    link.click()
    note = page.locator(".parity-unavailable[data-parity-unavailable]")
    note.wait_for()
    page.screenshot(path=f"{SHOTS}/parity-unavailable-1400.png")
    assert "advanced (core) backend" in note.inner_text()
    assert page.locator("form.parity-form").count() == 0  # nothing to paste into
    page.set_viewport_size({"width": 800, "height": 900})
    page.screenshot(path=f"{SHOTS}/parity-unavailable-800.png")
