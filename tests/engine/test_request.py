"""The request models and their parsing (assembly.request; engine.md §1)."""

import pytest

from assembly.errors import AssemblyError
from assembly.request import AssemblyRequest, parse_request


def test_defaults_of_an_empty_request():
    req = parse_request({})
    assert (req.strategy, req.tokenizer, req.generation.type, req.names.user) == (
        "builtin-native-slots", "o200k_base", "normal", "User")
    assert req.host.native_available and not req.host.core_available and req.budget is None


def test_a_model_passes_through():
    req = AssemblyRequest(strategy="builtin-st")
    assert parse_request(req) is req


def test_not_an_object_is_refused():
    with pytest.raises(AssemblyError) as caught:
        parse_request([])
    assert (caught.value.code, str(caught.value)) == ("ASSEMBLY_REQUEST_INVALID", "request: expected a JSON object, "
                                                      "got list")


def test_a_refused_request_names_every_bad_field():
    with pytest.raises(AssemblyError) as caught:
        parse_request({"budget": {"context_window": 0}, "names": {"nick": "x"}})
    error = caught.value
    assert error.code == "ASSEMBLY_REQUEST_INVALID" and error.message.startswith("names.nick: ")
    assert [e["path"] for e in error.detail["errors"]] == ["names.nick", "budget.context_window"]  # model field order


def test_message_extras_are_kept():
    req = parse_request({"conversation": {"history": [{"role": "user", "content": "hi", "mood": "calm"}]}})
    assert req.conversation.history[0].__pydantic_extra__ == {"mood": "calm"}
