"""One labelled token total per screen, walked in Chromium (web.md screens 2-3): the editor, its live preview and the
preview page each show the content tokens and what the API bills with the chat framing side by side once; the turn
projection starts from that billed total and builds its later turns like real ones (the session's last input and
reply again), so world info keyed on the input keeps firing and the projection never falls after one turn."""

import re

import pytest
from playwright.sync_api import expect

from preview_app import services as session_services
from strategies_app.models import Strategy
from tests.browser.screenshots import shoot
from tests.browser.test_edit_statements import st_studio  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def storm_chat(st_studio):  # noqa: F811
    """The harbour session after one real turn, asking about the storm again: the demo book's "Storm warning"
    entry fires on "storm" in the input."""
    session = session_services.strategy_apply(session=st_studio["session"],
                                              strategy=Strategy.objects.get(slug="builtin-st"))
    session_services.turn_commit(session=session, reply="The barometer has been falling since noon.")
    session.refresh_from_db()
    return session_services.session_update(session=session, current_input="Is a storm coming?")


def _totals(page, scope: str) -> tuple[int, int]:
    total = page.locator(f"{scope} [data-token-total]")
    expect(total).to_have_count(1)
    content = int(total.locator("[data-content-total]").get_attribute("data-content-total"))
    billed = int(page.locator(f"{scope} section.window[data-request-total]").get_attribute("data-request-total"))
    text = total.inner_text()
    assert f"{content:,} content tokens" in text, text
    assert re.search(rf"{billed:,}( / [\d,]+)? tokens billed by the API", text), text
    assert 0 < content < billed  # the framing is billed on top of the content
    return content, billed


def test_the_preview_shows_one_labelled_total_and_projects_real_turns(live_server, page, login_as, storm_chat):
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/sessions/{storm_chat.pk}/preview/")
    content, billed = _totals(page, "body")
    expect(page.locator("[data-token-total]")).to_have_count(1)  # one total on the screen
    summary = page.locator("p.summary").inner_text()
    assert not re.search(r"\d+ tokens", summary), summary  # the summary line no longer counts a third time
    expect(page.locator("tr[data-message-tokens] td").first).to_have_text("content tokens")
    assert page.locator("tr[data-message-tokens]").get_attribute("data-message-tokens") == str(content)

    projection = page.locator("[data-turn-projection]")
    note = projection.locator("[data-future-turns]")
    expect(note).to_have_attribute("data-future-turns", "repeat")
    expect(note).to_contain_text("Is a storm coming?")
    expect(note).to_contain_text("The barometer has been falling since noon.")
    cells = projection.locator("tbody tr td:nth-child(3)").all_inner_texts()
    tokens = [int(cell.replace(",", "")) for cell in cells]
    assert tokens[0] == billed  # "now" is the billed total shown above
    assert all(b > a for a, b in zip(tokens, tokens[1:], strict=False)), tokens  # no fall after one turn
    shoot(page, "preview-one-total-en")


def test_the_editor_shows_one_labelled_total_in_its_live_preview(live_server, page, login_as, st_studio):  # noqa: F811
    login_as("designer")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/strategies/{st_studio['strategy'].slug}/edit/?session={st_studio['session'].pk}")
    expect(page.locator("[data-token-total]")).to_have_count(1)
    _totals(page, "#preview-panel")
    assert not re.search(r"\d+ tokens", page.locator("#preview-panel p.totals").inner_text())
    assert "Request:" not in page.locator(".editor-head, header, #workspace").first.inner_text()
