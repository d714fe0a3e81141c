"""assemble() on arbitrary input: only AssemblyError, never another exception, never a mutated input."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly import AssemblyError, assemble

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "robot"])
message = st.fixed_dictionaries(
    {"role": ROLES, "content": st.text(max_size=20)},
    optional={"id": st.text(min_size=1, max_size=4), "tool_call_id": st.text(max_size=3),
              "tool_calls": st.lists(st.fixed_dictionaries({"id": st.text(max_size=3)}), max_size=2)},
)
prompt = st.fixed_dictionaries(
    {"identifier": st.sampled_from(["main", "jailbreak", "chatHistory", "worldInfoBefore", "charDescription",
                                    "dialogueExamples", "custom1", "custom2"])},
    optional={"role": ROLES, "content": st.text(max_size=30) | st.sampled_from(
        ["A{{history}}B", "{{input}}", "{{description}}", "{{outlet::x}}", "{{random::a::b}}", "{{weird}}"]),
        "marker": st.booleans(), "injection_position": st.sampled_from([0, 1, 2]),
        "injection_depth": st.integers(-1, 5), "enabled": st.booleans()},
)
entry = st.fixed_dictionaries(
    {"uid": st.integers(0, 5), "content": st.text(max_size=10)},
    optional={"position": st.sampled_from(["before", "after", "at_depth", "outlet", 4, 9, "nowhere"]),
              "depth": st.integers(-1, 4), "outlet_name": st.sampled_from(["x", "y"]), "order": st.integers(0, 3)},
)
request = st.fixed_dictionaries(
    {"strategy": st.sampled_from(["builtin-st", "builtin-native-slots", "builtin-native-roles", "nope"])
     | json_values},
    optional={
        "resources": st.fixed_dictionaries({}, optional={
            "preset": st.fixed_dictionaries({"prompts": st.lists(prompt, max_size=5)}) | json_values,
            "worldbook": st.fixed_dictionaries({"entries": st.lists(entry, max_size=4)}) | json_values,
            "character": st.fixed_dictionaries({"name": st.text(max_size=5)},
                                               optional={"description": st.text(max_size=10)}) | json_values}),
        "conversation": st.fixed_dictionaries({}, optional={"history": st.lists(message, max_size=5),
                                                            "input": st.lists(message, max_size=2)}) | json_values,
        "host": st.fixed_dictionaries({}, optional={"core_available": st.booleans(),
                                                    "contexts": st.lists(st.fixed_dictionaries(
                                                        {"name": st.text(max_size=5), "text": st.text(max_size=5)}),
                                                        max_size=2)}) | json_values,
        "budget": st.fixed_dictionaries({"context_window": st.integers(-1, 50)},
                                        optional={"apply": st.booleans()}) | json_values,
        "tokenizer": st.sampled_from(["o200k_base", "cl100k_base", "gpt2"]),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request)
def test_arbitrary_requests_answer_a_result_or_an_assembly_error(req):
    before = copy.deepcopy(req)
    try:
        result = assemble(req)
    except AssemblyError as error:
        assert error.code and isinstance(error.status, int) and str(error)
    else:
        assert result.ok and result.model_dump(mode="json")["ok"] is True
    assert req == before


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_arbitrary_json_is_refused_cleanly(value):
    try:
        assemble(value)
    except AssemblyError as error:
        assert error.status in (400, 404, 409, 413, 415, 422)


VALID_ROLES = st.sampled_from(["system", "user", "assistant"])
valid_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.text(max_size=20)})
valid_prompt = st.fixed_dictionaries(
    {"identifier": st.sampled_from(["main", "jailbreak", "chatHistory", "worldInfoBefore", "worldInfoAfter",
                                    "charDescription", "dialogueExamples", "personaDescription", "custom1"]),
     "role": VALID_ROLES,
     "content": st.text(max_size=20) | st.sampled_from(["A{{history}}B", "{{description}} x", "{{outlet::x}}",
                                                        "{{char}} and {{user}}", "{{weird}}"])},
    optional={"marker": st.booleans(), "injection_position": st.sampled_from([0, 1]),
              "injection_depth": st.integers(0, 6), "injection_order": st.integers(0, 200)},
)
valid_request = st.fixed_dictionaries({
    "strategy": st.sampled_from(["builtin-st", "builtin-native-slots", "builtin-native-roles"]),
    "resources": st.fixed_dictionaries({
        "preset": st.fixed_dictionaries({"prompts": st.lists(valid_prompt, max_size=6,
                                                             unique_by=lambda p: p["identifier"])}),
        "worldbook": st.fixed_dictionaries({"entries": st.lists(entry, max_size=5, unique_by=lambda e: e["uid"])}),
        "character": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=5),
                                            "description": st.text(max_size=10)}),
    }),
    "conversation": st.fixed_dictionaries({"history": st.lists(valid_message, max_size=6),
                                           "input": st.lists(valid_message, max_size=1)}),
    "host": st.fixed_dictionaries({"core_available": st.just(True)}),
})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_request)
def test_valid_shaped_requests_place_every_conversation_message_once(req):
    try:
        result = assemble(req)
    except AssemblyError as error:
        # only refusals the spec lists for such inputs: unknown positions, native limits, outlet markers
        assert error.code in ("IMPORT_INVALID", "ASSEMBLY_NATIVE_UNSUPPORTED", "OUTLET_MARKER_COUNT",
                              "NESTED_OUTLET"), error.code
        return
    conversation = req["conversation"]["history"] + req["conversation"]["input"]
    sent = [m for m in result.request.messages if m.delivery in ("history", "input")]
    expected = [m["content"] for m in conversation]
    if req["strategy"] == "builtin-st":
        expected = [c.replace("\r", "") for c in expected]  # SillyTavern drops carriage returns from the chat (§3)
    assert [m.content for m in sent] == expected
    assert result.tokens.total == sum(m.tokens for m in result.request.messages)
