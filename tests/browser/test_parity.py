"""The parity check page in a real Chromium: a designer pastes what SillyTavern sent, once a body builtin-st would
send (identical) and once one with a message changed (different, and where)."""

import json
import re

import pytest
from playwright.sync_api import expect

from assembly import assemble
from preview_app import services
from preview_app.models import GoldenSnapshot
from preview_app.previews import session_request
from strategies_app import services as strategy_services
from strategies_app.models import Character, Preset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tavern_session(role_users):
    """A designer's session with a preset, a character, two messages and an input; the host has the core backend."""
    designer, admin = role_users["designer"], role_users["admin"]
    preset = strategy_services.preset_import(user=admin, data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You are {{char}}. Keep <b>the lamp</b> lit."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}, name="Lamp preset")
    character = strategy_services.character_import(user=admin, data={
        "spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ada", "description": "A keeper."}})
    session = services.session_create(user=designer, name="Night watch", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      character=Character.objects.get(pk=character.id),
                                      current_input="Is the lamp lit?")
    services.event_append(session=session, role="user", content="Good evening.")
    services.event_append(session=session, role="assistant", content="Evening. Mind the stairs.")
    return session


def builtin_st_body(session) -> dict:
    """The chat-completion body SillyTavern would send if it matched builtin-st exactly: the engine's own answer."""
    result = assemble(session_request(session, "builtin-st")).model_dump(mode="json")
    messages = [{key: m[key] for key in ("role", "content", "name") if m.get(key)} for m in result["request"]["messages"]]
    return {"model": "gpt-4o-mini", "temperature": 1, "stream": True, "messages": messages}


def test_a_pasted_body_that_matches_is_identical_and_one_that_differs_shows_where(live_server, page, login_as,
                                                                                  tavern_session):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{tavern_session.pk}/")
    page.get_by_role("link", name="Check against SillyTavern").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{tavern_session.pk}/parity/$"))

    body = builtin_st_body(tavern_session)
    page.get_by_label("What SillyTavern sent").fill(json.dumps(body, indent=2))
    page.get_by_role("button", name="Compare with the studio").click()
    verdict = page.locator("h2.verdict")
    expect(verdict).to_have_text("Identical")
    expect(verdict).to_have_attribute("data-identical", "true")
    expect(page.locator('tr.aligned[data-kind="same"]')).to_have_count(len(body["messages"]))
    expect(page.locator("ul.notes")).to_contain_text("model, stream, temperature")
    expect(page).to_have_url(re.compile(r"/parity/$"))  # htmx swapped the result in place

    # SillyTavern sent the main prompt with one word changed.
    changed = json.loads(json.dumps(body))
    index = next(i for i, m in enumerate(changed["messages"]) if "the lamp" in m["content"])
    changed["messages"][index]["content"] = changed["messages"][index]["content"].replace("lit", "burning")
    page.get_by_label("What SillyTavern sent").fill(json.dumps(changed))
    page.get_by_role("button", name="Compare with the studio").click()
    expect(verdict).to_have_text("Different")
    row = page.locator('tr.aligned[data-kind="changed"]')
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-fields", "content")
    expect(row.locator(".change-content")).to_have_text("content differs")
    where = page.locator('tr.difference[data-field="content"]')
    expect(where).to_contain_text("The content first differs at line 1, column")
    expect(where.locator("del.diff-part")).to_have_text("lit")
    expect(where.locator("ins.diff-part")).to_have_text("burning")
    # The preset's <b> is text, not markup.
    expect(row.locator("td.side-a pre.content")).to_contain_text("Keep <b>the lamp</b> lit.")
    expect(page.locator('tr.aligned[data-kind="same"]')).to_have_count(len(body["messages"]) - 1)

    # A broken paste is named, in place of the result.
    page.get_by_label("What SillyTavern sent").fill('{"messages": [{"role": "user"}]}')
    page.get_by_role("button", name="Compare with the studio").click()
    refusal = page.locator("#parity-result .refusal")
    expect(refusal).to_have_attribute("data-code", "INPUT_INVALID")
    expect(refusal).to_contain_text("sent.messages[0].content: expected a text or a list of content parts")
    expect(page.locator("h2.verdict")).to_have_count(0)
    assert GoldenSnapshot.objects.count() == 0  # nothing stored


def test_qa_pins_the_studio_request_from_the_parity_page(live_server, page, login_as, tavern_session):
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{tavern_session.pk}/parity/")
    page.get_by_label("What SillyTavern sent").fill(json.dumps(builtin_st_body(tavern_session)["messages"]))
    page.get_by_role("button", name="Compare with the studio").click()
    expect(page.locator("h2.verdict")).to_have_text("Identical")
    page.get_by_role("button", name="Pin the studio's request as golden").click()
    expect(page).to_have_url(re.compile(r"/goldens/#golden-\d+$"))
    golden = GoldenSnapshot.objects.get(session=tavern_session)
    assert golden.revision.strategy.slug == "builtin-st"
