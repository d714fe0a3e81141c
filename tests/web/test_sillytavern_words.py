"""SillyTavern's words on SillyTavern work: a SillyTavern-order strategy's editor and its
sessions' previews leave dsh's inner words out or fold them under "dsh host settings"; where the standard or
advanced backend is in play dsh's words link their glossary line (hover text); lists and drop-downs show names,
not slugs; a built-in has one name, its mode another word."""

import re
from html import unescape

import pytest

from preview_app import services as session_services
from strategies_app import services
from strategies_app.models import Preset, Strategy
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db

PRESET = {"prompts": [{"identifier": "main", "name": "Main Prompt", "role": "system", "content": "Keep the lamp."},
                      {"identifier": "chatHistory", "name": "Chat History", "marker": True},
                      {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}


@pytest.fixture
def both(users):
    designer = users["designer"]
    preset = Preset.objects.get(pk=services.preset_import(user=designer, data=PRESET, name="Lamp").id)
    tavern = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"), name="Tavern")
    native = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                    name="Native")
    st_session = session_services.session_create(user=designer, name="Tavern chat", preset=preset,
                                                 current_input="Hello?", host={"core_available": True})
    session_services.strategy_apply(session=st_session, strategy=Strategy.objects.get(slug="builtin-st"))
    native_session = session_services.session_create(user=designer, name="Native chat", preset=preset,
                                                     current_input="Hello?")
    session_services.strategy_apply(session=native_session,
                                    strategy=Strategy.objects.get(slug="builtin-native-slots"))
    for session in (st_session, native_session):
        session_services.turn_commit(session=session, reply="Evening.")
        session.refresh_from_db()
        session_services.session_update(session=session, current_input="Is the lamp lit?")
    return {"tavern": tavern, "native": native, "st_session": st_session, "native_session": native_session}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_sillytavern_strategys_editor_speaks_sillytaverns_words(users, both):
    html = client_for(users["designer"]).get(
        f"/strategies/{both['tavern'].slug}/edit/?session={both['st_session'].pk}").content.decode()
    head = html[:html.index('id="settings-panel"')]
    assert "data-sillytavern-work" in head and "no backend given" not in _text(head)
    assert "advanced backend (core)" not in _text(head)
    modules = html[html.index('id="module-list"'):html.index('id="controls-panel"')]
    assert "<code>native-system</code>" not in modules and 'name="lifetime"' not in modules
    assert "lifetime" not in _text(modules).lower()
    controls = html[html.index('id="controls-panel"'):html.index('id="controls-panel"') + 3000]
    assert "data-dsh-fold" in controls and 'href="/glossary/#runtime-context"' in controls
    placements = re.search(r'<select id="settings-placement".*?</select>', html, re.S).group(0)
    assert "(st)" not in placements and "(native-slots)" not in placements and ">SillyTavern order<" in placements


def test_a_sillytavern_rule_edit_keeps_its_lifetime(users, both):
    tavern = Strategy.objects.get(pk=both["tavern"].pk)
    rule = next(r for r in tavern.draft["rules"] if r["kind"] == "preset")
    answer = client_for(users["designer"]).post(f"/strategies/{tavern.slug}/rules/{rule['id']}/edit/", {
        "version": tavern.version, "session": both["st_session"].pk, "name": "Preset prompts",
        "role": rule.get("role") or "system", "depth": ""})  # what the form posts: no lifetime field
    assert answer.status_code in (200, 303)
    after = next(r for r in Strategy.objects.get(pk=tavern.pk).draft["rules"] if r["id"] == rule["id"])
    assert after.get("lifetime") == rule.get("lifetime") and after.get("name") == "Preset prompts"


def test_a_standard_strategys_editor_links_dshs_words_to_the_glossary(users, both):
    html = client_for(users["designer"]).get(
        f"/strategies/{both['native'].slug}/edit/?session={both['native_session'].pk}").content.decode()
    for slug in ("backend", "delivery", "lifetime", "runtime-context"):
        link = re.search(rf'<a class="term" href="/glossary/#{slug}" title="([^"]+)">', html)
        assert link and len(link.group(1)) > 20, slug  # the hover text is the glossary line


def test_a_sillytavern_sessions_preview_folds_dshs_words(users, both):
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{both['st_session'].pk}/preview/").content.decode()
    summaries = [_text(s) for s in re.findall(r'<details class="parts"[^>]*><summary>(.*?)</summary>', html)]
    assert summaries and not any("trust" in s for s in summaries), summaries
    assert "data-dsh-fold" in html
    projection = client.get(f"/sessions/{both['st_session'].pk}/preview/projection/").content.decode()
    assert "Pre-step copies" not in projection and "System prompt records" not in projection

    html = client.get(f"/sessions/{both['native_session'].pk}/preview/").content.decode()
    assert 'href="/glossary/#trust"' in html and "data-dsh-fold" not in html
    summary = _text(re.search(r'<p class="summary".*?</p>', html, re.S).group(0))
    assert "(preset slots first)" in summary and "(native-slots)" not in summary  # the mode in words
    projection = client.get(f"/sessions/{both['native_session'].pk}/preview/projection/").content.decode()
    assert re.search(r'href="/glossary/#pre-step"[^>]*>Pre-step copies<', projection)


def test_lists_and_choices_show_names_not_slugs(users, both):
    client = client_for(users["designer"])
    sessions = client.get("/sessions/").content.decode()
    row = sessions[sessions.index("Tavern chat"):][:800]
    assert "Preset slots first (advanced)" in row and "<code>builtin-st</code>" not in row
    new = client.get("/sessions/new/").content.decode()
    labels = _text(" ".join(re.findall(r'<label for="id_strategy_\d+">(.*?)</label>', new, re.S)))
    assert "Preset slots first (advanced):" in labels and "builtin-st:" not in labels
    strategies = client.get("/strategies/").content.decode()
    row = strategies[strategies.index('data-strategy="builtin-st"'):].split("</tr>", 1)[0]
    assert "Preset slots first (advanced)" in row and 'data-placement="st">SillyTavern order<' in row
    assert "SillyTavern order (advanced)" not in row  # one name for the built-in, one word for its mode


def test_the_mode_of_sillytavern_work_reads_in_chinese(users, both):
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    html = client.get(f"/strategies/{both['tavern'].slug}/edit/?session={both['st_session'].pk}").content.decode()
    badge = re.search(r"<span class=\"badge\" data-sillytavern-work[^>]*>([^<]*)</span>", html).group(1)
    assert badge == "SillyTavern 顺序"
    strategies = client.get("/strategies/").content.decode()
    assert 'data-placement="st">SillyTavern 顺序<' in strategies


def test_the_new_session_form_folds_dshs_host_settings_while_sillytavern_is_chosen(users):
    client = client_for(users["designer"])
    html = client.get("/sessions/new/").content.decode()  # builtin-st is the first choice
    fold = html[html.index("data-dsh-host-settings"):html.index("</details>", html.index("data-dsh-host-settings"))]
    assert 'name="official_sections"' in fold and 'name="core_available"' not in fold  # the backend stays in view
    answer = client.post("/sessions/new/", {"name": "", "strategy": "builtin-native-roles"})
    served = re.sub(r"<template.*?</template>", "", answer.content.decode(), flags=re.S)  # the script's copy aside
    assert answer.status_code == 400 and "data-dsh-host-settings" not in served


def _head_and_rows(html: str) -> tuple[str, list[str]]:
    table = html[html.index('<table class="request"'):]
    head = _text(table[:table.index("</thead>")])
    return head, re.findall(r'<tbody class="msg [^"]*"[^>]*>.*?</tbody>', table, re.S)  # up to the parts table


def test_a_sillytavern_sessions_request_table_speaks_the_prompt_managers_words(users, both):
    deep = {**PRESET, "prompts": [*PRESET["prompts"], {
        "identifier": "deep", "name": "Deep note", "role": "system", "content": "Mind the wick.",
        "injection_position": 1, "injection_depth": 1}],  # SillyTavern's "in-chat" position, depth 1
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": i, "enabled": True} for i in ("main", "chatHistory", "jailbreak", "deep")]}]}
    preset = Preset.objects.get(pk=services.preset_import(user=users["designer"], data=deep, name="Deep").id)
    session = session_services.session_create(user=users["designer"], name="Deep chat", preset=preset,
                                              current_input="Hello?", host={"core_available": True})
    session_services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    session_services.turn_commit(session=session, reply="Evening.")
    session.refresh_from_db()
    session_services.session_update(session=session, current_input="Is the lamp lit?")
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    head, rows = _head_and_rows(html)
    assert head.split() == ["#", "Role", "Source", "Position", "Tokens"], head
    for row in rows:  # web.md's row markup stays on every row, shown or not
        tag = row[:row.index(">")]
        assert all(f"{hook}=" in tag for hook in ("data-index", "data-role", "data-delivery")), tag
    cells = {unescape(_text(re.search(r'<td class="st-source">(.*?)</td>', row, re.S).group(1))).strip():
             _text(re.search(r'<td class="st-position">(.*?)</td>', row, re.S).group(1)).strip() for row in rows}
    assert cells["Main Prompt main"] == "relative (Prompt Manager order)", cells
    assert cells.get("Deep note deep") == "in-chat @ depth 1", cells
    assert cells.get("jailbreak") == "relative (Prompt Manager order)", cells  # an unnamed prompt: its identifier
    assert cells.get("chat message") == "Chat History marker", cells
    assert cells["the user's input"] == "Chat History marker"
    assert "request-only" not in _text("".join(re.findall(r'<tr class="msg-head">.*?</tr>', html, re.S)))


def test_a_standard_sessions_request_table_keeps_dshs_columns(users, both):
    html = client_for(users["qa"]).get(f"/sessions/{both['native_session'].pk}/preview/").content.decode()
    head, rows = _head_and_rows(html)
    assert head.split() == ["#", "Role", "Delivery", "Region", "History", "entry", "Tokens"], head
    assert rows and 'class="history-entry"' in rows[0] and "st-source" not in html


def test_the_sillytavern_table_reads_in_chinese(users, both):
    client = client_for(users["qa"])
    client.cookies["django_language"] = "zh-hans"
    head, _rows = _head_and_rows(client.get(f"/sessions/{both['st_session'].pk}/preview/").content.decode())
    assert "Source" not in head and "Position" not in head and re.search(r"[\u4e00-\u9fff]", head)


def test_the_preview_summary_names_the_strategy_without_its_id(users, both):
    html = client_for(users["qa"]).get(f"/sessions/{both['st_session'].pk}/preview/").content.decode()
    summary = re.search(r'<p class="summary".*?</p>', html, re.S).group(0)
    assert "Preset slots first (advanced)" in _text(summary)
    assert "builtin-st" not in _text(summary) and "<code>builtin-st</code>" not in summary


@pytest.mark.parametrize(("language", "labels"), [
    ("en", ["Normal", "Continue", "Impersonate", "Swipe", "Regenerate", "Quiet"]),
    ("zh-hans", ["正常", "继续", "代写", "换一版", "重新生成", "后台"])])
def test_the_generation_type_reads_in_sillytaverns_words(users, both, language, labels):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    html = client.get(f"/sessions/{both['st_session'].pk}/preview/").content.decode()
    select = re.search(r'<select name="generation".*?</select>', html, re.S).group(0)
    options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)
    values = [value for value, _label in options if value]
    assert values == ["normal", "continue", "impersonate", "swipe", "regenerate", "quiet"]  # the engine's codes
    shown = [unescape(label) for value, label in options if value]
    assert [label.split(" — ")[0] for label in shown] == labels, shown
    assert not any(re.search(r"\b(normal|continue|impersonate|swipe|regenerate|quiet)\b", s) for s in shown), shown


def test_the_new_session_form_names_the_sillytavern_strategies_its_script_refolds_for(users, both):
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()
    slugs = re.search(r'data-strategy-choice data-sillytavern-strategies="([^"]*)"', html).group(1).split()
    assert "builtin-st" in slugs
    assert "builtin-native-roles" not in slugs and both["native"].slug not in slugs
    template = re.search(r"<template data-dsh-fold-template>(.*?)</template>", html, re.S).group(1)
    assert "<details" in template and "data-dsh-host-settings" in template and "<script" not in html.split(
        "<template", 1)[1].split("</template>", 1)[0]
    assert re.search(r'<script src="/static/js/session_form\.js[^"]*" defer></script>', html)  # no inline script
    assert html.count('data-dsh-fields') == 1 and 'name="official_sections"' in html


DSH_HISTORY_WORDS = ("sent once", "request only", "kept:", "already in history", "snapshot")


@pytest.mark.parametrize(("language", "chat", "built"), [
    ("en", "from the chat", "built for each generation"), ("zh-hans", "来自聊天记录", "每次生成时构建")])
def test_a_sillytavern_sessions_history_totals_and_parts_speak_of_the_chat(users, both, language, chat, built):
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    html = client.get(f"/sessions/{both['st_session'].pk}/preview/").content.decode()
    totals = re.search(r"<dl class=\"history-totals\" data-history-totals>.*?</dl>", html, re.S).group(0)
    chips = dict(re.findall(r'data-history-total="([^"]+)"><dt><span[^>]*>([^<]*)</span>', totals))
    assert chips.get("native") == chat and chips.get("request-only") == built, chips  # the stable code kept
    summaries = [_text(s) for s in re.findall(r'<details class="parts"[^>]*><summary>(.*?)</summary>', html, re.S)]
    assert summaries and any(chat in s for s in summaries) and any(built in s for s in summaries), summaries
    for shown in (_text(totals), *summaries):
        assert not any(word in shown for word in DSH_HISTORY_WORDS), shown
    assert 'data-history-status="request-only"' in html and 'data-history-status="native"' in html


def test_a_sillytavern_sessions_composer_preview_speaks_of_the_chat(users, both):
    html = client_for(users["designer"]).get(f"/sessions/{both['st_session'].pk}/?preview=1").content.decode()
    lines = _text(html[html.index("data-composer-preview"):html.index("</ol>", html.index("data-composer-preview"))])
    assert "from the chat" in lines and not any(word in lines for word in DSH_HISTORY_WORDS), lines


def test_a_standard_sessions_history_totals_keep_dshs_words(users, both):
    html = client_for(users["qa"]).get(f"/sessions/{both['native_session'].pk}/preview/").content.decode()
    totals = _text(re.search(r"<dl class=\"history-totals\" data-history-totals>.*?</dl>", html, re.S).group(0))
    assert "kept: already in history" in totals and "from the chat" not in totals


@pytest.mark.parametrize(("language", "chat", "durable"), [
    ("en", "The chat, oldest first", "durable history"), ("zh-hans", "聊天记录，最早的在前", "持久历史")])
def test_a_sillytavern_sessions_page_calls_its_history_the_chat(users, both, language, chat, durable):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    intro = lambda session: _text(re.search(  # noqa: E731
        r"<p class=\"muted\" data-history-intro>(.*?)</p>", client.get(f"/sessions/{session.pk}/").content.decode(),
        re.S).group(1))
    tavern, native = intro(both["st_session"]), intro(both["native_session"])
    assert chat in tavern and durable not in tavern and "SillyTavern" in tavern
    assert durable in native and chat not in native
