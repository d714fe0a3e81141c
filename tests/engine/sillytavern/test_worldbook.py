"""World book entries read as SillyTavern reads them (sillytavern.md §7, §9.3)."""

from assembly.sillytavern.card import import_character
from assembly.sillytavern.worldbook import export_worldbook, import_worldbook


def test_a_native_entry_orders_by_order_and_keeps_a_disagreeing_insertion_order():
    # converted books often carry both spellings; SillyTavern's native loader reads `order` alone
    book = import_worldbook({"entries": {"0": {"uid": 0, "key": ["wolf"], "content": "A wolf.", "order": 5,
                                               "insertion_order": 9}}})
    assert book.entries[0].order == 5
    exported = export_worldbook(book)["entries"]["0"]
    assert (exported["order"], exported["insertion_order"]) == (5, 9)


def test_a_card_book_entry_orders_by_insertion_order():
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "", "first_mes": "Hi.", "character_book": {"entries": [
            {"id": 1, "keys": ["wolf"], "content": "A wolf.", "insertion_order": 9, "order": 5, "enabled": True,
             "extensions": {}}]}}}
    assert import_character(card).character_book.entries[0].order == 9
