"""Real files are messier than our fixtures (quality.md, Bad input): each field of the real SillyTavern files, in
turn, given a value of another JSON type is kept or refused by the import naming the field (never a 500), and what
was kept exports and previews in a session without a 500. Deterministic: the file's fields (the first three items of
a list; at most `MAX_FIELDS`, evenly spread), each given a scalar and a container in turn."""

import json

import pytest

from preview_app import services as session_services
from preview_app.models import Session
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook
from tests.web.conftest import client_for
from tests.web.test_imports import upload

MAX_FIELDS = 120  # a file's fields taken, evenly spread (the settings file has 462)
# Each field gets a scalar and a container of another type, in turn.
SCALARS = (None, "", "text", 0, -1, 1.5, 10**30, True, "{{random}}")
CONTAINERS = ([], {}, [None], {"a": 1}, [1, "a"])
FILES = [("st_cc_preset_Default.json", "preset"), ("st_card_Seraphina.v3.ccv3.json", "character"),
         ("st_card_Seraphina.v2.chara.json", "character"), ("st_worldinfo_Eldoria.json", "worldbook"),
         ("st_default_settings.json", "persona")]
ROWS = {"preset": Preset, "character": Character, "worldbook": WorldBook, "persona": Persona}


def _fields(value, path=()):
    """Every field's path, parents before children (the first three items of a list)."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _fields(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            yield from _fields(item, (*path, index))


def _with(document, path, value):
    changed = json.loads(json.dumps(document))
    parent = changed
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return changed


def _use(session, kind, row):
    if kind == "worldbook":
        session.world_books.set([row])
    else:
        Session.objects.filter(pk=session.pk).update(**{kind: row, "card_lore": kind == "character"})


@pytest.mark.parametrize(("filename", "kind"), FILES)
def test_each_field_of_another_type_is_kept_or_refused_and_what_is_kept_previews(shared_fixtures, world, users,
                                                                                  filename, kind):
    document = json.loads((shared_fixtures / "sillytavern" / filename).read_bytes())
    fields = list(_fields(document))
    fields = [fields[index * len(fields) // MAX_FIELDS] for index in range(min(MAX_FIELDS, len(fields)))]
    client, session = client_for(users["admin"]), world["session"]
    session_services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    answers = set()
    changes = [(path, value) for index, path in enumerate(fields)
               for value in (SCALARS[index % len(SCALARS)], CONTAINERS[index % len(CONTAINERS)])]
    for path, value in changes:
        imported = upload(client, kind, json.dumps(_with(document, path, value)).encode(), filename)
        answers.add(imported.status_code)
        assert imported.status_code in (201, 400, 422), (path, value, imported.content[:300])
        if imported.status_code != 201:
            assert "path" in imported.json()["detail"], (path, value)  # the refusal names the field
            continue
        pk = imported.json()["id"]
        assert client.get(f"/api/resources/{kind}/{pk}/export").status_code == 200, (path, value)
        _use(session, kind, ROWS[kind].objects.get(pk=pk))
        preview = client.get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st")
        assert preview.status_code in (200, 400), (path, value, preview.content[:300])
    assert 201 in answers  # most of a file's fields read on: SillyTavern loads what it can
