"""The preview, compare, goldens and session pages in a real Chromium: what QA and designers actually click."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services
from preview_app.models import GoldenSnapshot, SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lighthouse(role_users):
    """A designer's copy of builtin-native-slots (saved) applied to a session with a preset, two messages and an
    input; the host has the core backend too."""
    designer, admin = role_users["designer"], role_users["admin"]
    strategy = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                               name="Lighthouse strategy")
    revision, _ = strategy_services.revision_save(strategy=strategy, user=designer, note="first")
    preset = strategy_services.preset_import(user=admin, data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse. <b>Never</b> leave the lamp."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}, name="Lamp preset")
    session = services.session_create(user=designer, name="Night watch", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id), current_input="Is the lamp lit?")
    services.event_append(session=session, role="user", content="Good evening.")
    services.event_append(session=session, role="assistant", content="Evening. Mind the stairs.")
    services.strategy_apply(session=session, strategy=strategy)
    session.refresh_from_db()
    return {"session": session, "strategy": strategy, "revision": revision}


def test_qa_opens_a_preview_expands_a_row_and_sees_role_delivery_and_history_entry(live_server, page, login_as,
                                                                                  lighthouse):
    login_as("qa")
    session = lighthouse["session"]
    page.get_by_role("link", name="Sessions").first.click()
    page.get_by_role("link", name="Preview").first.click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session.pk}/preview/$"))

    rows = page.locator("tbody.msg")
    expect(rows).to_have_count(5)  # system, two history messages, the input, the jailbreak as a pre-step
    jailbreak = page.locator('tbody.msg[data-index="4"]')
    expect(jailbreak).to_have_attribute("data-role", "user")
    expect(jailbreak).to_have_attribute("data-delivery", "pre-step")
    expect(jailbreak).to_have_attribute("data-history-status", "appended")
    expect(jailbreak.locator("td.history-entry")).to_have_text("kept: added to history by this request")
    expect(page.locator('tbody.msg[data-index="1"] td.history-entry')).to_have_text("kept: already in history")
    expect(page.locator('[data-history-total="native"]')).to_contain_text("2 messages")

    parts = jailbreak.locator("details.parts")
    part_row = parts.locator('tr[data-part-id="preset:jailbreak"]')
    expect(part_row).to_be_hidden()
    parts.locator("summary").click()
    expect(part_row).to_be_visible()
    expect(part_row).to_contain_text("preset")
    expect(part_row).to_contain_text("system → user")  # the role it was written in, and the role it is sent in

    history = page.locator('tbody.msg[data-index="1"]')
    expect(history).to_have_attribute("data-history-status", "native")
    history.locator("details.parts summary").click()
    expect(history.locator("[data-lock-reason]")).to_have_text(re.compile("fixed by the host"))

    # The <b> in the prompt is text, not markup.
    system = page.locator('tbody.msg[data-index="0"]')
    expect(system.locator("pre.content")).to_contain_text("<b>Never</b> leave the lamp.")
    expect(page.locator('li[data-code="NATIVE_ROLE_ADJUSTED"]')).to_contain_text("decides its role")
    # QA has nothing to commit, but can pin.
    expect(page.get_by_role("button", name="Commit turn")).to_have_count(0)
    expect(page.get_by_role("button", name="Pin as golden")).to_be_visible()


def test_compare_shows_a_moved_message(live_server, page, login_as, lighthouse, role_users):
    designer = role_users["designer"]
    base = {"format": "dsh-tavern-request-assembly", "version": 1, "backend": "core", "placement": "modules"}
    note = {"id": "note", "kind": "custom", "text": "Speak like a sailor.", "role": "system"}
    history, current = {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}
    for name, rules in (("Note first", [note, history, current]), ("Note last", [history, current, note])):
        strategy = strategy_services.strategy_create(user=designer, name=name, document={**base, "name": name,
                                                                                         "rules": rules})
        strategy_services.revision_save(strategy=strategy, user=designer, note="")
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{lighthouse['session'].pk}/compare/")
    page.get_by_label("Left (A)").select_option("note-first")
    page.get_by_label("Right (B)").select_option("note-last")
    page.get_by_role("button", name="Compare").click()
    moved = page.locator('tr.aligned[data-change="moved"]')
    expect(moved).to_have_count(1)
    expect(moved).to_contain_text("Speak like a sailor.")
    expect(moved.locator(".change-moved")).to_have_text("moved #0 → #3")
    expect(page.locator('tr.aligned[data-change="same"]')).to_have_count(3)


def test_pin_a_golden_change_the_strategy_and_see_the_latest_revision_line(live_server, page, login_as, lighthouse,
                                                                          role_users):
    session, strategy = lighthouse["session"], lighthouse["strategy"]
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    page.get_by_role("button", name="Pin as golden").click()
    expect(page).to_have_url(re.compile(r"/goldens/#golden-\d+$"))
    golden = page.locator("li.golden")
    expect(golden).to_have_attribute("data-status", "matches")
    expect(golden.locator(".status-badge")).to_have_text("matches")

    # A designer saves a revision that adds a custom text rule (a user pre-step after the input).
    strategy.refresh_from_db()
    draft = {**strategy.draft, "rules": [*strategy.draft["rules"], {
        "id": "weather", "kind": "custom", "text": "Mention the weather.", "role": "user", "delivery": "pre-step"}]}
    strategy_services.draft_update(strategy=strategy, user=role_users["designer"], document=draft,
                                   expected_version=strategy.version)
    strategy_services.revision_save(strategy=strategy, user=role_users["designer"], note="weather")

    # The session still runs the approved revision: the golden matches it; the latest revision is its own line.
    page.reload()
    expect(golden).to_have_attribute("data-status", "matches")
    expect(golden.locator("[data-golden-status]")).to_contain_text("Matches the applied revision.")
    expect(golden).to_contain_text("newer revision")
    latest = golden.locator("[data-golden-latest]")
    expect(latest).to_have_attribute("data-golden-latest", "changes")
    expect(latest).to_contain_text("the latest revision would change it")
    latest.get_by_text("What the latest revision changes, message by message").click()
    added = latest.locator('tr.aligned[data-change="added"]')
    expect(added).to_have_count(1)
    expect(added).to_contain_text("Mention the weather.")
    shoot(page, "goldens-latest-changes")

    # Approving the latest revision's result moves the golden to it: no newer revision is left.
    latest.get_by_role("button", name="Approve the latest revision's result").click()
    expect(page.locator("li.golden")).to_have_attribute("data-status", "matches")
    expect(page.locator("li.golden")).to_have_attribute("data-latest", "none")
    assert GoldenSnapshot.objects.filter(session=session).count() == 1


def test_designer_edits_the_history_and_commits_a_turn(live_server, page, login_as, lighthouse):
    session = lighthouse["session"]
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.get_by_text("Add a message").click()
    page.locator("#id_new-role").select_option("assistant")
    page.locator("#id_new-content").fill("The lamp needs oil.")
    page.get_by_role("button", name="Add to the history").click()
    expect(page.locator("li.event")).to_have_count(3)
    expect(page.locator("li.event").nth(2)).to_contain_text("The lamp needs oil.")

    page.get_by_role("button", name="Move message 3 up").click()
    expect(page.locator("li.event").nth(1)).to_contain_text("The lamp needs oil.")
    page.get_by_role("button", name="Delete message 1").click()
    expect(page.locator("li.event")).to_have_count(2)

    page.get_by_role("link", name="Preview the request").click()
    expect(page.locator('tbody.msg[data-index="1"] pre.content')).to_have_text("The lamp needs oil.")
    page.get_by_label("Assistant reply").fill("Aye, it is lit.")
    page.get_by_role("button", name="Commit turn").click()
    expect(page.locator(".flash")).to_contain_text("Turn committed")
    contents = list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("role", "content"))
    assert ("user", "Is the lamp lit?") in contents and contents[-1] == ("assistant", "Aye, it is lit.")
    # The input is cleared, so the new preview has no input row.
    expect(page.locator('tbody.msg[data-delivery="input"]')).to_have_count(0)


def test_a_refused_apply_is_shown_next_to_the_picker(live_server, page, login_as, lighthouse):
    session = lighthouse["session"]
    services.session_update(session=session, host={"core_available": False})
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.get_by_label("Apply", exact=True).select_option("builtin-st")
    page.get_by_role("button", name="Apply strategy").click()
    alert = page.locator('#apply [role="alert"]')
    expect(alert).to_have_attribute("data-code", "REQUEST_ASSEMBLY_CORE_REQUIRED")
    expect(page.locator("#apply")).to_contain_text("The applied strategy was not changed.")
    session.refresh_from_db()
    assert session.applied_strategy == lighthouse["strategy"]


UNNAMED_CONTROLS = """() => [...document.querySelectorAll('main input, main select, main textarea, main button')]
    .filter(el => el.type !== 'hidden')
    .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                  && !(el.tagName === 'BUTTON' && el.textContent.trim()))
    .map(el => el.outerHTML.slice(0, 120))"""


def test_every_control_has_an_accessible_name(live_server, page, login_as, lighthouse):
    session = lighthouse["session"]
    login_as("admin")  # the role that sees every control: edit, commit and pin
    for path in (f"/sessions/{session.pk}/", f"/sessions/{session.pk}/preview/",
                 f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st", "/goldens/", "/sessions/",
                 "/sessions/new/"):
        page.goto(f"{live_server.url}{path}")
        assert page.locator("main").count() == 1
        assert page.evaluate(UNNAMED_CONTROLS) == [], path
    # The check itself finds an unnamed control.
    page.evaluate("document.querySelector('main').insertAdjacentHTML('beforeend', '<input name=probe>')")
    assert page.evaluate(UNNAMED_CONTROLS) == ['<input name="probe">']
