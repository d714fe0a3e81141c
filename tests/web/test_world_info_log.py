"""The preview's world-info log (engine.md §5) numbers messages as the request table does (the key's message as
its request row, the current input, or scanned history the request left out) and says where each active entry
landed (request rows and position), in both languages."""

import re
from html import unescape

import pytest
from django.utils import translation

from assembly import assemble
from preview_app import services
from preview_app.previews import session_preview
from preview_app.world_info_log import world_book_log
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy, WorldBook
from tests.web.conftest import client_for

CHAT = [("assistant", "Welcome, traveller."), ("user", "Where am I?"),
        ("assistant", "In the glade, where you are safe."), ("user", "Thank you.")]


def _session(users, *, prompts, entries, chat, typed, **preset_options):
    admin = users["admin"]
    preset = strategy_services.preset_import(user=admin, data={**preset_options, "prompts": prompts}, name="Forest")
    book = strategy_services.worldbook_import(user=admin, name="Forest", data={"scan_depth": 10, "entries": entries})
    session = services.session_create(user=users["designer"], name="Glade", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      world_books=[WorldBook.objects.get(pk=book.id)],
                                      world_info_activation="keywords", current_input=typed)
    for role, text in chat:
        services.event_append(session=session, role=role, content=text)
    return services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))


@pytest.fixture
def glade(users):
    """builtin-st: "glade" sits in history message 3 (request row #4), "wolf" in the input (row #7); the wolves'
    entry goes in at depth 2, the glade's before the character description, the dragon's stays out."""
    return _session(users, prompts=[
        {"identifier": "main", "role": "system", "content": "You guard the forest."},
        {"identifier": "worldInfoBefore", "marker": True},
        {"identifier": "worldInfoAfter", "marker": True},
        {"identifier": "chatHistory", "marker": True}], entries={
        "0": {"uid": 0, "key": ["glade"], "comment": "Glade", "content": "The glade is a refuge.", "position": 0},
        "1": {"uid": 1, "key": ["wolf"], "comment": "Wolves", "content": "Wolves hunt at dusk.", "position": 4,
              "depth": 2},
        "2": {"uid": 2, "key": ["dragon"], "comment": "Dragon", "content": "No dragons here.", "position": 1}},
        chat=CHAT, typed="Any wolf about?")


def _log(html):
    """(uid, state, reason, landed rows, landed words) per entry of the world-info panel."""
    panel = html[html.index('id="wb-title"'):html.index('id="rcc-title"')]
    return re.findall(r'data-wb-entry="([^"]+)" data-wb-state="(in|out)"><strong>[^<]+</strong> '
                      r'<span class="muted small">([^<]+)</span>(?: <div class="wb-landed small" '
                      r'data-wb-rows="([^"]*)">([^<]*)</div>)?', panel)


def _rows(html):
    """(request row number, content) of the request table."""
    return [(int(index), content) for index, content in
            re.findall(r'data-index="(\d+)".*?<div class="content[^"]*">([^<]*)', html, re.S)]


def test_the_log_names_the_request_rows_the_keys_were_found_in_and_where_each_entry_landed(users, glade):
    html = client_for(users["qa"]).get(f"/sessions/{glade.pk}/preview/").content.decode()
    result = session_preview(glade)
    contents = [m.content for m in result.request.messages]
    glade_row, wolf_row = contents.index("In the glade, where you are safe."), contents.index("Any wolf about?")
    before_row, depth_row = contents.index("The glade is a refuge."), contents.index("Wolves hunt at dusk.")
    assert (glade_row, wolf_row, before_row, depth_row) == (4, 7, 1, 5)  # the engine's own numbering is 2 and 4
    assert [a.reason.matched_in.index for a in result.world_info.active] == [2, 4]
    assert _log(html) == [
        ("0", "in", "key “glade” found in message #4", "1", "→ in #1 (before the character description)"),
        ("1", "in", "key “wolf” found in message #7 (the current input)", "5", "→ at depth 2: #5"),
        ("2", "out", "no primary key found in the messages it scans", "", ""),
    ]
    assert "Messages are numbered as in the request table." in html


def test_the_log_is_in_chinese(users, glade):
    client = client_for(users["qa"])
    client.cookies["django_language"] = "zh-hans"
    html = client.get(f"/sessions/{glade.pk}/preview/").content.decode()
    log = _log(html)
    assert [entry[2] for entry in log] == ["在消息 #4中找到关键词“glade”", "在消息 #7（当前输入）中找到关键词“wolf”",
                                           "在它扫描的消息中没有找到主关键词"]
    assert [entry[4] for entry in log[:2]] == ["→ 在 #1（角色描述之前）", "→ 深度 2：#5"]


def test_a_key_in_history_the_request_left_out_says_so(users):
    """SillyTavern's budget (a 90-token context) drops the oldest messages; the scan still read the first one."""
    session = _session(users, prompts=[
        {"identifier": "main", "role": "system", "content": "You guard the forest."},
        {"identifier": "worldInfoBefore", "marker": True},
        {"identifier": "chatHistory", "marker": True}], entries={
        "0": {"uid": 0, "key": ["glade"], "comment": "Glade", "content": "The glade is a refuge.", "position": 0}},
        chat=[("assistant", "Long ago the glade was found. " + "word " * 40), ("user", "Where am I? " + "x " * 20),
              ("assistant", "Here." + " y" * 20), ("user", "Thank you.")], typed="Go on.",
        openai_max_context=90, openai_max_tokens=10)
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    assert "Long ago the glade" not in "".join(m.content for m in session_preview(session).request.messages)
    assert _log(html) == [("0", "in", "key “glade” found in a history message not in this request (scanned "
                                      "history outside the window)", "1", "→ in #1 (before the character description)")]


def test_outlet_entries_land_where_their_outlet_is_and_recursion_names_the_entry(users):
    """The glade's text names the dragon, so the dragon is found by recursion in the glade's entry. Both are outlet
    entries: "lore" is filled in the main prompt (row #0); nothing asks for "unused", so its entry is sent nowhere."""
    session = _session(users, prompts=[
        {"identifier": "main", "role": "system", "content": "You guard the forest. {{outlet::lore}}"},
        {"identifier": "chatHistory", "marker": True}], entries={
        "0": {"uid": 0, "key": ["glade"], "comment": "Glade", "content": "A dragon sleeps in the glade.",
              "position": 7, "outletName": "lore"},
        "2": {"uid": 2, "key": ["dragon"], "comment": "Dragon", "content": "It is old.", "position": 7,
              "outletName": "unused"}},
        chat=CHAT, typed="Hello.")
    result = session_preview(session)
    assert result.request.messages[0].content == "You guard the forest. A dragon sleeps in the glade."
    by_uid = {entry.uid: entry for entry in world_book_log(result).active}
    assert by_uid["0"].reason == "key “glade” found in message #3"
    assert (by_uid["0"].rows, by_uid["0"].landed) == ((0,), "in #0 (filling the outlet “lore”)")
    assert by_uid["2"].reason == "key “dragon” found in the content of entry Glade (recursion)"
    assert (by_uid["2"].rows, by_uid["2"].landed) == ((), "not sent: it is in no request message")


def test_an_outlet_entry_lands_in_the_prompt_that_filled_it_not_where_its_words_also_stand(users):
    """The typed message says the entry's very words: only the main prompt, which filled the outlet, holds it."""
    session = _session(users, prompts=[
        {"identifier": "main", "role": "system", "content": "You guard the forest. {{outlet::lore}}"},
        {"identifier": "chatHistory", "marker": True}], entries={
        "0": {"uid": 0, "key": ["glade"], "comment": "Glade", "content": "The glade is quiet.", "position": 7,
              "outletName": "lore"}},
        chat=CHAT, typed="The glade is quiet.")
    result = session_preview(session)
    assert [m.content for m in result.request.messages][::len(result.request.messages) - 1] == [
        "You guard the forest. The glade is quiet.", "The glade is quiet."]
    entry = world_book_log(result).active[0]
    assert (entry.rows, entry.landed) == ((0,), "in #0 (filling the outlet “lore”)")


def test_the_host_chosen_entries_of_another_backend_say_where_they_landed(world, users):
    """The world fixture's standard-backend strategy, activation "all": the gate entry is in the system message."""
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    assert _log(html) == [("1", "in", "enabled: chosen by the host", "0",
                           "→ in #0 (before the character description)")]
    assert "The gate is shut at night." in session_preview(world["session"]).request.messages[0].content


def test_a_host_chosen_entry_on_the_standard_backend_says_the_depth_it_asked_for_not_depth_zero(users):
    admin = users["admin"]
    preset = strategy_services.preset_import(user=admin, name="Coast", data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True}]})
    book = strategy_services.worldbook_import(user=admin, name="Coast", data={"entries": {"1": {
        "uid": 1, "key": ["storm"], "comment": "Storm warning", "content": "A storm is coming.", "position": 4,
        "depth": 2}}})
    session = services.session_create(user=users["designer"], name="Coast", host={"core_available": True},
                                      preset=Preset.objects.get(pk=preset.id),
                                      world_books=[WorldBook.objects.get(pk=book.id)], current_input="Any news?")
    for role, text in CHAT:
        services.event_append(session=session, role=role, content=text)
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    [(uid, state, _reason, rows, landed)] = _log(html)
    assert (uid, state) == ("1", "in") and rows
    assert "depth 0" not in landed
    assert unescape(landed) == f"→ asked for depth 2; this backend does not insert into the chat, so it went to #{rows}"


def test_the_stateless_api_numbers_the_chat_as_its_request_does(users):
    """/api/assemble: the engine gives every message an id (h1, h2, ...), so the scanned message is found in the
    request; a key in a scan-data field names the field."""
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"character": {"name": "Ada", "description": "She lives by the lake."},
                                     "worldbook": {"activation": "keywords", "entries": [
                                         {"uid": 1, "keys": ["glade"], "content": "The glade.", "position": "before"},
                                         {"uid": 2, "keys": ["lake"], "content": "The lake.", "position": "before",
                                          "match_character_description": True}]}},
                       "conversation": {"history": [{"role": "user", "content": "the glade"}], "input": []}})
    source = next(a for a in result.world_info.active if a.uid == 1).reason.matched_in
    assert (source.index, source.message_id) == (0, "h1")
    rows = [i for i, m in enumerate(result.request.messages) if "history:h1" in m.parts]
    with translation.override("en"):
        reasons = {entry.uid: entry.reason for entry in world_book_log(result).active}
    assert reasons == {"1": f"key “glade” found in message #{rows[0]}",
                       "2": "key “lake” found in the character description"}


@pytest.mark.parametrize(("language", "glade_", "host"), [
    ("en", "key “glade” found in message #4", "enabled: chosen by the host"),
    ("zh-hans", None, "已启用：由宿主选择")])
def test_the_parts_tables_say_why_an_entry_is_in_as_the_panel_does(glade, world, users, language, glade_, host):
    """The engine's own activation line is English: the parts table shows the panel's words, in the page's language."""
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    html = client.get(f"/sessions/{glade.pk}/preview/").content.decode()
    panel = {uid: reason for uid, _state, reason, *_ in _log(html)}
    parts = dict(re.findall(r'data-part-id="worldbook:(\d+)".*?data-activation>[^<:：]*(?:: |：)([^<]*)</div>', html, re.S))
    assert parts and all(parts[uid] == panel[uid] for uid in parts), (parts, panel)
    if glade_:
        assert parts["0"] == glade_
    html = client.get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    assert re.search(rf'data-part-id="worldbook:1".*?data-activation>[^<:：]*(?:: |：){host}</div>', html, re.S)


def test_a_constant_entry_left_out_by_the_budget_is_not_said_to_have_a_key():
    from assembly.sillytavern.worldinfo_models import SkipReason
    from preview_app.world_info_log import _skip_reason

    reason = SkipReason(kind="over_budget", message="over budget", budget=38, tokens=50)
    words = _skip_reason(reason, None, {})
    assert words.startswith("active without a key (constant or @@activate), but the world info budget (38")
    assert "“”" not in words


def test_a_big_books_unremarkable_entries_out_are_counted_past_the_first_hundred_and_listed_on_request(users):
    # 150 entries whose keys are not in the chat, and one that matches but whose chance is 0: it stays listed
    entries = {str(i): {"uid": i, "key": [f"rune{i}"], "comment": f"Rune {i}", "content": f"Rune {i}.", "position": 0}
               for i in range(150)}
    entries["150"] = {"uid": 150, "key": ["glade"], "comment": "Unlucky", "content": "Never.", "position": 0,
                      "probability": 0, "useProbability": True}
    session = _session(users, prompts=[{"identifier": "worldInfoBefore", "marker": True},
                                       {"identifier": "chatHistory", "marker": True}],
                       entries=entries, chat=CHAT, typed="Hello.")
    client = client_for(users["qa"])
    page = client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st").content.decode()
    listed = {uid for uid, state, *_ in _log(page) if state == "out"}
    assert len(listed) == 101 and "150" in listed  # the first 100 of the plain ones, and the one out by chance
    assert "Out (151)" in page
    assert 'data-wb-unlisted="50"' in page and "And 50 more entries whose keys were not found" in page
    link = unescape(re.search(r'href="(\?[^"]*wb=all[^"]*)"', page).group(1))
    assert link == "?strategy=builtin-st&wb=all#wb-title"
    every = client.get(f"/sessions/{session.pk}/preview/{link.split('#')[0]}").content.decode()
    assert len([uid for uid, state, *_ in _log(every) if state == "out"]) == 151
    assert "data-wb-unlisted" not in every
