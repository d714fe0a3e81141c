"""World book entries read as SillyTavern reads them (sillytavern.md §7, §9.3)."""

import pytest

from assembly.reading import ImportInvalid
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


def test_of_two_bad_fields_the_one_read_first_is_named_whatever_the_key_order():
    # fields are read in one order (flags, selective logic, triggers, then order, then texts, keys, numbers), so an
    # entry's first refusal does not depend on where its keys stand in the file
    cases = [({"content": 5, "constant": "yes"}, "entries.0.constant"),
             ({"probability": 500, "selectiveLogic": "bad", "comment": 1}, "entries.0.selectiveLogic"),
             ({"depth": -1, "order": "x"}, "entries.0.order")]
    for bad, path in cases:
        with pytest.raises(ImportInvalid) as refused:
            import_worldbook({"entries": {"0": {"uid": 0, **bad}}})
        assert refused.value.path == path, bad
