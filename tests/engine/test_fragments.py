"""Typed context fragments (engine.md §3, seed 003): declarations, JSON-character bounds, trust, messages."""

import asyncio
import copy
import gc
import inspect
import json
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembly.fragments import FragmentError, define_context_fragments


def config(**overrides):
    base = {"id": "note", "source_id": "tests", "trust": "operator", "lifetime": "turn", "max_chars": 100,
            "role": "user", "format": lambda _input: "x"}
    base.update(overrides)
    return base


def seed_builder():
    """Seed 003's builder: a question and a history, both user content."""
    return define_context_fragments([
        {"id": "question", "sourceId": "request", "trust": "user", "lifetime": "turn", "maxChars": 1000,
         "role": "user", "format": lambda i: i["question"]},
        {"id": "history", "sourceId": "conversation", "trust": "user", "lifetime": "turn", "maxChars": 10000,
         "role": "user", "format": lambda i: {"messages": i["history"]}},
    ], max_input_chars=1200)


def raises(code, fn, *args, **kwargs):
    with pytest.raises(FragmentError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, (info.value.code, str(info.value))
    return info.value


# --- seed 003's examples -----------------------------------------------------------------------------------------

def test_seed_build_gives_two_user_messages_with_provenance():
    built = seed_builder().build({"question": "服务状态?", "history": []})
    assert [m.model_dump() for m in built.messages] == [
        {"role": "user", "content": "服务状态?", "fragment_id": "question", "source_id": "request", "trust": "user"},
        {"role": "user", "content": '{"messages":[]}', "fragment_id": "history", "source_id": "conversation",
         "trust": "user"},
    ]
    # "服务状态?" is 5 characters, 7 with its JSON quotes; {"messages":[]} is 15 characters.
    assert [f.chars for f in built.fragments] == [7, 15]
    assert built.total_chars == 22
    assert built.max_input_chars == 1200


def test_seed_plan_fragments_and_per_call_limit():
    builder = seed_builder()
    request = {"question": "服务状态?", "history": []}
    plan = builder.plan(request)
    assert plan.max_input_chars == 1200
    assert [f.id for f in plan.fragments] == ["question", "history"]
    assert [f.id for f in builder.fragments(request)] == ["question", "history"]
    assert builder.build(request, max_input_chars=2000).max_input_chars == 2000
    # The override is per call: the builder keeps its declared bound.
    assert builder.build(request).max_input_chars == 1200


def test_plan_reports_metadata_in_order_without_formatting():
    def explode(_input):
        raise AssertionError("plan must not format")

    builder = define_context_fragments([
        config(id="rules", role="system", trust="system", lifetime="static", max_chars=50, description="why"),
        config(id="ask", source_id="request", trust="user", lifetime="session", format=explode),
    ], max_input_chars=120)
    assert builder.plan().model_dump(mode="json") == {
        "max_input_chars": 120,
        "fragments": [
            {"id": "rules", "role": "system", "source_id": "tests", "trust": "system", "lifetime": "static",
             "max_chars": 50, "description": "why"},
            {"id": "ask", "role": "user", "source_id": "request", "trust": "user", "lifetime": "session",
             "max_chars": 100, "description": None},
        ],
    }
    assert builder.plan(None, max_input_chars=7).max_input_chars == 7


def test_results_dump_to_json():
    built = seed_builder().build({"question": "q", "history": [{"role": "user", "content": "hi"}]})
    dumped = built.model_dump(mode="json")
    assert json.loads(json.dumps(dumped)) == dumped
    assert dumped["fragments"][1]["value"] == {"messages": [{"role": "user", "content": "hi"}]}


# --- declarations ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fragment_id", ["a", "question", "ctx:policy.v2_x-y", "aB9", "z-"])
def test_valid_ids(fragment_id):
    builder = define_context_fragments([config(id=fragment_id)], max_input_chars=10)
    assert builder.plan().fragments[0].id == fragment_id


@pytest.mark.parametrize("fragment_id", ["", "Question", "1abc", "_a", ":a", "a b", "a/b", "a\n", "été", 5, None])
def test_invalid_ids(fragment_id):
    error = raises("FRAGMENT_INVALID_ID", define_context_fragments, [config(id=fragment_id)], max_input_chars=10)
    assert error.field == "id"
    assert "^[a-z][a-zA-Z0-9:._-]*$" in str(error)


def test_duplicate_id_names_the_id():
    error = raises("FRAGMENT_DUPLICATE_ID", define_context_fragments,
                   [config(id="note"), config(id="other"), config(id="note")], max_input_chars=10)
    assert error.fragment_id == "note" and "'note'" in str(error)


@pytest.mark.parametrize(
    ("overrides", "code", "field"),
    [
        ({"role": "assistant"}, "FRAGMENT_INVALID_ROLE", "role"),
        ({"role": "System"}, "FRAGMENT_INVALID_ROLE", "role"),
        ({"source_id": ""}, "FRAGMENT_INVALID_SOURCE_ID", "source_id"),
        ({"source_id": 3}, "FRAGMENT_INVALID_SOURCE_ID", "source_id"),
        ({"trust": "admin"}, "FRAGMENT_INVALID_TRUST", "trust"),
        ({"lifetime": "request"}, "FRAGMENT_INVALID_LIFETIME", "lifetime"),
        ({"description": 42}, "FRAGMENT_INVALID_DESCRIPTION", "description"),
        ({"format": "not a function"}, "FRAGMENT_INVALID_FORMAT", "format"),
        ({"role": "system", "trust": "user"}, "FRAGMENT_TRUST_ROLE", "role"),
        ({"role": "system", "trust": "tool"}, "FRAGMENT_TRUST_ROLE", "role"),
    ],
)
def test_invalid_declarations(overrides, code, field):
    error = raises(code, define_context_fragments, [config(**overrides)], max_input_chars=10)
    assert error.field == field and error.fragment_id == "note"
    assert "'note'" in str(error) and field in str(error)
    assert error.status == 400


@pytest.mark.parametrize(("role", "trust"), [("system", "system"), ("system", "operator"), ("user", "user"),
                                             ("user", "tool"), ("user", "system")])
def test_allowed_role_and_trust_pairs(role, trust):
    builder = define_context_fragments([config(role=role, trust=trust)], max_input_chars=10)
    message = builder.build(None).messages[0]
    assert (message.role, message.trust) == (role, trust)


@pytest.mark.parametrize("max_chars", [0, -1, True, False, 1.5, 10.0, 2**53, "10", None])
def test_invalid_max_chars(max_chars):
    error = raises("FRAGMENT_INVALID_MAX_CHARS", define_context_fragments, [config(max_chars=max_chars)],
                   max_input_chars=10)
    assert error.field == "max_chars" and str(2**53 - 1) in str(error)


@pytest.mark.parametrize("max_chars", [1, 2**53 - 1])
def test_max_chars_bounds_are_inclusive(max_chars):
    builder = define_context_fragments([config(max_chars=max_chars)], max_input_chars=10)
    assert builder.plan().fragments[0].max_chars == max_chars


@pytest.mark.parametrize("limit", [0, -5, True, 3.0, 2**53, "1200", None])
def test_invalid_max_input_chars_at_definition_and_per_call(limit):
    raises("FRAGMENT_INVALID_MAX_INPUT_CHARS", define_context_fragments, [config()], max_input_chars=limit)
    builder = define_context_fragments([config()], max_input_chars=10)
    if limit is not None:  # None at build time means "use the declared bound"
        raises("FRAGMENT_INVALID_MAX_INPUT_CHARS", builder.build, None, max_input_chars=limit)
        raises("FRAGMENT_INVALID_MAX_INPUT_CHARS", builder.plan, None, max_input_chars=limit)


def test_snake_and_camel_spellings_are_equivalent():
    snake = define_context_fragments([config(source_id="src", max_chars=9)], max_input_chars=10).plan()
    camel_config = config()
    del camel_config["source_id"], camel_config["max_chars"]
    camel_config.update(sourceId="src", maxChars=9)
    camel = define_context_fragments([camel_config], max_input_chars=10).plan()
    assert snake == camel


def test_both_spellings_of_one_field_conflict():
    error = raises("FRAGMENT_CONFLICTING_FIELD", define_context_fragments, [config(sourceId="other")],
                   max_input_chars=10)
    assert error.field == "source_id"


def test_unknown_field_is_named():
    error = raises("FRAGMENT_UNKNOWN_FIELD", define_context_fragments, [config(maxchars=5)], max_input_chars=10)
    assert error.field == "maxchars" and "'maxchars'" in str(error)


@pytest.mark.parametrize("missing", ["id", "role", "source_id", "trust", "lifetime", "max_chars", "format"])
def test_missing_required_field(missing):
    broken = config()
    del broken[missing]
    error = raises("FRAGMENT_MISSING_FIELD", define_context_fragments, [broken], max_input_chars=10)
    assert error.field == missing and missing in str(error)


def test_description_is_optional():
    plain = config()
    assert "description" not in plain
    assert define_context_fragments([plain], max_input_chars=10).plan().fragments[0].description is None


@pytest.mark.parametrize("configs", ["note", {"id": "note"}, None, 3])
def test_configs_must_be_a_list(configs):
    raises("FRAGMENT_INVALID_CONFIGS", define_context_fragments, configs, max_input_chars=10)


def test_each_config_must_be_a_mapping():
    error = raises("FRAGMENT_INVALID_CONFIG", define_context_fragments, [config(), ["id", "x"]], max_input_chars=10)
    assert "#1" in str(error)


def test_no_fragments_build_an_empty_input():
    built = define_context_fragments([], max_input_chars=1).build(None)
    assert (built.messages, built.fragments, built.total_chars) == ([], [], 0)


# --- synchronous formatting only ------------------------------------------------------------------------------------

async def async_format(_input):
    return "x"


async def async_generator_format(_input):
    yield "x"


class AsyncCallable:
    async def __call__(self, _input):
        return "x"


@pytest.mark.parametrize("fmt", [async_format, async_generator_format, AsyncCallable()])
def test_async_formatters_are_rejected_when_defined(fmt):
    error = raises("FRAGMENT_ASYNC_FORMAT", define_context_fragments, [config(format=fmt)], max_input_chars=10)
    assert error.field == "format" and "synchronous" in str(error)


def test_awaitable_result_is_rejected_and_the_coroutine_closed():
    produced = []

    def sneaky(_input):
        coroutine = async_format(_input)
        produced.append(coroutine)
        return coroutine

    builder = define_context_fragments([config(format=sneaky)], max_input_chars=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raises("FRAGMENT_ASYNC_FORMAT", builder.build, None)
        assert inspect.getcoroutinestate(produced[0]) == inspect.CORO_CLOSED
        produced.clear()
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_awaitable_future_is_rejected():
    loop = asyncio.new_event_loop()
    try:
        future = loop.create_future()
        builder = define_context_fragments([config(format=lambda _input: future)], max_input_chars=10)
        raises("FRAGMENT_ASYNC_FORMAT", builder.fragments, None)
    finally:
        loop.close()


# --- values and sizes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "chars"),
    [
        ("ab", 4),                       # "ab" with its two quotes
        ("", 2),                         # ""
        ('say "hi"', 12),                # "say \"hi\"": 8 characters + 2 escapes + 2 quotes
        ("a\nb", 6),                     # "a\nb": the newline is escaped as two characters
        ("é", 3),                        # non-ASCII kept as is (ensure_ascii=False), not \u00e9
        ("服务", 4),
        ({"a": 1}, 7),                   # {"a":1}
        ({"a": [1, 2], "b": None}, 20),  # {"a":[1,2],"b":null}
        ({}, 2),
    ],
)
def test_sizes_are_compact_json_characters(value, chars):
    builder = define_context_fragments([config(format=lambda _input: value, max_chars=1000)], max_input_chars=1000)
    fragment = builder.fragments(None)[0]
    assert fragment.chars == chars
    assert builder.build(None).total_chars == chars


def test_value_at_max_chars_fits_and_one_more_raises():
    at_bound = define_context_fragments([config(format=lambda s: s, max_chars=5)], max_input_chars=100)
    assert at_bound.build("abc").fragments[0].chars == 5  # "abc" = 5 JSON characters
    error = raises("FRAGMENT_TOO_LARGE", at_bound.build, "abcd")
    assert error.status == 413 and error.fragment_id == "note"
    assert "6" in str(error) and "5" in str(error)
    # fragments() applies the per-fragment bound as well.
    raises("FRAGMENT_TOO_LARGE", at_bound.fragments, "abcd")


def test_total_over_max_input_chars_raises_and_never_truncates():
    builder = define_context_fragments([
        config(id="first", format=lambda s: s),
        config(id="second", format=lambda s: {"t": s}),
    ], max_input_chars=20)
    # "abcd" = 6, {"t":"abcd"} = 12: total 18 fits.
    assert builder.build("abcd").total_chars == 18
    # "abcdef" = 8, {"t":"abcdef"} = 14: total 22 > 20.
    error = raises("FRAGMENT_INPUT_TOO_LARGE", builder.build, "abcdef")
    assert error.status == 413 and error.detail["total_chars"] == 22
    assert "first=8" in str(error) and "second=14" in str(error)
    # The per-call bound lifts it for one request; exactly at the bound fits.
    assert builder.build("abcdef", max_input_chars=22).total_chars == 22
    raises("FRAGMENT_INPUT_TOO_LARGE", builder.build, "abcdef", max_input_chars=21)
    # fragments() only checks each fragment's own bound.
    assert [f.chars for f in builder.fragments("abcdef")] == [8, 14]


def test_empty_string_fragment_sends_no_message_but_is_reported():
    builder = define_context_fragments([
        config(id="empty", format=lambda _input: ""),
        config(id="object", format=lambda _input: {}),
        config(id="text", format=lambda _input: "t"),
    ], max_input_chars=100)
    built = builder.build(None)
    assert [(m.fragment_id, m.content) for m in built.messages] == [("object", "{}"), ("text", "t")]
    assert [f.id for f in built.fragments] == ["empty", "object", "text"]
    assert built.total_chars == 2 + 2 + 3


def test_messages_keep_declaration_order_role_and_trust():
    builder = define_context_fragments([
        config(id="policy", role="system", trust="operator", source_id="policy-module", format=lambda i: i["p"]),
        config(id="tool.result", role="user", trust="tool", source_id="search", format=lambda i: {"hits": i["h"]}),
        config(id="ask", role="user", trust="user", source_id="request", format=lambda i: i["q"]),
    ], max_input_chars=200)
    built = builder.build({"p": "退款期限7天", "h": ["a", "b"], "q": "查退款"})
    assert [(m.role, m.trust, m.source_id, m.content) for m in built.messages] == [
        ("system", "operator", "policy-module", "退款期限7天"),
        ("user", "tool", "search", '{"hits":["a","b"]}'),
        ("user", "user", "request", "查退款"),
    ]


def test_description_is_never_sent():
    builder = define_context_fragments([config(description="INTERNAL NOTE", format=lambda _input: {"k": "v"})],
                                       max_input_chars=100)
    built = builder.build(None)
    message = built.messages[0].model_dump()
    assert "description" not in message
    assert "INTERNAL NOTE" not in json.dumps(message)
    assert built.fragments[0].description == "INTERNAL NOTE"


@pytest.mark.parametrize("value", [None, 3, ["a"], ("a",), b"bytes", {"a": {1, 2}}, {"x": float("nan")},
                                   {"x": float("inf")}, {"a": object()}])
def test_values_other_than_text_or_json_objects_are_rejected(value):
    builder = define_context_fragments([config(format=lambda _input: value)], max_input_chars=100)
    error = raises("FRAGMENT_INVALID_VALUE", builder.build, None)
    assert error.fragment_id == "note" and error.field == "format"


def test_keys_that_collide_as_json_are_rejected():
    builder = define_context_fragments([config(format=lambda _input: {1: "a", "1": "b"})], max_input_chars=100)
    raises("FRAGMENT_INVALID_VALUE", builder.build, None)


def test_format_failure_names_the_fragment_and_keeps_the_cause():
    builder = define_context_fragments([config(id="history", format=lambda i: i["history"])], max_input_chars=100)
    error = raises("FRAGMENT_FORMAT_FAILED", builder.build, {})
    assert "'history'" in str(error) and "KeyError" in str(error)
    assert isinstance(error.__cause__, KeyError)


def test_inputs_are_not_mutated_and_values_are_snapshots():
    history = [{"role": "user", "content": "hi", "tags": ("a",)}]
    request = {"question": "q", "history": history}
    request_before = copy.deepcopy(request)
    configs = [
        {"id": "question", "sourceId": "request", "trust": "user", "lifetime": "turn", "maxChars": 1000,
         "role": "user", "format": lambda i: i["question"]},
        {"id": "history", "sourceId": "conversation", "trust": "user", "lifetime": "turn", "maxChars": 10000,
         "role": "user", "format": lambda i: {"messages": i["history"]}},
    ]
    configs_before = [dict(c) for c in configs]
    built = define_context_fragments(configs, max_input_chars=1200).build(request)
    assert request == request_before
    assert configs == configs_before
    value = built.fragments[1].value
    # The value is the decoded JSON that was sent: the tuple is a list, and it is not the caller's object.
    assert value == {"messages": [{"role": "user", "content": "hi", "tags": ["a"]}]}
    value["messages"].append("extra")
    assert history == request_before["history"]


# --- properties -----------------------------------------------------------------------------------------------------

json_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)
fragment_values = st.text(max_size=60) | st.dictionaries(st.text(max_size=5), json_values, max_size=4)


@given(values=st.lists(fragment_values, min_size=1, max_size=5), limit=st.integers(min_value=1, max_value=400))
def test_build_sends_values_whole_or_raises(values, limit):
    configs = [config(id=f"f{index}", max_chars=10_000, format=lambda vs, index=index: vs[index])
               for index in range(len(values))]
    builder = define_context_fragments(configs, max_input_chars=limit)
    sizes = [len(json.dumps(v, ensure_ascii=False, separators=(",", ":"))) for v in values]
    if sum(sizes) > limit:
        raises("FRAGMENT_INPUT_TOO_LARGE", builder.build, values)
        return
    built = builder.build(values)
    assert built.total_chars == sum(sizes)
    assert [f.chars for f in built.fragments] == sizes
    sent = [m.content for m in built.messages]
    expected = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
                for v in values if v != ""]
    assert sent == expected
    # Whatever was sent decodes back to the value that was measured.
    for fragment, value in zip(built.fragments, values, strict=True):
        assert fragment.value == value
