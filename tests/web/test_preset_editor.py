"""The preset editor (SillyTavern's Prompt Manager as a page): prompts in order with their switch, role and position,
markers shown as markers, macros marked, the settings that change assembly; saving stores a new preset and leaves
the stored one (and its sessions) unchanged; QA reads but never saves; bad input names the field."""

import importlib

import pytest

from strategies_app import services as strategy_services
from strategies_app.models import Preset
from tests.web.conftest import client_for


@pytest.fixture
def lamp(users):
    report = strategy_services.preset_import(user=users["admin"], name="Lamp", data={
        "names_behavior": 2,
        "prompts": [
            {"identifier": "main", "name": "Main Prompt", "role": "system", "content": "You are {{char}}."},
            {"identifier": "chatHistory", "name": "Chat History", "marker": True},
            {"identifier": "nudge", "name": "Nudge", "role": "system", "content": "Stay <b>brief</b>.",
             "injection_position": 1, "injection_depth": 2, "injection_order": 50}]})
    return Preset.objects.get(pk=report.id)


def _form(preset, **changes):
    data = {"name": "Lamp, user nudge"}
    for entry in preset.entries.all():
        key = f"p{entry.pk}-"
        fields = entry.prompt_fields
        data.update({key + "position": str(entry.position), key + "role": entry.role, key + "content": entry.content,
                     key + "depth": str(fields.get("injection_depth", 4)),
                     key + "order": str(fields.get("injection_order", 100))})
        if entry.enabled:
            data[key + "enabled"] = "1"
        if fields.get("injection_position") == 1:
            data[key + "in_chat"] = "1"
    data.update(changes)
    return data


def test_the_page_shows_the_prompt_manager(users, lamp):
    html = client_for(users["qa"]).get(f"/resources/presets/{lamp.pk}/edit/").content.decode()
    assert html.index('data-prompt="main"') < html.index('data-prompt="chatHistory"') < html.index('data-prompt="nudge"')
    assert 'data-prompt="chatHistory" data-marker="true"' in html and "data-marker-badge" in html
    assert '<mark class="macro">{{char}}</mark>' in html
    assert "Stay &lt;b&gt;brief&lt;/b&gt;." in html  # content is text, never markup
    assert "Character Names Behavior <code class=\"muted small\">names_behavior</code>" in html  # SillyTavern's label
    assert "Save a new revision" not in html  # QA reads only


def test_qa_sees_the_prompt_managers_controls_disabled_and_a_read_only_note(users, lamp):
    html = client_for(users["qa"]).get(f"/resources/presets/{lamp.pk}/edit/").content.decode()
    fieldset = html[html.index('<fieldset class="readonly" disabled>'):html.index("</fieldset>")]
    assert 'name="p' in fieldset and "<select" in fieldset and 'type="checkbox"' in fieldset  # every control inside
    assert html.count('name="p') == fieldset.count('name="p')
    assert "Your role can read presets but not change them." in html
    assert "Saving stores a new revision" not in html


def test_a_designer_edits_the_prompt_manager_with_live_controls(users, lamp):
    html = client_for(users["designer"]).get(f"/resources/presets/{lamp.pk}/edit/").content.decode()
    assert "<fieldset" not in html and "disabled" not in html
    assert "Your role can read presets" not in html
    assert "Saving stores a new revision" in html and "Save a new revision" in html


def test_saving_stores_a_new_preset_and_leaves_the_stored_one(users, lamp):
    ids = {e.identifier: e.pk for e in lamp.entries.all()}
    client = client_for(users["designer"])
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{
        f"p{ids['nudge']}-role": "user", f"p{ids['nudge']}-depth": "0", f"p{ids['nudge']}-position": "0",
        f"p{ids['main']}-position": "1", f"p{ids['chatHistory']}-position": "2"}), follow=True)
    assert "Saved as revision 2, “Lamp, user nudge”" in answer.content.decode()
    saved = Preset.objects.get(name="Lamp, user nudge")
    edited = saved.entries.get(identifier="nudge")
    assert edited.role == "user" and edited.prompt_fields["injection_depth"] == 0
    assert [e.identifier for e in saved.entries.filter(in_order=True).order_by("position")] == [
        "nudge", "main", "chatHistory"]
    assert lamp.entries.get(identifier="nudge").role == "system"  # the stored preset is unchanged


def test_bad_input_names_the_prompt_as_its_row_does_and_stores_nothing(users, lamp):
    nudge = lamp.entries.get(identifier="nudge")
    client = client_for(users["designer"])
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{f"p{nudge.pk}-role": "narrator"}))
    html = answer.content.decode()
    assert answer.status_code == 400 and "Role of “Nudge”: expected one of system, user, assistant" in html
    assert "nudge.role" not in html
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{f"p{nudge.pk}-depth": "-1"}))
    assert answer.status_code == 400 and "Depth of “Nudge”: expected a whole number from 0 to 10000" in (
        answer.content.decode())
    assert Preset.objects.count() == 1


def test_a_refusal_adds_the_identifier_where_two_prompts_share_a_name_and_escapes_the_name(users):
    report = strategy_services.preset_import(user=users["admin"], name="Twins", data={"prompts": [
        {"identifier": "first", "name": "<i>Twin</i>", "role": "system", "content": "One."},
        {"identifier": "second", "name": "<i>Twin</i>", "role": "system", "content": "Two."},
        {"identifier": "solo", "name": "Solo", "role": "system", "content": "Three."}]})
    twins = Preset.objects.get(pk=report.id)
    second = twins.entries.get(identifier="second")
    client = client_for(users["designer"])
    html = client.post(f"/resources/presets/{twins.pk}/edit/",
                       _form(twins, **{f"p{second.pk}-order": "x"})).content.decode()
    assert "Order of “&lt;i&gt;Twin&lt;/i&gt;” (<code>second</code>): expected a whole number" in html
    solo = twins.entries.get(identifier="solo")
    html = client.post(f"/resources/presets/{twins.pk}/edit/",
                       _form(twins, **{f"p{solo.pk}-role": "narrator"})).content.decode()
    assert "Role of “Solo”: expected" in html and "<code>solo</code>:" not in html


def test_qa_may_not_save(users, lamp):
    answer = client_for(users["qa"]).post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp))
    assert answer.status_code == 403 and Preset.objects.count() == 1


@pytest.fixture
def lamp_session(users, lamp):
    from preview_app import services as session_services

    return session_services.session_create(user=users["designer"], name="Lamp room", preset=lamp,
                                           current_input="Is the lamp lit?", host={"core_available": True})


def _effect(html: str) -> tuple[int, str]:
    import re

    found = re.search(r'data-edit-effect data-changed-messages="(\d+)" role="status">([^<]*)', html)
    assert found, "no [data-edit-effect] on the page"
    return int(found.group(1)), found.group(2)


def test_each_save_is_a_numbered_revision_of_the_same_preset(users, lamp):
    from strategies_app.preset_editor import preset_lineage
    from strategies_app.sillytavern import preset_document

    client = client_for(users["designer"])
    client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, name="", note="first try"))
    second = Preset.objects.get(name="Lamp #2")
    client.post(f"/resources/presets/{second.pk}/edit/", _form(second, name=""))
    third = Preset.objects.get(name="Lamp #3")
    assert preset_lineage(second) == {"of": lamp.pk, "from": lamp.pk, "number": 2, "note": "first try"}
    assert preset_lineage(third) == {"of": lamp.pk, "from": second.pk, "number": 3, "note": ""}
    html = client.get(f"/resources/presets/{third.pk}/edit/").content.decode()
    assert 'data-preset-revision="3"' in html and "Revision 3 of this preset." in html
    assert html.index(">Lamp</a>") < html.index(">Lamp #2</a>") < html.index('aria-current="page">Lamp #3<')
    assert "studio_revision" not in preset_document(third, third.entries.all())  # never exported nor sent
    assert (second.revision_of, third.revision_of, Preset.objects.get(pk=lamp.pk).revision_of) == (lamp.pk, lamp.pk,
                                                                                                  None)


def test_revisions_saved_before_the_line_had_its_column_are_found_after_the_migration(users, lamp):
    """Presets edited before `revision_of` existed keep their line in their options' record only; the migration
    reads it into the column the revisions are looked up by."""
    from django.apps import apps

    from strategies_app.preset_editor import preset_revisions

    fill_revision_of = importlib.import_module("strategies_app.migrations.0007_key_order_json").fill_revision_of
    older = Preset.objects.create(name="Lamp #2", options={**lamp.options, "studio_revision": {
        "of": lamp.pk, "from": lamp.pk, "number": 2, "note": ""}})
    odd = Preset.objects.create(name="Odd", options={"studio_revision": {"of": "x"}})
    assert preset_revisions(older) == [lamp]  # not found by the column yet
    fill_revision_of(apps, None)
    assert preset_revisions(older) == [lamp, older]
    assert Preset.objects.get(pk=odd.pk).revision_of is None


def test_saving_states_the_effect_on_the_chosen_session(users, lamp, lamp_session):
    ids = {e.identifier: e.pk for e in lamp.entries.all()}
    client = client_for(users["designer"])
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{
        "session": str(lamp_session.pk), f"p{ids['main']}-role": "user"}), follow=True)
    html = answer.content.decode()
    changed, sentence = _effect(html)
    assert changed >= 1 and "with a new role" in sentence, sentence
    assert "Compared with “Lamp”, the revision it was edited from, on “Lamp room”" in html


def test_a_change_the_request_does_not_show_says_nothing_changed_and_why(users, lamp, lamp_session):
    ids = {e.identifier: e.pk for e in lamp.entries.all()}
    form = _form(lamp, **{"session": str(lamp_session.pk), f"p{ids['nudge']}-content": "Stay very brief."})
    del form[f"p{ids['nudge']}-enabled"]  # switched off: its new text is never sent
    changed, sentence = _effect(client_for(users["designer"]).post(
        f"/resources/presets/{lamp.pk}/edit/", form, follow=True).content.decode())
    assert changed >= 1  # switching it off removed it
    second = Preset.objects.get(name="Lamp, user nudge")
    form = _form(second, name="again", session=str(lamp_session.pk))
    nudge = second.entries.get(identifier="nudge")
    form[f"p{nudge.pk}-content"] = "Something else entirely."
    changed, sentence = _effect(client_for(users["designer"]).post(
        f"/resources/presets/{second.pk}/edit/", form, follow=True).content.decode())
    assert changed == 0 and sentence.startswith("Nothing changed in the request.") and "switched off" in sentence


def test_bad_input_names_the_prompt_in_chinese_on_a_chinese_page(users, lamp):
    nudge = lamp.entries.get(identifier="nudge")
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{f"p{nudge.pk}-role": "narrator"}))
    html = answer.content.decode()
    assert answer.status_code == 400 and "“Nudge”的身份：应为 <code>system, user, assistant</code> 之一" in html
    answer = client.post(f"/resources/presets/{lamp.pk}/edit/", _form(lamp, **{f"p{nudge.pk}-depth": "-1"}))
    assert answer.status_code == 400 and "“Nudge”的深度：应为 0 到 10000 之间的整数" in answer.content.decode()
    assert Preset.objects.count() == 1
