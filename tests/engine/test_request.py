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


@pytest.mark.parametrize("engine", ["legacy", "v2"])
def test_the_macro_engine_is_a_request_choice(engine):
    assert parse_request({"macro_engine": engine}).macro_engine == engine


def test_the_legacy_macro_engine_is_the_default():
    assert parse_request({}).macro_engine == "legacy"


@pytest.mark.parametrize(("request_", "field"), [
    ({"macro_engine": "v3"}, "macro_engine"),
    ({"macro_engine": None}, "macro_engine"),
    ({"macro_variables": {"local": []}}, "macro_variables.local"),
    ({"macro_variables": {"chat": {}}}, "macro_variables.chat"),
    ({"macro_variables": {"global": {"": "x"}}}, "macro_variables.global"),
    ({"macro_variables": "x=1"}, "macro_variables"),
])
def test_a_bad_macro_field_is_refused_naming_it(request_, field):
    with pytest.raises(AssemblyError) as caught:
        parse_request(request_)
    assert caught.value.code == "ASSEMBLY_REQUEST_INVALID"
    assert field in str(caught.value)


def test_macro_variables_keep_both_scopes():
    req = parse_request({"macro_variables": {"local": {"hp": 10, "mood": "calm"}, "global": {"seen": "1"}}})
    assert req.macro_variables == {"local": {"hp": 10, "mood": "calm"}, "global": {"seen": "1"}}
