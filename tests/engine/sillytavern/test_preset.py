"""A chat-completion preset read as SillyTavern reads it (sillytavern.md §2): what it tolerates is read, coerced
the way it coerces, and reported under `coerced`."""

import pytest

from assembly import assemble
from assembly.reading import ImportInvalid
from assembly.sillytavern.preset import export_preset, import_preset


def prompt(identifier, **fields):
    return {"identifier": identifier, "name": identifier.title(), "role": "system", "content": "", **fields}


def preset(*prompts, order=None):
    order = order or [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    return {"prompts": list(prompts), "prompt_order": [{"character_id": 100001, "order": order}]}


def test_a_marker_with_an_empty_role_reads_as_system():
    read = import_preset(preset(prompt("chatHistory", marker=True, role="")))
    assert read.prompt("chatHistory").role == "system"
    assert read.coerced == ("prompts[0].role: an empty role, read as system",)


def test_a_repeated_identifier_keeps_the_first_definition():
    read = import_preset(preset(prompt("main", content="first"), prompt("main", content="second", enabled=False),
                                order=[{"identifier": "main", "enabled": True}]))
    assert [p.content for p in read.prompts if p.identifier == "main"] == ["first"]
    assert len(read.coerced) == 1 and read.coerced[0].startswith("prompts[1].identifier: 'main' is defined earlier")


def test_a_negative_depth_is_kept_and_an_in_chat_prompt_there_is_never_injected():
    relative = prompt("main", content="Be brief.", injection_depth=-1)
    in_chat = prompt("deep", content="NEVER SENT", injection_position=1, injection_depth=-1)
    read = import_preset(preset(relative, in_chat))
    assert read.prompt("main").injection_depth == -1 and read.coerced == ()
    assert export_preset(read)["prompts"][0]["injection_depth"] == -1
    request = {"strategy": "builtin-st", "host": {"core_available": True}, "resources": {"preset": preset(relative, in_chat)},
               "conversation": {"history": [{"id": "u1", "role": "user", "content": "hello"}]}}
    texts = [m["content"] for m in assemble(request).model_dump(mode="json")["request"]["messages"]]
    assert "Be brief." in texts and not any("NEVER SENT" in t for t in texts)


def test_a_null_field_comes_back_as_null_while_its_value_is_unchanged():
    read = import_preset(preset(prompt("main", content="Hi.", injection_position=None, injection_trigger=None)))
    assert (read.prompt("main").injection_position, read.prompt("main").injection_trigger) == (0, ())
    written = export_preset(read)["prompts"][0]
    assert (written["injection_position"], written["injection_trigger"]) == (None, None)
    assert import_preset(export_preset(read)) == read
    moved = read.model_copy(update={"prompts": (read.prompt("main").model_copy(update={"injection_position": 1}),)})
    assert export_preset(moved)["prompts"][0]["injection_position"] == 1  # a changed value is written as it is


def test_prompts_of_one_shape_each_read_their_values_as_given():
    # a value already of its field's type is taken as it is; any other still meets the field's reader
    read = import_preset(preset(prompt("a", injection_depth=2, enabled=True), prompt("b", injection_depth=3.0, enabled=None)))
    assert [(p.injection_depth, p.enabled) for p in read.prompts[:2]] == [(2, True), (3, True)]
    assert (read.prompt("a").other_fields, read.prompt("b").other_fields) == ({}, {"enabled": None})
    with pytest.raises(ImportInvalid) as refused:
        import_preset(preset(prompt("a", enabled=True), prompt("b", enabled="yes")))
    assert refused.value.path == "prompts[1].enabled"
