"""A session's world info: SillyTavern's keyword scan or every enabled entry, and the character card's own world
book used as character lore (sillytavern.md §7.2), with the real Seraphina card, whose embedded book is Eldoria."""

import json

import pytest

from preview_app import services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Character, Preset, WorldBook
from tests.web.conftest import client_for


@pytest.fixture
def seraphina(users, shared_fixtures):
    folder = shared_fixtures / "sillytavern"
    admin = users["admin"]
    card = strategy_services.character_import(user=admin, data=(folder / "st_card_Seraphina.png").read_bytes())
    preset = strategy_services.preset_import(
        user=admin, data=json.loads((folder / "st_cc_preset_Default.json").read_text(encoding="utf-8")),
        name="Default")
    return {"character": Character.objects.get(pk=card.id), "preset": Preset.objects.get(pk=preset.id),
            "folder": folder}


def session_with(users, seraphina, text, **fields):
    session = services.session_create(user=users["designer"], name="Glade", host={"core_available": True},
                                      character=seraphina["character"], preset=seraphina["preset"],
                                      current_input=text, **fields)
    return client_for(users["qa"]).get(f"/api/sessions/{session.pk}/preview?strategy=builtin-st").json()


def lore(result):
    return [(n["id"], n["activation"]) for n in result["nodes"] if n["module"] == "worldbook"]


def test_the_cards_own_book_is_character_lore_and_keywords_pick_the_entries(users, seraphina):
    result = session_with(users, seraphina, "Tell me about the Shadowfang beasts.", card_lore=True,
                          world_info_activation="keywords")
    found = dict(lore(result))
    # the input names the Shadowfangs; that entry's text names the forest and the glade (recursion); powers stay out
    assert found["worldbook:card:1"] == "key 'shadowfang' found in message 0"
    assert found["worldbook:card:0"].endswith("in the content of entry card:1 (recursion)")
    assert found["worldbook:card:2"].endswith("in the content of entry card:1 (recursion)")
    assert "worldbook:card:3" not in found
    text = "\n".join(m["content"] for m in result["request"]["messages"])
    assert 'What are Shadowfangs?' in text
    # the same session without the card's book sends no lore at all
    assert lore(session_with(users, seraphina, "Tell me about the Shadowfang beasts.",
                             world_info_activation="keywords")) == []


def test_every_enabled_entry_when_the_host_chooses(users, seraphina):
    found = lore(session_with(users, seraphina, "Hello.", card_lore=True, world_info_activation="all"))
    assert sorted(node_id for node_id, _ in found) == [f"worldbook:card:{i}" for i in range(4)]


def test_a_selected_book_of_the_same_name_is_not_loaded_twice(users, seraphina):
    book = strategy_services.worldbook_import(
        user=users["admin"], name="Eldoria",
        data=json.loads((seraphina["folder"] / "st_worldinfo_Eldoria.json").read_text(encoding="utf-8")))
    result = session_with(users, seraphina, "Is the glade a safe haven?", card_lore=True,
                          world_info_activation="keywords", world_books=[WorldBook.objects.get(pk=book.id)])
    found = dict(lore(result))
    assert found["worldbook:2"] == "key 'glade' found in message 0"  # the selected book's entry, and only once:
    assert not any(node_id.startswith("worldbook:card:") for node_id in found)  # the card's copy is not loaded


@pytest.mark.parametrize(("body", "path"), [
    ({"world_info_activation": "sometimes"}, "world_info_activation"),
    ({"card_lore": "yes"}, "card_lore"),
])
def test_bad_world_info_settings_are_refused_and_change_nothing(users, seraphina, body, path):
    session = services.session_create(user=users["designer"], name="Glade", character=seraphina["character"])
    response = client_for(users["designer"]).patch(f"/api/sessions/{session.pk}", body,
                                                   content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]["path"] == path
    stored = Session.objects.get(pk=session.pk)
    assert (stored.world_info_activation, stored.card_lore) == ("book", False)


def test_the_form_sets_both_and_the_page_says_so(users, seraphina, world):
    session = world["session"]
    client = client_for(users["designer"])
    response = client.post(f"/sessions/{session.pk}/edit/", {
        "name": session.name, "system_prompt_update": "head", "native_available": "on",
        "character": seraphina["character"].pk, "world_info_activation": "keywords", "card_lore": "on"})
    assert response.status_code == 302
    session.refresh_from_db()
    assert (session.world_info_activation, session.card_lore) == ("keywords", True)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "keyword scan, as SillyTavern does" in page and "+ the card's own book" in page


def test_the_new_session_form_starts_with_sillytaverns_keyword_scan(users):
    html = client_for(users["designer"]).get("/sessions/new/").content.decode()
    assert '<option value="keywords" selected>' in html


def test_chat_lore_is_read_first_and_loaded_once(users, seraphina):
    eldoria = json.loads((seraphina["folder"] / "st_worldinfo_Eldoria.json").read_text(encoding="utf-8"))
    book = WorldBook.objects.get(pk=strategy_services.worldbook_import(user=users["admin"], name="Eldoria",
                                                                      data=eldoria).id)
    other = WorldBook.objects.get(pk=strategy_services.worldbook_import(user=users["admin"], name="Other", data={
        "entries": {"1": {"uid": 1, "key": ["glade"], "content": "The other book's glade.", "order": 999}}}).id)
    result = session_with(users, seraphina, "Is the glade a safe haven?", chat_lore=book, card_lore=True,
                          world_info_activation="keywords", world_books=[book, other])
    found = dict(lore(result))
    # Eldoria once, as chat lore (not again as a selected book, nor as the card's own book of the same name)
    assert found["worldbook:chat:2"] == "key 'glade' found in message 0"
    assert not any(node_id.startswith(("worldbook:card:", f"worldbook:{book.pk}:")) for node_id in found)
    assert f"worldbook:{other.pk}:1" in found  # the other selected book still takes part
    stored = Session.objects.get(name="Glade")
    assert client_for(users["qa"]).get(f"/api/sessions/{stored.pk}").json()["chat_lore"] == book.pk


def test_a_chat_import_binds_the_chats_book_by_name(users, seraphina, world):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.web.test_preview_pages_sessions import CHAT_FILE

    book = WorldBook.objects.get(pk=strategy_services.worldbook_import(user=users["admin"], name="Saltmarsh Coast",
                                                                      data={"entries": {}}).id)
    session = world["session"]
    client_for(users["designer"]).post(f"/sessions/{session.pk}/chat/import/", {
        "file": SimpleUploadedFile("c.jsonl", CHAT_FILE.read_bytes())})
    session.refresh_from_db()
    assert session.chat_lore == book


def test_a_sticky_entry_stays_active_on_the_next_turn_from_the_sessions_own_state(users, seraphina):
    """Timed effects live in the chat's metadata (SillyTavern's chat_metadata.timedWorldInfo): a turn writes the
    state after it, and the next request starts from it (sillytavern.md §7, timed effects)."""
    from strategies_app.models import Strategy

    book = strategy_services.worldbook_import(user=users["admin"], name="Coast", data={"entries": {
        "0": {"uid": 0, "key": ["lantern"], "content": "The lantern never goes out.", "sticky": 3,
              "scanDepth": 1}}})  # only the newest message is scanned
    session = services.session_create(user=users["designer"], name="Coast", host={"core_available": True},
                                      preset=seraphina["preset"], world_books=[WorldBook.objects.get(pk=book.id)],
                                      world_info_activation="keywords", current_input="Light the lantern.",
                                      strategy=Strategy.objects.get(slug="builtin-st"))
    services.turn_commit(session=session, reply="Done.")
    state = Session.objects.get(pk=session.pk).chat_file["metadata"]["timedWorldInfo"]
    assert list(state["sticky"]) and not state["cooldown"]
    session = Session.objects.get(pk=session.pk)
    services.session_update(session=session, current_input="What now?")  # no key in the newest messages
    def sent():
        result = client_for(users["qa"]).get(f"/api/sessions/{session.pk}/preview").json()
        return "\n".join(m["content"] for m in result["request"]["messages"])

    assert "The lantern never goes out." in sent()
    from django.utils import timezone

    Session.objects.filter(pk=session.pk).update(chat_file={}, updated_at=timezone.now())  # the same chat without its timed state
    assert "The lantern never goes out." not in sent()


def test_a_card_whose_linked_world_is_not_text_still_lends_its_lore(users, seraphina):
    """A card's extensions are kept as its file wrote them: a linked world (`extensions.world`) that is a list names
    no world, and the preview still reads the card's entries (it answered 500 before)."""
    card = json.loads((seraphina["folder"] / "st_card_Seraphina.v2.chara.json").read_text(encoding="utf-8"))
    card["data"]["extensions"]["world"] = ["Eldoria"]
    report = strategy_services.character_import(user=users["admin"], data=card)
    seraphina["character"] = Character.objects.get(pk=report.id)
    found = lore(session_with(users, seraphina, "Hello.", card_lore=True, world_info_activation="all"))
    assert sorted(node_id for node_id, _ in found) == [f"worldbook:card:{i}" for i in range(4)]
