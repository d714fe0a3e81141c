"""assembly.resource_memo: resources remembered by content, and what a remembered set may skip."""

import copy

import pytest

from assembly import assemble
from assembly.errors import AssemblyError
from assembly.resource_memo import remembered, resources_key

RESOURCES = {"character": {"name": "Seraphina", "description": "Guardian of the forest."},
             "worldbook": {"entries": [{"uid": 1, "key": ["gate"], "content": "The gate is shut.", "constant": True}]}}


def _request(resources, content="hello"):
    return {"strategy": "builtin-native-slots", "resources": resources,
            "conversation": {"history": [{"role": "user", "content": content}]}}


def test_equal_content_has_one_key_and_one_parsed_copy():
    first, second = copy.deepcopy(RESOURCES), copy.deepcopy(RESOURCES)
    assert resources_key(first) == resources_key(second)
    assemble(_request(first))
    parsed = remembered(resources_key(first))
    assert parsed is not None and parsed.character.name == "Seraphina"
    assemble(_request(second))
    assert remembered(resources_key(second)) is parsed  # frozen models, shared


def test_the_key_is_stable_across_an_assembly():
    resources = copy.deepcopy(RESOURCES)
    before = resources_key(resources)
    assemble(_request(resources))
    assert resources_key(resources) == before


def test_types_that_json_tells_apart_have_different_keys():
    assert resources_key({"a": 1}) != resources_key({"a": True})
    assert resources_key({"a": 1}) != resources_key({"a": 1.0})
    assert resources_key({"a": [1]}) != resources_key({"a": (1,)})
    assert resources_key({"a": "1"}) != resources_key({"a": 1})


def test_values_marshal_cannot_write_have_no_key():
    assert resources_key({"a": object()}) is None
    assert resources_key(["not", "a", "dict"]) is None


def test_remembered_resources_do_not_hide_unsafe_values_elsewhere():
    resources = copy.deepcopy(RESOURCES)
    assemble(_request(resources))
    with pytest.raises(AssemblyError) as refused:
        assemble(_request(copy.deepcopy(RESOURCES), content="bad \ud800 text"))
    assert refused.value.code == "ASSEMBLY_REQUEST_INVALID"
    assert "conversation.history[0].content" in str(refused.value)


def test_unsafe_resources_are_refused_every_time_and_never_remembered():
    bad = copy.deepcopy(RESOURCES)
    bad["character"]["description"] = "lone \udc00 surrogate"
    for _ in range(2):
        with pytest.raises(AssemblyError) as refused:
            assemble(_request(bad))
        assert "resources.character.description" in str(refused.value)
    assert remembered(resources_key(bad)) is None


def test_a_second_answer_is_the_first():
    resources = copy.deepcopy(RESOURCES)
    first = assemble(_request(resources)).model_dump_json()
    assert assemble(_request(copy.deepcopy(RESOURCES))).model_dump_json() == first


def test_the_key_follows_content_not_which_objects_are_shared():
    entry = {"content": "shared", "key": ["gate"]}
    shared = {"worldbook": {"entries": [entry, entry]}}
    apart = {"worldbook": {"entries": [copy.deepcopy(entry), copy.deepcopy(entry)]}}
    assert resources_key(shared) == resources_key(apart)
    assert resources_key({"a": "x"}) != resources_key({"a": b"x"})
    assert resources_key({"a": [1, 2]}) != resources_key({"a": [2, 1]})
    assert resources_key({"a": 1, "b": 2}) != resources_key({"b": 2, "a": 1})  # key order shows in what is built


def test_values_that_are_not_plain_data_have_no_key():
    class Text(str):
        pass

    looped: list = []
    looped.append(looped)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert resources_key({"a": Text("x")}) is None
    assert resources_key({"a": looped}) is None
    assert resources_key({"a": deep}) is None
    assert resources_key({"a": 1j}) is None


def test_a_long_set_is_keyed_by_a_digest_that_no_short_key_can_equal():
    from assembly.resource_memo import _WHOLE_KEY_BYTES

    short = resources_key(RESOURCES)
    long = {"character": {"description": "x" * (_WHOLE_KEY_BYTES + 1)}}
    longer = {"character": {"description": "x" * (_WHOLE_KEY_BYTES + 2)}}
    assert short.startswith(b"\x80") and not resources_key(long).startswith(b"\x80")
    assert len(resources_key(long)) < 64 and resources_key(long) == resources_key(copy.deepcopy(long))
    assert resources_key(long) != resources_key(longer)
