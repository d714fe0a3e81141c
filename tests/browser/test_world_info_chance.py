"""Chance as a seed in Chromium: "Roll again" swaps the preview in place (htmx, no reload), the chance panel shows
the new seed and says which world-info entry came in or went out; QA sees the rolls without the button."""

import random

import pytest
from playwright.sync_api import expect

from preview_app import services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy, WorldBook

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _passes(seed):  # SillyTavern's probability roll, random() * 100, from the chat's seeded generator (turn 0)
    return random.Random(f"world-info:{seed}:0").random() * 100 <= 50


@pytest.fixture
def wolves(role_users):
    admin = role_users["admin"]
    preset = strategy_services.preset_import(user=admin, name="Forest preset", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You guard the forest."},
        {"identifier": "worldInfoBefore", "marker": True}, {"identifier": "chatHistory", "marker": True}]})
    book = strategy_services.worldbook_import(user=admin, name="Forest", data={"entries": {
        "0": {"uid": 0, "key": ["wolf"], "comment": "Wolves", "content": "Wolves hunt at dusk.", "probability": 50,
              "useProbability": True}}})
    session = services.session_create(user=role_users["designer"], name="Glade", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      world_books=[WorldBook.objects.get(pk=book.id)],
                                      world_info_activation="keywords", current_input="Any wolf about?",
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    seeds = [next(s for s in range(1, 1000) if _passes(s)), next(s for s in range(1, 1000) if not _passes(s))]
    Session.objects.filter(pk=session.pk).update(chance_seed=seeds[0])
    return session, seeds


def test_roll_again_swaps_the_preview_in_place(live_server, page, login_as, wolves, monkeypatch):
    session, (passing, failing) = wolves
    monkeypatch.setattr(services, "new_chance_seed", lambda other_than=None: failing)
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    panel = page.locator("#chance")
    expect(panel).to_have_attribute("data-seed", str(passing))
    expect(page.locator('li[data-wb-entry="0"][data-wb-state="in"]')).to_be_visible()
    page.evaluate("window.__noReload = true")
    panel.get_by_role("button", name="Roll again").click()
    expect(page.locator("[data-reroll-change]")).to_have_text(
        f"Rolled again with seed {failing}: 1 entry went out: Wolves.")
    expect(page.locator("#chance")).to_have_attribute("data-seed", str(failing))
    expect(page.locator('li[data-wb-entry="0"][data-wb-state="out"]')).to_be_visible()
    assert page.evaluate("window.__noReload") is True  # swapped by htmx, not a new page


def test_qa_reads_the_rolls_without_the_button(live_server, page, login_as, wolves):
    session, (passing, _failing) = wolves
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{session.pk}/preview/")
    expect(page.locator('#chance li[data-roll-entry="0"]')).to_contain_text("against its probability of 50%")
    expect(page.locator("#chance [data-reroll]")).to_have_count(0)
