"""assembly.reading's shared helpers: JavaScript string lengths and cuts, the strict spelling reader; and the engine
taking the resources it is handed as models as they are."""

import pytest

from assembly.reading import Reader, describe, js_cut, js_length, rename_fields
from assembly.sillytavern.models import Resources
from assembly.sillytavern.resource_set import normalize_resources


def test_js_length_counts_utf16_units():
    assert js_length("") == 0
    assert js_length("abc") == 3
    assert js_length("a\U0001f600") == 3  # outside the BMP: a surrogate pair


def test_js_cut_never_splits_a_surrogate_pair():
    assert js_cut("abc", 5) == "abc"
    assert js_cut("abc", 2) == "ab"
    assert js_cut("a\U0001f600b", 2) == "a"
    assert js_cut("a\U0001f600b", 3) == "a\U0001f600"


class Refused(Exception):
    pass


SPELLINGS = {"source_id": "source_id", "sourceId": "source_id", "id": "id"}


def test_a_reader_keeps_the_fields_it_did_not_read_as_copies():
    data = {"name": "n", "kept": {"deep": [1]}, "also": None}
    reader = Reader(data, "x")
    assert reader.get("name") == ("n", "x.name")
    left = reader.leftovers()
    assert left == {"kept": {"deep": [1]}, "also": None} and left["kept"] is not data["kept"]
    assert reader.leftovers("kept") == {"also": None}
    reader.get("kept"), reader.get("also")
    assert reader.leftovers() == {}
    reader.used.add("extensions")  # a field marked read that the object does not give
    assert reader.leftovers() == {}


def test_rename_fields_keeps_key_order_and_names_fields():
    assert rename_fields({"sourceId": "s", "id": "x"}, SPELLINGS, unknown=None, twice=None) == {"source_id": "s",
                                                                                               "id": "x"}


def test_rename_fields_refuses_a_second_spelling_even_with_the_same_value():
    def twice(field, first, key):
        return Refused(field, first, key)

    with pytest.raises(Refused) as caught:
        rename_fields({"source_id": "s", "sourceId": "s"}, SPELLINGS, unknown=None, twice=twice)
    assert caught.value.args == ("source_id", "source_id", "sourceId")


def test_rename_fields_refuses_or_keeps_unknown_keys():
    with pytest.raises(Refused) as caught:
        rename_fields({"id": "x", "other": 1}, SPELLINGS, unknown=Refused, twice=None)
    assert caught.value.args == ("other",)
    assert rename_fields({"other": 1}, SPELLINGS, unknown=None, twice=None) == {"other": 1}


def test_resources_given_as_models_are_taken_as_they_are():
    parsed = normalize_resources({"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Hi"}]}})
    resources = normalize_resources({"preset": parsed.preset, "author_note": {"content": "Note"}})
    assert resources.preset is parsed.preset
    assert resources == Resources(preset=parsed.preset, author_note=resources.author_note)
    assert resources.author_note.content == "Note"


def _fragment_config(**extra):
    return {"id": "a", "role": "user", "source_id": "s", "trust": "user", "lifetime": "turn", "max_chars": 9,
            "format": str, **extra}


@pytest.mark.parametrize(("config", "expected"), [
    (_fragment_config(sourceId="s"), ("FRAGMENT_CONFLICTING_FIELD", "fragment 'a': field source_id is given twice "
                                      "(source_id and sourceId); give one spelling",
                                      {"fragment_id": "a", "field": "source_id"})),
    (_fragment_config(maxchars=5), ("FRAGMENT_UNKNOWN_FIELD", "fragment 'a': unknown field 'maxchars'; expected one "
                                    "of id, role, source_id, sourceId, trust, lifetime, max_chars, maxChars, "
                                    "description, format", {"fragment_id": "a", "field": "maxchars"})),
])
def test_fragments_word_their_spelling_refusals(config, expected):
    from assembly.fragments import FragmentError, define_context_fragments

    with pytest.raises(FragmentError) as caught:
        define_context_fragments([config], max_input_chars=10)
    assert (caught.value.code, caught.value.message, caught.value.detail) == expected


@pytest.mark.parametrize(("layout", "blocks", "expected"), [
    ({"author_note": 0, "authorNote": 0}, [],
     ("INVALID_LAYOUT", "layout: 'author_note' and 'authorNote' both give 'author_note'; use one", {"field": "layout"})),
    ({"examples": {"start": 0, "end": 0, "stop": 1}}, [],
     ("INVALID_LAYOUT", "layout.examples: unknown field 'stop' (expected one of: end, start)", {"field": "examples"})),
    ({}, [{"id": "b", "position": "outlet", "outlet_name": "o", "outletName": "o"}],
     ("INVALID_BLOCK", "blocks[0]: 'outlet_name' and 'outletName' both give 'outlet_name'; use one",
      {"block_index": 0})),
])
def test_placement_words_its_spelling_refusals(layout, blocks, expected):
    from assembly.placement import PlacementError, place_context_blocks

    with pytest.raises(PlacementError) as caught:
        place_context_blocks([{"role": "user", "content": "x"}], layout, blocks)
    assert (caught.value.code, caught.value.message, caught.value.detail) == expected


# find_unsafe: one fast pass says "safe"; a refusal walks again to name the first bad place ---------------------------


@pytest.mark.parametrize(("value", "path", "expected"), [
    ({"a": [1, {"b": "x\ud800"}]}, "a[1].b", "lone surrogates"),
    ({"ok": "fine", "k\udfff": 1}, "k\\udfff", "lone surrogates"),
    ({"a": [1.5, float("nan")]}, "a[1]", "finite number"),
    ({"a": {"b": float("inf")}}, "a.b", "finite number"),
    ({"a": "has \x00 nul"}, "a", "NUL"),
    ({"first": "x\ud800", "second": float("nan")}, "first", "lone surrogates"),  # the first in order is named
    ("\ud800", "the input", "lone surrogates"),
    ({"城门": "守卫 \udc00 城门"}, "城门", "lone surrogates"),  # among other non-ASCII text
    ({"a": "\ud83d\ude42"}, "a", "lone surrogates"),  # a pair as two code points is two surrogates in Python
    ({1: "ok", "b": {2: "x\ud800"}}, "b[2]", "lone surrogates"),  # keys that are not strings: the walk decides
])
def test_find_unsafe_names_the_first_bad_place(value, path, expected):
    from assembly.reading import find_unsafe

    problem = find_unsafe(value)
    assert problem is not None and problem.path == path and expected in problem.expected


def test_find_unsafe_passes_safe_values_and_nul_when_allowed():
    from assembly.reading import MAX_JSON_DEPTH, find_unsafe

    assert find_unsafe({"a": ["é", "🙂", "城门", 1, 2.5, True, None, {"b": []}]}) is None
    assert find_unsafe({"a": "has \x00 nul"}, nul=False) is None
    assert find_unsafe({1: "one", None: ["城门"], "k": {2.5: "x"}}) is None  # keys that are not strings
    nested: object = "leaf"
    for _ in range(MAX_JSON_DEPTH):
        nested = [nested]
    assert find_unsafe(nested) is None
    problem = find_unsafe([nested])
    assert problem is not None and problem.expected.startswith("JSON nested")


def test_describe_names_a_huge_integer_without_printing_it():
    assert describe(10**5000) == "a very large integer"  # str() refuses past 4300 digits
    assert describe(12) == "integer 12" and describe([[[]]]) == "list of 1 item(s)"


def test_field_keys_names_the_one_key_of_each_field_and_leaves_the_doubtful_ones_to_a_reader():
    from assembly.reading import field_keys

    field_of = {"order": "order", "insertion_order": "order", "content": "content", "key": "keys", "keys": "keys"}
    # "order" is spelled twice, "keys" sits in the fallback too, "comment" is no field: a Reader decides the first two
    assert field_keys(("order", "content", "insertion_order", "key", "comment"), ("keys",), field_of) == {
        "order": None, "content": "content", "keys": None}
