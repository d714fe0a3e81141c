"""assembly.request.read_request: a request dict's conversation read straight into the engine's message dicts must
give what the models give (`ConversationMessage` read by api._messages_with_ids), and refuse what they refuse with
the same error."""

import copy
import json

import pytest

from assembly.api import _messages_with_ids
from assembly.errors import AssemblyError
from assembly.reading import MAX_JSON_DEPTH
from assembly.request import parse_request, read_request


def _by_models(request):
    req = parse_request(copy.deepcopy(request))
    return _messages_with_ids(req.conversation.history, "h"), _messages_with_ids(req.conversation.input, "i")


def _read(request):
    read = read_request(copy.deepcopy(request))
    return read.history, read.inputs


def _items(messages):
    return [list(m.items()) for m in messages]  # the key order too: it shows in what the request carries


_ODD_MESSAGES = [
    {"role": "user", "content": "no id"},
    {"id": None, "role": "assistant", "content": "a null id goes last, as a given one would not"},
    {"role": "tool", "tool_call_id": "t1"},  # no content: "" after the role
    {"id": "x", "role": "system"},  # no content, with an id: "" after the role
    {"role": "user", "content": "hi", "name": None, "source": None, "mood": None, "extra": {"a": [1, None]}},
    {"zz": 1, "role": "assistant", "content": "", "name": "Bob", "source": {"kind": "greeting", "n": None},
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
]


def test_odd_messages_read_as_the_models_read_them():
    request = {"conversation": {"history": _ODD_MESSAGES, "input": [{"role": "user", "content": "now"}]}}
    history, inputs = _read(request)
    expected_history, expected_inputs = _by_models(request)
    assert _items(history) == _items(expected_history)
    assert _items(inputs) == _items(expected_inputs)
    # by hand: field order, None fields dropped (extras kept), ids h1.. / i1 appended when not given
    assert list(history[0]) == ["role", "content", "id"] and history[0]["id"] == "h1"
    assert list(history[2]) == ["role", "content", "tool_call_id", "id"] and history[2]["content"] == ""
    assert list(history[3]) == ["id", "role", "content"]
    assert history[4] == {"role": "user", "content": "hi", "mood": None, "extra": {"a": [1, None]}, "id": "h5"}
    assert inputs == [{"role": "user", "content": "now", "id": "i1"}]


def test_the_callers_messages_are_left_as_they_were():
    request = {"conversation": {"history": copy.deepcopy(_ODD_MESSAGES)}}
    read_request(request)
    assert request["conversation"]["history"] == _ODD_MESSAGES


def _oracle_requests():
    for path, key in (("../shared/oracle/st/cases.json", "scenarios"), ("../shared/oracle/dsh/cases.json", "cases")):
        try:
            with open(path) as handle:
                cases = json.load(handle)[key]
        except FileNotFoundError:
            continue
        yield from (c["request"] for c in cases if isinstance(c.get("request"), dict))


def test_every_oracle_request_reads_as_the_models_read_it():
    seen = 0
    for request in _oracle_requests():
        try:
            expected = _by_models(request)
        except AssemblyError as error:
            with pytest.raises(AssemblyError) as raised:
                read_request(copy.deepcopy(request))
            assert (raised.value.code, str(raised.value)) == (error.code, str(error))
            continue
        read = read_request(copy.deepcopy(request))
        if read.history is not None:
            assert (_items(read.history), _items(read.inputs)) == (_items(expected[0]), _items(expected[1]))
            seen += 1
    if seen == 0:
        pytest.skip("no oracle requests here")


def _deep(levels):
    value = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("request_", [
    {"conversation": {"history": [{"role": "narrator", "content": "x"}]}},
    {"conversation": {"history": [{"content": "no role"}]}},
    {"conversation": {"history": [], "later": []}},
    {"conversation": {"history": [{"role": "user", "content": 3}]}},
    {"conversation": {"history": [{"role": "user", "tool_calls": [{"type": "no id"}]}]}},
    {"conversation": []},
    {"conversation": None},
    {"conversation": {"history": [{"role": "user", "content": "lone \ud800"}]}},
    {"conversation": {"history": [{"role": "user", "content": "x", "deep": _deep(MAX_JSON_DEPTH - 3)}]}},
    {"conversation": {"history": [{"role": "user", "content": "x", "n": float("nan")}]}},
    {"budget": {"context_window": 0}, "conversation": {"history": [{"role": "narrator"}]}},
    {"tokenizer": "made-up", "conversation": {"history": [{"role": "user", "content": "fine"}]}},
    # the rest of a request with a plain conversation: its strings are checked in the conversation's pass
    {"names": {"user": "lone \udc00"}, "conversation": {"history": [{"role": "user", "content": "fine"}]}},
    {"host": {"variables": {"\ud800": "x"}}, "conversation": {"input": [{"role": "user", "content": "fine"}]}},
    {"host": {"variables": {"n": float("inf")}}, "conversation": {"input": [{"role": "user", "content": "fine"}]}},
    {"host": {"variables": {"deep": _deep(MAX_JSON_DEPTH)}}, "conversation": {"history": []}},
    {"resources": {"preset": {"name": "\ud801"}}, "conversation": {"history": []}},
    {7: "not a string key", "conversation": {"history": []}},
], ids=lambda r: json.dumps(r, default=str)[:60])
def test_a_refusal_is_the_one_parse_request_gives(request_):
    with pytest.raises(AssemblyError) as expected:
        parse_request(copy.deepcopy(request_))
    with pytest.raises(AssemblyError) as raised:
        read_request(copy.deepcopy(request_))
    assert (raised.value.code, str(raised.value), raised.value.detail) == (
        expected.value.code, str(expected.value), expected.value.detail)


def test_nesting_just_within_the_bound_is_read():
    # a container at depth MAX_JSON_DEPTH - 1 of the whole request is allowed: conversation.history[0].deep...
    request = {"conversation": {"history": [{"role": "user", "content": "x", "deep": _deep(MAX_JSON_DEPTH - 4)}]}}
    parse_request(copy.deepcopy(request))
    assert read_request(copy.deepcopy(request)).history[0]["deep"] == _deep(MAX_JSON_DEPTH - 4)


@pytest.mark.parametrize("history", [
    [{1: "x", "role": "user"}],  # a key that is no string
    [{"role": "user", "content": b"bytes"}],
    [{"role": "user", "id": 5}],
    [{"role": "user", "source": []}],
    ({"role": "user"},),  # a tuple for the list
    [{"role": "user", "tool_calls": ({"id": "a"},)}],
    [{"role": "user", "name": 3}],
], ids=repr)
def test_what_lax_reading_takes_or_refuses_is_what_the_models_take_or_refuse(history):
    request = {"conversation": {"history": history}}

    def answer(read):
        try:
            return "read", _items(read(request))
        except AssemblyError as error:
            return "refused", str(error)

    def by_read_request(request):
        read = read_request(copy.deepcopy(request))
        return read.history if read.history is not None else _messages_with_ids(read.request.conversation.history, "h")

    assert answer(by_read_request) == answer(lambda r: _by_models(r)[0])
