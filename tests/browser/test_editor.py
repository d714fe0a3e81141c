"""The strategy editor in a real Chromium (web.md screen 2, quality.md "Browser"): drags that change the live preview,
locked rows that stay put and say why, keyboard moves that keep focus, a stale tab that loses nothing, save and
apply, QA's read-only page and its forged POST, escaped prompt content, and the Chinese UI."""

import re

import pytest

from assembly.sillytavern.png import card_png, solid_png
from preview_app import demo
from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def studio(role_users):
    """The demo resources, the designer's copy of builtin-native-slots (one revision) and a native session whose
    input wakes the storm entry (a world book entry at depth, beside the card's depth prompt)."""
    admin, designer = role_users["admin"], role_users["designer"]
    preset = services.preset_import(user=admin, data=demo.PRESET, name=demo.PRESET_NAME)
    character = services.character_import(user=admin, data=card_png(demo.CARD, solid_png(4, 4, demo.AVATAR_RGB)))
    persona = services.persona_import(user=admin, data=demo.PERSONA)
    book = services.worldbook_import(user=admin, data=demo.WORLDBOOK, name=demo.WORLDBOOK_NAME)
    strategy = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                      name="Lighthouse slots")
    services.revision_save(strategy=strategy, user=designer, note="copied")
    session = session_services.session_create(
        user=designer, name="Storm night", current_input="Is a storm coming? The barometer keeps falling.",
        preset=Preset.objects.get(pk=preset.id), character=Character.objects.get(pk=character.id),
        persona=Persona.objects.get(pk=persona.id), world_books=[WorldBook.objects.get(pk=book.id)])
    return {"strategy": strategy, "session": session}


def editor_url(live_server, studio) -> str:
    return f"{live_server.url}/strategies/{studio['strategy'].slug}/edit/?session={studio['session'].pk}"


def order(page, list_id: str) -> list[str]:
    return page.locator(f"#{list_id} > li").evaluate_all("items => items.map(item => item.dataset.rowId)")


def version(page) -> str:
    return page.locator("#workspace").get_attribute("data-version")


def wait_for_new_version(page, old: str) -> None:
    page.wait_for_function("old => document.querySelector('#workspace').dataset.version !== old", arg=old)


def drag(page, handle, target) -> None:
    """A mouse drag from `handle` to the top edge of `target` (SortableJS runs in fallback mode: mouse events)."""
    target.scroll_into_view_if_needed()
    handle.scroll_into_view_if_needed()
    start, end = handle.bounding_box(), target.bounding_box()
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2 + 6, steps=3)
    page.mouse.move(end["x"] + end["width"] / 2, end["y"] + 3, steps=15)
    page.mouse.up()


def system_parts(page) -> str:
    return page.locator('#preview-panel [data-index="0"] .parts').inner_text()


def test_dragging_a_module_changes_the_live_preview(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    parts = system_parts(page)
    assert parts.index("character's note") < parts.index("Storm warning")  # character rule before world book

    old = version(page)
    drag(page, page.locator('#module-list > li[data-row-id="worldbook"] .drag-handle'),
         page.locator('#module-list > li[data-row-id="character"]'))
    wait_for_new_version(page, old)

    assert order(page, "module-list").index("worldbook") < order(page, "module-list").index("character")
    parts = system_parts(page)
    assert parts.index("Storm warning") < parts.index("character's note")
    rules = [rule["id"] for rule in Strategy.objects.get(pk=studio["strategy"].pk).draft["rules"]]
    assert rules.index("worldbook") < rules.index("character")


def test_dragging_a_resource_row_places_it_by_hand(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    assert page.locator('#preview-panel [data-delivery="pre-step"]').count() == 1  # the post-history prompt
    old = version(page)
    drag(page, page.locator('#position-list > li[data-row-id="preset#jailbreak"] .drag-handle'),
         page.locator('#position-list > li[data-row-id="preset#main"]'))
    wait_for_new_version(page, old)

    assert order(page, "position-list")[:2] == ["preset#jailbreak", "preset#main"]
    assert page.locator('#position-list > li[data-row-id="preset#jailbreak"]').get_by_text("placed by hand").is_visible()
    # placed before the main prompt, it joined the system head: no pre-step message any more
    assert page.locator('#preview-panel [data-delivery="pre-step"]').count() == 0
    assert system_parts(page).startswith("Post-History Instructions")
    stored = Strategy.objects.get(pk=studio["strategy"].pk).draft["layout"]["positions"]
    assert [(row["positionId"], row["placement"]) for row in stored[:2]] == [("jailbreak", "list"), ("main", "source")]


def test_a_locked_row_does_not_move_and_says_why(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    row = page.locator('#position-list > li[data-row-id="character#description"]')
    assert row.get_attribute("data-locked") == "true" and row.locator(".drag-handle").count() == 0
    reason = row.locator("[data-lock-reason]")
    assert reason.is_visible() and "held by the preset marker “Char Description” (charDescription)" in \
        reason.inner_text()

    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    before = order(page, "position-list")
    drag(page, row.locator(".row-title strong"), page.locator("#position-list > li").first)
    # No fixed sleep: two animation frames and a task let any post the drop queued go out before we look.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => "
                  "setTimeout(done, 0))))")
    assert order(page, "position-list") == before and posts == []
    assert row.locator("[data-move]").count() == 0  # no buttons to move it either


def test_keyboard_moves_keep_focus_on_the_moved_row(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    start = order(page, "module-list")
    page.locator("#rule-enabled-persona").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "rule-down-persona"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", "")  # a visible focus ring

    old = version(page)
    page.keyboard.press("Enter")
    wait_for_new_version(page, old)
    moved = order(page, "module-list")
    assert moved.index("persona") == start.index("persona") + 1
    # focus comes back once htmx has settled the swap (a few ms after the new version is in the page)
    page.wait_for_function("() => document.activeElement.id === 'rule-down-persona'")

    old = version(page)
    page.keyboard.press("Enter")  # again, without touching the mouse
    wait_for_new_version(page, old)
    assert order(page, "module-list").index("persona") == start.index("persona") + 2
    page.wait_for_function("() => document.activeElement.closest('[data-row-id]')?.dataset.rowId === 'persona'")

    old = version(page)
    page.locator("#pos-up-preset\\#jailbreak").focus()
    page.keyboard.press("Enter")
    wait_for_new_version(page, old)
    assert order(page, "position-list")[0] == "preset#jailbreak"
    # at the top "move up" is disabled, so focus falls back to the row's other button (once htmx settled)
    page.wait_for_function("() => document.activeElement.id === 'pos-down-preset#jailbreak'")


def test_a_stale_tab_gets_the_conflict_and_loses_nothing(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    stale = page.context.new_page()
    stale.goto(editor_url(live_server, studio))

    old = version(page)
    page.locator("#rule-up-phi").click()
    wait_for_new_version(page, old)
    fresh_order = order(page, "module-list")

    stale.locator("#rule-down-preset").click()
    alert = stale.locator('#editor-status [data-code="STRATEGY_VERSION_CONFLICT"]')
    alert.wait_for()
    assert "Someone saved a newer version" in alert.inner_text()
    assert order(stale, "module-list") == fresh_order  # the stale tab now shows the current state
    rules = [rule["id"] for rule in Strategy.objects.get(pk=studio["strategy"].pk).draft["rules"]]
    assert rules == fresh_order  # the first tab's move is kept, the stale one was not applied


def test_copy_a_builtin_to_edit_it(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(f"{live_server.url}/strategies/builtin-native-slots/edit/?session={studio['session'].pk}")
    assert page.locator("#workspace .drag-handle").count() == 0
    assert page.get_by_text("Built-in strategies are read-only.").is_visible()
    page.get_by_role("button", name="Copy to edit").click()
    page.wait_for_url(re.compile(r".*/strategies/builtin-native-slots-copy/edit/$"))
    assert page.get_by_text("this copy is yours to edit").is_visible()
    assert page.locator("#module-list .drag-handle").count() == 8
    copy = Strategy.objects.get(slug="builtin-native-slots-copy")
    assert copy.owner.username == "designer-browser" and copy.draft["layout"]["source"] == "preset-slots"


def test_every_edit_works_without_javascript(live_server, browser, role_users, studio):
    from tests.browser.conftest import BROWSER_PASSWORD

    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(role_users["designer"].username)
    page.get_by_label("Password").fill(BROWSER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(editor_url(live_server, studio))
    start = order(page, "module-list")
    page.get_by_role("button", name="Move down: Persona").click()  # a plain form: POST, redirect, reload
    page.wait_for_url(re.compile(r".*/edit/\?session=\d+$"))
    assert order(page, "module-list").index("persona") == start.index("persona") + 1
    assert page.get_by_text("Module order saved").is_visible()

    page.locator('#module-list > li[data-row-id="phi"]').get_by_text("Edit rule").click()
    page.get_by_label("Additional text").fill("Keep it short.")
    page.locator('#module-list > li[data-row-id="phi"]').get_by_role("button", name="Save rule").click()
    page.wait_for_url(re.compile(r".*/edit/\?session=\d+$"))
    phi = next(r for r in Strategy.objects.get(pk=studio["strategy"].pk).draft["rules"] if r["id"] == "phi")
    assert phi["text"] == "Keep it short."

    stale_version = page.locator("#workspace").get_attribute("data-version")
    services.rules_reorder(strategy=studio["strategy"], user=studio["strategy"].owner,
                           order=list(reversed(order(page, "module-list"))), expected_version=int(stale_version))
    page.get_by_role("button", name="Move up: Persona").click()  # this page is now stale
    assert page.locator('#editor-status [data-code="STRATEGY_VERSION_CONFLICT"]').is_visible()
    context.close()


def test_save_a_revision_and_apply_it(live_server, page, login_as, studio):
    strategy, session = studio["strategy"], studio["session"]
    core = services.strategy_copy(user=strategy.owner, source=Strategy.objects.get(slug="builtin-st"), name="Core")
    services.revision_save(strategy=core, user=strategy.owner)
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    old = version(page)
    page.locator("#rule-up-phi").click()
    wait_for_new_version(page, old)

    page.get_by_label("Revision note").fill("phi before input")
    page.get_by_role("button", name="Save revision").click()
    page.locator("#editor-status").get_by_text("Saved revision").wait_for()
    assert page.get_by_text("the draft matches it").is_visible()

    apply_panel = page.locator("#apply-panel")
    apply_panel.get_by_label("Storm night").check()
    apply_panel.get_by_role("button", name="Apply").click()
    page.locator('#apply-panel [data-applied="true"]').wait_for()
    session.refresh_from_db()
    assert session.applied_revision.note == "phi before input" and session.applied_strategy == strategy

    page.goto(f"{live_server.url}/strategies/{core.slug}/revisions/")
    page.locator("#apply-panel").get_by_label("Storm night").check()
    page.locator("#apply-panel").get_by_role("button", name="Apply").click()
    refused = page.locator('#apply-panel [data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"]')
    refused.wait_for()
    assert "keeps its previous selection" in refused.inner_text()
    session.refresh_from_db()
    assert session.applied_strategy == strategy


def test_qa_reads_the_editor_and_a_forged_post_is_403(live_server, page, login_as, studio):
    login_as("qa")
    page.goto(editor_url(live_server, studio))
    workspace = page.locator("#workspace")
    assert workspace.locator(".drag-handle").count() == 0 and workspace.locator("[data-move]").count() == 0
    assert workspace.locator("form[method=post]").count() == 0
    assert page.get_by_role("button", name="Save revision").count() == 0
    assert page.locator("#preview-panel [data-index]").count() > 0  # the preview is there

    token = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == "csrftoken")
    strategy = studio["strategy"]
    forged = page.request.post(f"{live_server.url}/strategies/{strategy.slug}/rules/order/",
                               form={"version": str(strategy.version), "row": "phi", "direction": "up"},
                               headers={"X-CSRFToken": token, "Referer": live_server.url + "/"})
    assert forged.status == 403
    assert Strategy.objects.get(pk=strategy.pk).version == strategy.version


def test_prompt_content_with_script_renders_as_text(live_server, page, login_as, studio):
    strategy, session = studio["strategy"], studio["session"]
    services.rule_add(strategy=strategy, user=strategy.owner, kind="custom", name='<img src=x onerror="pwned=1">',
                      role="system", text="<script>window.pwned = true</script>", expected_version=strategy.version)
    session_services.session_update(session=session, current_input="<script>window.pwned = true</script> is text")
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    assert page.evaluate("window.pwned === undefined")
    preview = page.locator("#preview-panel")
    assert preview.get_by_text("<script>window.pwned = true</script> is text").is_visible()
    assert preview.get_by_text('<img src=x onerror="pwned=1">', exact=False).count() >= 1  # its name among the parts
    rule = page.locator('#module-list > li[data-row-id="img-srcx-onerrorpwned1"]')
    assert rule.get_by_text('<img src=x onerror="pwned=1">').is_visible()
    rule.get_by_text("Edit rule").click()
    assert rule.get_by_label("Text").input_value() == "<script>window.pwned = true</script>"
    assert page.locator("#workspace script, #workspace img").count() == 0


def test_the_editor_switches_to_chinese(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    page.locator("#lang-select").select_option("zh-hans")
    page.get_by_role("button", name="Switch", exact=True).click()
    page.wait_for_url(re.compile(r".*/edit/.*"))
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert page.get_by_role("heading", name="资源位置").is_visible()
    assert page.get_by_role("heading", name="实时预览").is_visible()
    description = page.locator('#position-list > li[data-row-id="character#description"]')
    assert description.get_by_text("角色描述").is_visible()
    assert "预设标记" in description.locator("[data-lock-reason]").inner_text()
    assert Session.objects.count() == 1


def test_dragging_a_request_block_keeps_the_move(live_server, page, login_as, studio):
    login_as("designer")
    page.goto(editor_url(live_server, studio))
    page.locator("#blocks-panel > summary").click()  # a collapsed panel
    blocks = page.locator("#block-list > li")
    ids = blocks.evaluate_all("items => items.map(item => item.dataset.blockId)")
    note = next(i for i, b in enumerate(ids) if '"depth_prompt"' in b)
    storm = next(i for i, b in enumerate(ids) if '"worldbook","worldbook","depth"' in b)
    assert storm == note + 1  # the card's note, then the storm entry, both at depth in the native request
    assert page.locator("#block-list > li[data-locked='true'] .drag-handle").count() == 0  # fixed blocks: no handle

    old = version(page)
    drag(page, blocks.nth(storm).locator(".drag-handle"), blocks.nth(note))
    wait_for_new_version(page, old)
    assert "Block moved" in page.locator("#editor-status").inner_text()
    moved = page.locator("#block-list > li").evaluate_all("items => items.map(item => item.dataset.blockId)")
    assert moved.index(ids[storm]) == moved.index(ids[note]) - 1
    [override] = Strategy.objects.get(pk=studio["strategy"].pk).draft["layout"]["overrides"]
    assert (override["target"], override["anchor"], override["side"]) == (ids[storm], ids[note], "before")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_refused_setting_says_what_was_refused_in_the_pages_language(live_server, page, login_as, studio,
                                                                       language):
    """A blank name (spaces pass the browser's `required`) is refused naming the field by its label, in the page's
    words and punctuation, and nothing is stored."""
    from tests.browser.screenshots import shoot

    login_as("designer")
    page.goto(editor_url(live_server, studio))
    if language != "en":
        page.locator("#lang-select").select_option(language)
        page.locator("form.lang button[type=submit]").click()
        page.wait_for_url(re.compile(r".*/edit/.*"))
    page.locator("#settings-panel > details > summary").click()  # a collapsed panel
    page.locator("#settings-name").fill("   ")
    page.locator("#settings-name").press("Enter")
    status = page.locator("#editor-status [data-code=INPUT_INVALID]")
    status.wait_for()
    sentence = status.inner_text().splitlines()[0]
    assert sentence == ("The change was refused: Name: This field is required. Nothing was changed." if language == "en"
                        else "更改被拒绝：名称：这个字段是必填项。未做任何更改。")
    assert Strategy.objects.get(pk=studio["strategy"].pk).draft["name"] == "Lighthouse slots"
    shoot(page, "editor-refused-setting", language)
