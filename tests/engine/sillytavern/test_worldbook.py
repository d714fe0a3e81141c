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


def test_entries_of_one_book_each_read_only_the_fields_they_give():
    # a book's entries share a few key sets; what one entry gives never fills another's defaults
    book = import_worldbook({"entries": {
        "0": {"uid": 0, "key": ["wolf"], "content": "A wolf.", "constant": True, "probability": 40},
        "1": {"uid": 1, "key": ["owl"], "content": "An owl.", "selective": False, "order": 7},
        "2": {"content": "A fox.", "key": ["fox"], "uid": 2, "constant": False, "probability": 60},
        "3": {"uid": 3, "key": ["elk"], "content": "An elk.", "constant": True, "probability": 40}}})
    assert [(e.uid, e.keys, e.constant, e.probability, e.selective, e.order) for e in book.entries] == [
        (0, ("wolf",), True, 40, True, 100), (1, ("owl",), False, 100, False, 7), (2, ("fox",), False, 60, True, 100),
        (3, ("elk",), True, 40, True, 100)]
    assert all(e.other_fields == {} for e in book.entries)


def test_a_card_book_entry_reads_its_extensions_beside_entries_without_them():
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "", "first_mes": "Hi.", "character_book": {"entries": [
            {"id": 1, "keys": ["wolf"], "content": "A wolf.", "enabled": True, "extensions": {"depth": 2,
                                                                                                "position": 4}},
            {"id": 2, "keys": ["owl"], "content": "An owl.", "enabled": True},
            {"id": 3, "keys": ["elk"], "content": "An elk.", "enabled": True, "extensions": {"probability": 30}}]}}}
    entries = import_character(card).character_book.entries
    assert [(e.position, e.depth, e.probability) for e in entries] == [
        ("at_depth", 2, 100), ("after", None, 100), ("after", None, 30)]


def test_an_entry_keyed_by_thousands_of_digits_keeps_its_key_as_its_uid():
    long = "9" * 5000
    book = import_worldbook({"entries": {long: {"key": ["a"], "content": "far"}, "7": {"key": ["b"], "content": "near"}}})
    assert sorted(str(entry.uid) for entry in book.entries) == sorted([long, "7"])


def test_entries_of_one_shape_each_read_their_values_as_given():
    # a value already of its field's type is taken as it is; any other still meets the field's reader
    book = import_worldbook({"entries": {
        "0": {"uid": 0, "constant": True, "comment": "wolf", "displayIndex": 3},
        "1": {"uid": 1, "constant": None, "comment": None, "displayIndex": 4.0}}})
    assert [(e.constant, e.comment, e.display_index) for e in book.entries] == [(True, "wolf", 3), (False, "", 4)]
    for entries, path in [({"0": {"uid": 0, "constant": True}, "1": {"uid": 1, "constant": 1}}, "entries.1.constant"),
                          ({"0": {"uid": 0, "key": ["a"]}, "1": {"uid": 1, "key": ["a"], "keys": ["b"]}},
                           "entries.1.key")]:
        with pytest.raises(ImportInvalid) as refused:
            import_worldbook({"entries": entries})
        assert refused.value.path == path
