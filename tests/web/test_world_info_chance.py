"""Chance as a seed (engine.md §5): a session keeps a random seed for its world-info rolls, its request carries
the seed and the turn (the generations committed so far), the preview says which roll decided each probability
entry and inclusion-group pick and words the timed effects, and "Roll again" draws a new seed and says what it
changed.

Expected rolls follow SillyTavern's rules as sillytavern.md §7.3 states them, drawn from the studio's seeded
generator (`random.Random("world-info:<seed>:<turn>")`, worldinfo_chance): a probability roll is `random() * 100`
and fails when above the entry's probability; a group pick is `random() * total weight`, won by the first member
whose running weight reaches it."""

import html as markup
import random
import re

import pytest
from django.utils import translation

from preview_app import services
from preview_app.models import Session
from preview_app.previews import session_request, strategy_document
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy, WorldBook
from tests.web.conftest import client_for, csrf_client_for

PROMPTS = [{"identifier": "main", "role": "system", "content": "You guard the forest."},
           {"identifier": "worldInfoBefore", "marker": True},
           {"identifier": "chatHistory", "marker": True}]


def _draws(seed, turn=0):
    return random.Random(f"world-info:{seed}:{turn}")


def _seed_where(passes, chance=50):
    """The first seed whose first probability roll passes (or fails) an entry of `chance`%."""
    return next(seed for seed in range(1, 1000) if (_draws(seed).random() * 100 <= chance) == passes)


def _session(users, entries, typed="The wolf howls.", seed=None):
    admin = users["admin"]
    preset = strategy_services.preset_import(user=admin, data={"prompts": PROMPTS}, name="Forest")
    book = strategy_services.worldbook_import(user=admin, name="Forest", data={"entries": entries})
    session = services.session_create(user=users["designer"], name="Glade", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      world_books=[WorldBook.objects.get(pk=book.id)],
                                      world_info_activation="keywords", current_input=typed,
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    if seed is not None:
        Session.objects.filter(pk=session.pk).update(chance_seed=seed)
    return Session.objects.get(pk=session.pk)


WOLF = {"0": {"uid": 0, "key": ["wolf"], "comment": "Wolves", "content": "Wolves hunt at dusk.", "probability": 50,
              "useProbability": True}}


def _page(user, url):
    """The page's text with its entities read (the words carry apostrophes)."""
    return markup.unescape(client_for(user).get(url).content.decode())


def _panel(html):
    return html[html.index('id="chance"'):html.index("</section>", html.index('id="chance"'))]


def _request(session):
    return session_request(session, strategy_document(session.applied_strategy, session.applied_document))


def test_a_new_session_keeps_a_random_seed_and_its_request_carries_seed_and_turn(users):
    first, second = (services.session_create(user=users["designer"], name=name) for name in ("One", "Two"))
    assert first.chance_seed != second.chance_seed
    assert all(1 <= s.chance_seed <= 2**53 - 1 for s in (first, second))
    stored = Session.objects.get(pk=first.pk)
    assert stored.chance_seed == first.chance_seed
    assert session_request(stored, "builtin-st")["generation"] == {"turn": 0, "seed": first.chance_seed}


def test_a_generation_type_option_keeps_the_sessions_seed_and_turn(users):
    seed = _seed_where(False)
    session = _session(users, WOLF, seed=seed)
    panel = _panel(_page(users["qa"], f"/sessions/{session.pk}/preview/?generation=impersonate"))
    assert f'data-seed="{seed}"' in panel and 'data-turn="0"' in panel
    assert f"rolled {_draws(seed).random() * 100:.2f} against its probability of 50%" in panel


def test_the_turn_is_the_number_of_generations_committed(users):
    session = _session(users, WOLF)
    assert _request(session)["generation"]["turn"] == 0
    services.turn_commit(session=session, reply="Indeed.")
    session = Session.objects.get(pk=session.pk)
    services.session_update(session=session, current_input="Again.")
    services.turn_commit(session=Session.objects.get(pk=session.pk), reply="Yes.")
    session = Session.objects.get(pk=session.pk)
    assert _request(session)["generation"] == {"turn": 2, "seed": session.chance_seed}
    # the count is the studio's own: an exported chat does not carry it
    exported = client_for(users["qa"]).get(f"/sessions/{session.pk}/chat.jsonl").content.decode()
    assert "generations" not in exported


def test_a_copy_keeps_the_seed_and_an_imported_chat_gets_one(users, world):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.web.test_preview_pages_sessions import CHAT_FILE

    session = world["session"]
    assert services.session_copy(session=session, user=users["designer"]).chance_seed == session.chance_seed
    Session.objects.filter(pk=session.pk).update(chance_seed=None)  # a session from before seeds
    client_for(users["designer"]).post(f"/sessions/{session.pk}/chat/import/", {
        "file": SimpleUploadedFile("c.jsonl", CHAT_FILE.read_bytes())})
    assert Session.objects.get(pk=session.pk).chance_seed is not None


@pytest.mark.parametrize("passes", [True, False])
def test_the_log_names_the_roll_that_decided_a_probability_entry(users, passes):
    seed = _seed_where(passes)
    roll = f"{_draws(seed).random() * 100:.2f}"
    session = _session(users, WOLF, seed=seed)
    html = _page(users["qa"], f"/sessions/{session.pk}/preview/")
    panel = _panel(html)
    assert f'data-seed="{seed}"' in panel and 'data-turn="0"' in panel
    verdict = "at or under it, so it activates" if passes else "over it, so it stays out"
    assert f"rolled {roll} against its probability of 50%: {verdict}" in panel
    assert f'data-roll-passed="{"yes" if passes else "no"}"' in panel
    # the world-info log itself names the same roll, in or out
    log = html[html.index('id="wb-title"'):html.index('id="chance"')]
    state = "in" if passes else "out"
    assert re.search(rf'data-wb-entry="0" data-wb-state="{state}">.*?the chat\'s roll of {roll}', log, re.S)
    assert "Wolves hunt at dusk." in html if passes else "Wolves hunt at dusk." not in html


def test_the_log_names_the_roll_of_an_inclusion_group_pick(users):
    entries = {"0": {"uid": 0, "key": ["wolf"], "comment": "Grey wolf", "content": "A grey wolf.", "group": "pack",
                     "order": 200},
               "1": {"uid": 1, "key": ["wolf"], "comment": "Black wolf", "content": "A black wolf.", "group": "pack",
                     "order": 100, "groupWeight": 300}}
    seed = 11
    roll = _draws(seed).random() * 400  # weights 100 + 300; the higher order is the first member
    winner, loser = ("Grey wolf", "Black wolf") if roll <= 100 else ("Black wolf", "Grey wolf")
    session = _session(users, entries, seed=seed)
    html = _page(users["qa"], f"/sessions/{session.pk}/preview/")
    assert (f"inclusion group “pack”: rolled {roll:.2f} of a total weight of 400, won by {winner}"
            in _panel(html))
    assert (f"but inclusion group “pack” went to {winner} (the chat's roll of {roll:.2f} of a total weight of 400)"
            in html)
    assert loser not in html[html.index('class="wb in"'):html.index('class="wb out"')]
    assert (f"won inclusion group “pack” by the chat's roll of {roll:.2f} of a total weight of 400"
            in html[html.index('class="wb in"'):html.index('class="wb out"')])


def test_timed_effects_are_worded_from_the_result(users):
    entries = {"0": {"uid": 0, "key": ["lantern"], "comment": "Lantern", "content": "The lantern burns.", "sticky": 3,
                     "scanDepth": 1},
               "1": {"uid": 1, "key": ["lantern"], "comment": "Bell", "content": "A bell rings.", "cooldown": 2},
               "2": {"uid": 2, "key": ["lantern"], "comment": "Owl", "content": "An owl watches.", "delay": 5}}
    session = _session(users, entries, typed="Light the lantern.")
    # the chat has 1 message: the lantern turns sticky until the chat has 1 + 3, the bell cools down until 1 + 2,
    # the owl waits for message 5
    panel = _panel(_page(users["qa"], f"/sessions/{session.pk}/preview/"))
    assert re.search(r'data-timed-kind="sticky">.*?sticky for 3 more messages \(until the chat has 4\)', panel, re.S)
    assert re.search(r'data-timed-kind="cooldown">.*?cooling down for 2 more messages \(until the chat has 3\)',
                     panel, re.S)
    assert "delayed until message 5 (the chat has 1)" in panel
    services.turn_commit(session=session, reply="Done.")
    services.session_update(session=Session.objects.get(pk=session.pk), current_input="What now?")
    # the next generation scans a chat of 3 messages: the carried sticky effect has 1 message left
    panel = _panel(_page(users["qa"], f"/sessions/{session.pk}/preview/"))
    assert "sticky for 1 more message (until the chat has 4)" in panel
    assert 'data-turn="1"' in panel


def test_rolling_again_stores_a_new_seed_without_running_the_engine(users, monkeypatch):
    from assembly import api

    session = _session(users, WOLF, seed=5)
    runs = []
    monkeypatch.setattr(api, "assemble", lambda request: runs.append(request))
    stored = services.session_reroll(session=session)
    assert runs == [] and stored.chance_seed != 5
    assert Session.objects.get(pk=session.pk).chance_seed == stored.chance_seed
    assert services.new_chance_seed(other_than=7) != 7


def test_roll_again_draws_a_new_seed_and_says_what_changed(users, monkeypatch):
    passing, failing = _seed_where(True), _seed_where(False)
    session = _session(users, WOLF, seed=passing)
    monkeypatch.setattr(services, "new_chance_seed", lambda other_than=None: failing)
    client = csrf_client_for(users["designer"])
    page = client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st").content.decode()
    form = page[page.index("data-reroll"):]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    assert 'name="query" value="strategy=builtin-st"' in form  # the form posts the page's own query
    response = client.post(f"/sessions/{session.pk}/preview/reroll/", {"query": "strategy=builtin-st",
                                                                       "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response["Location"] == f"/sessions/{session.pk}/preview/?strategy=builtin-st#chance"
    assert Session.objects.get(pk=session.pk).chance_seed == failing
    page = markup.unescape(client.get(response["Location"]).content.decode())
    assert f"Rolled again with seed {failing}: 1 entry went out: Wolves." in page


def test_roll_again_over_htmx_answers_the_preview_partial(users, monkeypatch):
    passing, failing = _seed_where(True), _seed_where(False)
    session = _session(users, WOLF, seed=failing)
    monkeypatch.setattr(services, "new_chance_seed", lambda other_than=None: passing)
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/preview/reroll/", {"query": ""},
                                                  HTTP_HX_REQUEST="true")
    html = markup.unescape(response.content.decode())
    assert response.status_code == 200 and "<html" not in html and 'id="preview-page"' in html
    assert f"Rolled again with seed {passing}: 1 entry came in: Wolves." in html
    assert f'data-seed="{passing}"' in html and "Wolves hunt at dusk." in html


def test_roll_again_when_nothing_changes_says_so(users, monkeypatch):
    seeds = iter([_seed_where(True), next(s for s in range(1000, 2000) if _draws(s).random() * 100 <= 50)])
    session = _session(users, WOLF, seed=next(seeds))
    monkeypatch.setattr(services, "new_chance_seed", lambda other_than=None: next(seeds))
    html = markup.unescape(client_for(users["designer"]).post(f"/sessions/{session.pk}/preview/reroll/", {
        "query": ""}, HTTP_HX_REQUEST="true").content.decode())
    assert "the same world-info entries are in and out as before" in html


def test_qa_sees_the_rolls_but_cannot_roll_again(users):
    session = _session(users, WOLF, seed=5)
    html = _page(users["qa"], f"/sessions/{session.pk}/preview/")
    assert "data-roll-entry" in _panel(html) and "data-reroll" not in html
    response = client_for(users["qa"]).post(f"/sessions/{session.pk}/preview/reroll/", {"query": ""})
    assert response.status_code == 403
    assert Session.objects.get(pk=session.pk).chance_seed == 5


def test_roll_again_needs_the_csrf_token(users):
    session = _session(users, WOLF, seed=5)
    response = csrf_client_for(users["designer"]).post(f"/sessions/{session.pk}/preview/reroll/", {"query": ""})
    assert response.status_code == 403
    assert Session.objects.get(pk=session.pk).chance_seed == 5


def test_roll_again_is_refused_with_get(users):
    session = _session(users, WOLF, seed=5)
    assert client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/reroll/").status_code == 405


def test_the_chance_panel_in_chinese(users):
    session = _session(users, WOLF, seed=_seed_where(False))
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    panel = _panel(html.content.decode())
    with translation.override("zh-hans"):
        assert translation.gettext("Chance and timed effects") != "Chance and timed effects"
        assert translation.gettext("Chance and timed effects") in panel
    assert "stays out" not in panel and "Probability rolls" not in panel

