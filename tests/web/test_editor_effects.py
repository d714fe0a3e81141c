"""The designer's workspace on the server side (web.md screen 2): every editor write answers its effect on the session's
request ([data-edit-effect] with the number of changed messages, the changed messages marked, the reason when nothing
changed), rows muted before a move that cannot change anything, tokens on every row, the preview options remembered per
strategy and session, and names in one language."""

import re

import pytest

from strategies_app.models import Strategy
from tests.web.conftest import client_for
from tests.web.test_editor import HTMX, editor  # noqa: F401

pytestmark = pytest.mark.django_db


def _url(strategy, tail=""):
    return f"/strategies/{strategy.slug}/{tail}"


def _effect(html: str) -> tuple[int, str]:
    found = re.search(r'data-edit-effect data-changed-messages="(\d+)" role="status">([^<]*)', html)
    assert found, "no [data-edit-effect] in the answer"
    return int(found.group(1)), found.group(2)


def _write(users, editor_data, tail, data, htmx=True, client=None):  # noqa: F811
    strategy, session = editor_data["strategy"], editor_data["session"]
    fresh = Strategy.objects.get(pk=strategy.pk)
    return (client or client_for(users["designer"])).post(_url(fresh, tail), {
        "version": fresh.version, "session": session.pk, **data}, **(HTMX if htmx else {}))


def test_a_move_that_changes_the_request_counts_and_marks_the_changed_messages(users, editor):  # noqa: F811
    answer = _write(users, editor, "positions/order/", {"row": "preset#jailbreak", "direction": "up"})
    html = answer.content.decode()
    changed, sentence = _effect(html)
    assert answer.status_code == 200 and changed > 0 and "changed in the request" in sentence
    assert html.count('class="message role-') >= 1 and " changed change-" in html and "data-changes=" in html


def test_a_move_without_effect_says_why_in_the_designers_terms(users, editor):  # noqa: F811
    answer = _write(users, editor, "rules/order/", {"row": "history", "direction": "up"})
    changed, sentence = _effect(answer.content.decode())
    assert changed == 0
    assert sentence.startswith("Nothing changed in the request.") and "host places the conversation" in sentence


def test_the_reason_is_shown_before_the_move_on_a_muted_row(users, editor):  # noqa: F811
    html = client_for(users["designer"]).get(_url(editor["strategy"], f"edit/?session={editor['session'].pk}"))
    html = html.content.decode()
    history = re.search(r'<li class="row[^"]*" id="rule-row-history"[^>]*>', html).group(0)
    assert "muted-row" in history and 'data-no-effect="The host places the conversation itself' in history
    rows = re.findall(r'<li class="row[^"]*" id="(?:rule|pos)-row-[^"]+"[^>]*>', html)
    assert rows and all(re.search(r'data-tokens="\d+"', row) for row in rows)
    assert len(re.findall(r'data-token-total', html)) == 1  # one labelled total: the live preview's
    assert re.search(r'data-content-total="\d+"', html) and re.search(r'data-request-total="\d+"', html)


def test_the_no_js_path_puts_the_effect_in_the_notice(users, editor):  # noqa: F811
    client = client_for(users["designer"])
    answer = _write(users, editor, "rules/order/", {"row": "history", "direction": "up"}, htmx=False, client=client)
    assert answer.status_code == 303
    page = client.get(answer["Location"]).content.decode()
    assert "Module order saved" in page and "Nothing changed in the request." in page


def test_the_preview_options_are_remembered_per_strategy_and_session(users, editor):  # noqa: F811
    client = client_for(users["designer"])
    strategy, session = editor["strategy"], editor["session"]
    client.get(_url(strategy, f"edit/?session={session.pk}&model=gpt-4o&generation=impersonate"))
    again = client.get(_url(strategy, "edit/")).content.decode()
    assert 'data-model="gpt-4o" data-generation="impersonate"' in again
    assert '<option value="impersonate" selected>' in again
    other = client.get(_url(editor["others"], "edit/")).content.decode()
    assert 'data-generation=""' in other  # another strategy keeps its own options
    # an unknown generation type is not kept (the default stands), and is no 500
    page = client.get(_url(strategy, f"edit/?session={session.pk}&generation=sideways"))
    assert page.status_code == 200 and 'data-generation=""' in page.content.decode()


def test_names_show_one_language(users, editor):  # noqa: F811
    client = client_for(users["designer"])
    english = client.get("/strategies/").content.decode()
    assert "Roles first (standard)" in english and "身份优先" not in english and "legacy" not in english
    chinese = client.get("/strategies/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert 'lang="zh-hans"' in chinese
    assert "身份优先（标准）" in chinese and "Roles first" not in chinese
    page = client.get("/strategies/builtin-st/edit/").content.decode()
    assert "<h1>Preset slots first (advanced)</h1>" in page and ">SillyTavern order</span>" in page
    assert "advanced backend (core)" not in page.split('id="settings-panel"')[0]  # SillyTavern's words on its work


def test_each_lock_says_how_to_free_it_and_a_slot_lock_has_the_switch(users, editor):  # noqa: F811
    html = client_for(users["designer"]).get(
        _url(editor["strategy"], f"edit/?session={editor['session'].pk}")).content.decode()

    def row(key):
        start = html.index(f'id="pos-row-{key}"')
        return html[start:html.index("</li>", start)]

    description = row("character#description")
    assert "disable that marker in the preset" in description and 'name="source" value="manual"' in description
    persona_row = row("persona#persona")  # pulled into the main prompt by {{persona}}
    assert "remove the macro from the prompt that pulls it in" in persona_row
    assert 'name="source" value="manual"' not in persona_row


def test_a_card_field_that_overrides_a_preset_prompt_is_freed_in_the_card_not_by_a_macro(users, editor):  # noqa: F811
    from preview_app import services as session_services
    from strategies_app import services
    from strategies_app.models import Character, Preset
    from tests.web.test_editor import LOCKING_PRESET

    admin = users["admin"]
    card = services.character_import(user=admin, data={"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "An engineer.", "post_history_instructions": "Answer as Ada, in one line."}})
    preset = services.preset_import(user=admin, data=LOCKING_PRESET, name="Preset with its own jailbreak")
    session = session_services.session_create(
        user=users["designer"], name="Card overrides", current_input="Hello", preset=Preset.objects.get(pk=preset.id),
        character=Character.objects.get(pk=card.id))
    html = client_for(users["designer"]).get(
        _url(editor["strategy"], f"edit/?session={session.pk}")).content.decode()
    start = html.index('id="pos-row-character#phi"')
    phi_row = html[start:html.index("</li>", start)]
    assert "replaces the preset prompt" in phi_row  # the card's field overrides the preset's jailbreak
    assert "leave this card field empty, so the preset prompt it overrides keeps its own text" in phi_row
    assert "remove the macro" not in phi_row


def test_a_switch_whose_output_a_slot_holds_says_the_slot_still_places_it(users, editor):  # noqa: F811
    answer = _write(users, editor, "rules/persona/edit/", {"enabled": ["false"]})
    changed, sentence = _effect(answer.content.decode())
    # the main prompt pulls the persona in through {{persona}}: switching the module off leaves the request as it was
    assert changed == 0 and "is held by a preset slot (1 item), and the slot still places it." in sentence
