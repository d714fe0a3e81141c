"""The stored SillyTavern files keep their key order on every database (strategies_app.models.KeyOrderJSONField):
PostgreSQL's jsonb orders an object's keys by length, so a file kept as jsonb would export with its settings
shuffled. These tests run on SQLite and, in CI, on PostgreSQL, where a plain JSONField fails them."""

import json

import pytest
from django.db import connection

from assembly.sillytavern.card import export_character, import_character
from assembly.sillytavern.preset import export_preset, import_preset
from assembly.sillytavern.preset_secrets import strip_preset_secrets
from preview_app.models import Session
from strategies_app.models import Character, Preset, PromptEntry, RegexScript, WorldBook, WorldBookEntry
from tests.web.conftest import client_for
from tests.web.test_imports import upload

# Keys whose written order is not jsonb's (shorter keys first): "n" and "seed" would come before "top_p".
WRITTEN = {"top_p": 1, "n": 1, "seed": -1, "extensions": {"world": "Eldoria", "fav": False, "depth_prompt": {
    "prompt": "", "depth": 4, "role": "system"}}, "alternate_greetings": [{"zeta": 1, "a": 2}]}


def _rows():
    preset = Preset.objects.create(name="p", options=WRITTEN)
    book = WorldBook.objects.create(name="b", settings=WRITTEN)
    return [
        (preset, "options"),
        (PromptEntry.objects.create(preset=preset, identifier="main", prompt_fields=WRITTEN), "prompt_fields"),
        (Character.objects.create(name="c", card_fields=WRITTEN), "card_fields"),
        (book, "settings"),
        (WorldBookEntry.objects.create(book=book, entry_fields=WRITTEN), "entry_fields"),
        (RegexScript.objects.create(find_regex="x", script_fields=WRITTEN), "script_fields"),
    ]


def test_every_stored_file_field_reads_back_in_its_written_key_order_at_every_depth(users):
    rows = _rows()
    rows.append((Session.objects.create(name="s", owner=users["designer"], chat_file=WRITTEN), "chat_file"))
    for row, field in rows:
        read = type(row).objects.get(pk=row.pk)
        assert json.dumps(getattr(read, field)) == json.dumps(WRITTEN), (type(row).__name__, field)
        values = type(row).objects.filter(pk=row.pk).values_list(field, flat=True)
        assert json.dumps(values[0]) == json.dumps(WRITTEN), (type(row).__name__, field)


@pytest.mark.parametrize("stored", ['{"seed": -1, "n": 1}', '[["seed", -1], ["n", 1]]'],
                         ids=["an object", "its pairs"])
def test_a_row_written_before_reads_as_it_was_stored(users, stored):
    preset = Preset.objects.create(name="p")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Preset._meta.db_table} SET options = %s WHERE id = %s", [stored, preset.pk])
    assert Preset.objects.get(pk=preset.pk).options == {"seed": -1, "n": 1}


def test_a_preset_and_a_card_export_as_the_engine_writes_the_file_on_every_database(shared_fixtures, users):
    """The export from the stored rows is, key for key and in order, what the engine writes from the file itself."""
    client = client_for(users["admin"])
    for kind, filename, written in (
            ("preset", "st_cc_preset_Default.json", lambda raw: strip_preset_secrets(export_preset(import_preset(raw)))[0]),
            ("character", "st_card_Seraphina.v3.ccv3.json", lambda raw: export_character(import_character(raw)))):
        raw = (shared_fixtures / "sillytavern" / filename).read_bytes()
        pk = upload(client, kind, raw, filename).json()["id"]
        exported = client.get(f"/api/resources/{kind}/{pk}/export")
        assert exported.content.decode() == json.dumps(written(json.loads(raw)), ensure_ascii=False), kind
