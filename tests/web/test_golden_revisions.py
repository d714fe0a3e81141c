"""A golden is checked against the revision it approved, which the session runs ("matches the
applied revision" / "differs from the applied revision"); whether the strategy's latest revision would change it is
a separate line with its own diff. Saving a new revision no longer makes a golden differ
(web.md screen 5)."""

import io
import re

from django.core.management import call_command

from preview_app import services
from preview_app.goldens import golden_status
from preview_app.models import GoldenSnapshot
from strategies_app import services as strategy_services
from strategies_app.models import StrategyRevision
from tests.web.conftest import client_for, with_loaded_fragments


def _card(html, golden):
    start = html.index(f'id="golden-{golden.pk}"')
    return html[start:html.index("</li>", start)]


def _head(card):
    """(data-status, data-applied, data-latest, the status sentence)."""
    found = re.search(r'data-status="([^"]+)" data-applied="([^"]+)" data-latest="([^"]+)">.*?'
                      r'<p class="golden-status" data-golden-status>([^<]+)', card, re.S)
    return found.group(1), found.group(2), found.group(3), found.group(4).strip()


def _new_revision(world, users, note="newer", change=None):
    strategy = world["own"]
    strategy.refresh_from_db()
    change = change or (lambda d: {**d, "rules": [*d["rules"], {"id": "weather", "kind": "custom", "enabled": True,
                                                                 "text": "Mention the weather.", "role": "user",
                                                                 "delivery": "pre-step"}]})
    strategy_services.draft_update(strategy=strategy, user=users["designer"], document=change(dict(strategy.draft)),
                                   expected_version=strategy.version)
    revision, created = strategy_services.revision_save(strategy=strategy, user=users["designer"], note=note)
    assert created
    return revision


def _goldens(users, language=None):
    client = client_for(users["qa"])
    if language:
        client.cookies["django_language"] = language
    return with_loaded_fragments(client, client.get("/goldens/").content.decode())


def test_a_fresh_golden_matches_the_applied_revision_and_has_no_latest_line(world, users):
    card = _card(_goldens(users), world["golden"])
    assert _head(card) == ("matches", "approved", "none", "Matches the applied revision.")
    assert "data-golden-latest" not in card and "the approved one" in card


def test_a_change_of_the_session_differs_from_the_applied_revision(world, users):
    services.session_update(session=world["session"], current_input="Something else")
    card = _card(_goldens(users), world["golden"])
    assert _head(card) == ("differs", "approved", "none", "Differs from the applied revision.")
    assert re.search(r'<span class="add">\+.*Something else', card)
    assert 'data-golden-cause="chat"' in card  # the input is the chat: said so, and not blamed on the strategy
    assert "The session's chat changed since the approval; the strategy revision is the same." in card
    assert f'name="revision" value="{world["revision"].revision}"' in card  # re-approve the same revision


def test_a_new_revision_keeps_the_golden_matching_and_says_the_latest_would_change_it(world, users):
    newer = _new_revision(world, users)
    card = _card(_goldens(users), world["golden"])
    assert _head(card) == ("matches", "approved", "newer", "Matches the applied revision.")
    assert 'data-golden-latest="changes"' in card
    latest = card[card.index("data-golden-latest"):]
    assert "the latest revision would change it" in latest and f"<code>{newer.revision[:12]}</code>" in latest
    added = re.findall(r'data-change="added"[^>]*>.*?Mention the weather\.', latest, re.S)
    assert len(added) == 1
    assert re.search(r'<span class="add">\+.*Mention the weather\.', latest)
    assert f'name="revision" value="{newer.revision}"' in latest and "Approve the latest revision's result" in latest
    # the approved check itself shows no diff
    assert "What changed, message by message" not in card[:card.index("data-golden-latest")]


def test_both_at_once_a_changed_session_and_a_newer_revision(world, users):
    """The latest revision's diff is against the approved revision's fresh run: the session's change is counted
    once, in the status, and not again in the latest line."""
    _new_revision(world, users)
    services.session_update(session=world["session"], current_input="Something else")
    status = golden_status(GoldenSnapshot.objects.get(pk=world["golden"].pk))
    assert (status.status, status.latest_changes) == ("differs", True)
    assert any("Something else" in line for line in status.diff)
    assert not any(line.startswith(("+", "-")) and "Something else" in line for line in status.latest.diff)
    assert any(line.startswith("+") and "Mention the weather." in line for line in status.latest.diff)


def test_a_latest_revision_with_the_same_result_says_so(world, users):
    """A revision row with the approved document under another sha (as a revision that changes nothing the result
    shows would be): the latest line says it gives the same result."""
    approved = world["revision"]
    StrategyRevision.objects.create(strategy=approved.strategy, revision="f" * 64, document=approved.document,
                                    note="same")
    card = _card(_goldens(users), world["golden"])
    assert _head(card)[:3] == ("matches", "approved", "newer") and 'data-golden-latest="same"' in card
    assert "the latest revision gives the same result" in card and "the latest revision would change it" not in card


def test_a_session_that_runs_another_revision_is_named(world, users):
    newer = _new_revision(world, users)
    services.strategy_apply(session=world["session"], strategy=world["own"], revision=newer.revision)
    card = _card(_goldens(users), world["golden"])
    assert _head(card) == ("matches", "other-revision", "newer", "Matches the approved revision.")
    assert 'data-golden-latest="changes"' in card
    assert f"the session now runs revision {newer.revision[:12]}" in card
    services.strategy_apply(session=world["session"], strategy=None)
    card = _card(_goldens(users), world["golden"])
    assert _head(card)[:2] == ("matches", "off") and "the session's assembly is off" in card


def test_the_status_in_chinese(world, users):
    _new_revision(world, users)
    card = _card(_goldens(users, "zh-hans"), world["golden"])
    assert _head(card)[3] == "与当前应用的修订版一致。"
    assert "最新修订版会改变它" in card
    services.session_update(session=world["session"], current_input="Something else")
    assert _head(_card(_goldens(users, "zh-hans"), world["golden"]))[3] == "与当前应用的修订版不一致。"


def test_the_check_command_and_the_api_use_the_approved_revision(world, users):
    newer = _new_revision(world, users)
    out = io.StringIO()
    call_command("goldens", "check", stdout=out, stderr=io.StringIO())
    assert out.getvalue().splitlines()[-1] == "1 golden snapshot(s), 0 differ"
    [row] = client_for(users["qa"]).get("/api/goldens").json()
    assert (row["status"], row["checked_revision"]) == ("matches", world["revision"].revision)
    assert (row["latest_revision"], row["latest_changes"]) == (newer.revision, True)
