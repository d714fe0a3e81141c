"""Previews build the engine's resources from the rows (`sillytavern.*_model`, one read of each stored file) instead of
the SillyTavern documents of a round trip (`export(import(rows))`, read again by the engine). Proof that nothing
changed: for the demo data and for every shared SillyTavern file imported, alone and merged with other books, the
engine reads the same `Resources` from the new request as from the old one, and assembles the same answer.

`_round_trip_resources` is the old path, kept here as the reference the new one is measured against."""

import json

import pytest
from django.core.management import call_command

from assembly import assemble
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.worldbook import export_worldbook, import_worldbook
from preview_app import services as session_services
from preview_app.models import Session
from preview_app.previews import session_request, session_resources, strategy_document, timed_world_info
from strategies_app import services, sillytavern
from strategies_app.models import Strategy, WorldBook
from tests.web.test_imports import FILE_KINDS, MODELS  # what each shared file is imported as, and its row model

CORE = {"core_available": True}


def _card_lore(session):
    if not session.card_lore or session.character is None:
        return None
    raw = session.character.card_fields.get("character_book")
    if not isinstance(raw, dict) or not raw.get("entries"):
        return None
    names = {raw.get("name"), (session.character.card_fields.get("extensions") or {}).get("world")}
    return export_worldbook(import_worldbook(raw)), {n for n in names if isinstance(n, str) and n}


def _round_trip_worldbook(session):
    chat_book = session.chat_lore
    books = [book for book in session.world_books.all() if chat_book is None or book.pk != chat_book.pk]
    documents = [(str(book.pk), sillytavern.worldbook_document(book, book.entries.all())) for book in books]
    card = _card_lore(session)
    loaded = {book.name for book in books} | ({chat_book.name} if chat_book is not None else set())
    if card is not None and loaded & card[1]:
        card = None
    if card is None and chat_book is None and len(documents) == 1:
        merged = documents[0][1]
    elif card is None and chat_book is None and not documents:
        return None
    else:
        parts = ([("chat", sillytavern.worldbook_document(chat_book, chat_book.entries.all()), {"lore": "chat"})]
                 if chat_book is not None else [])
        parts += [("card", card[0], {"lore": "character"})] if card is not None else []
        parts += [(prefix, document, {}) for prefix, document in documents]
        entries = {f"{prefix}:{key}": {**entry, "uid": f"{prefix}:{key}", **lore}
                   for prefix, document, lore in parts for key, entry in document["entries"].items()}
        if books:
            settings = books[0].settings
        elif chat_book is not None:
            settings = chat_book.settings
        else:
            settings = {k: v for k, v in card[0].items() if k != "entries"}
        merged = {**settings, "entries": entries}
    if session.world_info_activation != "book":
        merged = {**merged, "activation": session.world_info_activation}
    return merged


def _round_trip_resources(session):
    """The old `session_resources`: every row as the SillyTavern JSON of an export."""
    resources = {}
    if session.preset is not None:
        resources["preset"] = sillytavern.preset_document(session.preset, session.preset.entries.all())
    if session.character is not None:
        resources["character"] = sillytavern.character_document(session.character)
    if session.persona is not None:
        resources["persona"] = sillytavern.persona_document(session.persona)
    if session.author_note:
        resources["author_note"] = session.author_note
    if session.extension_prompts:
        resources["extension_prompts"] = session.extension_prompts
    worldbook = _round_trip_worldbook(session)
    if worldbook is not None:
        resources["worldbook"] = worldbook
        state = timed_world_info(session)  # the chat's timed effects, kept as SillyTavern's chat metadata
        if state is not None:
            resources["world_state"] = state
    return resources


def _same_resources(session):
    session = Session.objects.get(pk=session.pk)
    old, new = normalize_resources(_round_trip_resources(session)), normalize_resources(session_resources(session))
    assert new == old
    assert json.dumps(new.model_dump(mode="json")) == json.dumps(old.model_dump(mode="json"))
    return session


def _same_answer(session, strategy):
    """The whole engine answer is the same on both requests (and so byte for byte the same JSON)."""
    request = session_request(session, strategy_document(strategy, strategy.draft))
    rows = _round_trip_resources(session)
    if request.get("api") == "text":  # no chat-completion preset; the templates and text settings are not exported rows
        rows = {**{k: v for k, v in rows.items() if k != "preset"},
                **{k: v for k, v in request["resources"].items() if k not in rows}}
    old = assemble({**request, "resources": rows}).model_dump(mode="json")
    assert json.dumps(assemble(request).model_dump(mode="json")) == json.dumps(old)


def test_the_demo_sessions_read_the_same_resources(users):
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    sessions = list(Session.objects.all())
    assert len(sessions) >= 2
    for session in sessions:
        session = _same_resources(session)
        _same_answer(session, session.applied_strategy or Strategy.objects.get(slug="builtin-st"))
    demo = sessions[0]
    for activation in ("all", "keywords"):
        session_services.session_update(session=demo, world_info_activation=activation, card_lore=True)
        _same_resources(demo)


def _import(user, filename, kind, shared_fixtures):
    raw = (shared_fixtures / "sillytavern" / filename).read_bytes()
    data = raw if raw.startswith(b"\x89PNG") else json.loads(raw)
    report = services.IMPORTERS[kind](user=user, data=data, name=filename)
    return MODELS[kind].objects.get(pk=report.id)


@pytest.mark.parametrize(("filename", "kind"), [(f, k) for f, kinds in FILE_KINDS.items() for k in kinds])
def test_each_shared_file_reads_the_same_resources(shared_fixtures, users, filename, kind):
    row = _import(users["admin"], filename, kind, shared_fixtures)
    fields = {"world_books": [row]} if kind == "worldbook" else {kind: row}
    session = session_services.session_create(user=users["designer"], name=filename, current_input="Hello", host=CORE,
                                              card_lore=kind == "character", **fields)
    session = _same_resources(session)
    _same_answer(session, Strategy.objects.get(slug="builtin-st"))


@pytest.mark.parametrize("activation", ["book", "all", "keywords"])
@pytest.mark.parametrize("chat", [False, True])
def test_merged_books_read_the_same_resources(shared_fixtures, users, activation, chat):
    admin = users["admin"]
    card = _import(admin, "st_card_Seraphina.v2.chara.json", "character", shared_fixtures)
    eldoria = _import(admin, "st_worldinfo_Eldoria.json", "worldbook", shared_fixtures)
    card_book = _import(admin, "st_card_Seraphina.png", "worldbook", shared_fixtures)
    small = WorldBook.objects.get(pk=services.worldbook_import(user=admin, name="Small", data={"entries": {
        "7": {"uid": 7, "key": ["lamp"], "content": "The lamp burns oil.", "position": 0}}}).id)
    preset = _import(admin, "st_cc_preset_Default.json", "preset", shared_fixtures)
    session = session_services.session_create(
        user=users["designer"], name="Merged", current_input="Hello, lamp", host=CORE, character=card, preset=preset,
        world_books=[eldoria, small], card_lore=True, world_info_activation=activation,
        chat_lore=card_book if chat else None)
    session = _same_resources(session)
    _same_answer(session, Strategy.objects.get(slug="builtin-st"))
    book = session_resources(session)["worldbook"]
    prefixes = {str(entry.uid).split(":")[0]: entry.lore for entry in book.entries}
    assert prefixes == {str(eldoria.pk): "global", str(small.pk): "global",
                        **({"chat": "chat"} if chat else {"card": "character"})}  # every merge path is taken
    session_services.session_update(session=session, world_books=[])  # chat lore and the card's book alone
    _same_resources(session)
    session_services.session_update(session=session, chat_lore=None, card_lore=False, world_books=[small])
    _same_resources(session)
