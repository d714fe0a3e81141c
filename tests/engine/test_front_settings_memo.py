"""The settings memo (assembly.resource_memo settings_key / recalled_settings, api._Decided): what a request's
settings decide is remembered by their content, so a request repeating them only reads its conversation. Every answer
must equal a fresh one (the memos cleared), whatever the caller changes between two calls, and nothing a run hands
out or a caller keeps may share a mutable part with what is remembered."""

import copy

import pytest
from pydantic import BaseModel

from assembly import AssemblyError, api, assemble
from assembly.plan_memo import clear_plan_memo
from assembly.request import AssemblyRequest
from assembly.resource_memo import clear_settings_memo, recalled_settings, settings_key
from assembly.source_memo import clear_source_memo
from tests.engine.reference_rules import NATIVE_RULES
from tests.engine.test_assemble import B_LORE, B_PROMPTS, request


def _st_request():
    return copy.deepcopy(request("builtin-st", B_PROMPTS, lore=B_LORE, history=("OLD", "ANSWER"), names={"user": "Dana"},
                                 character={"name": "Seraphina", "description": "Guardian."}))


def _native_request():
    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "fixture", "backend": "native",
                "placement": "native-slots", "rules": copy.deepcopy(list(NATIVE_RULES)),
                "layout": {"version": 1, "source": "preset-slots", "identity": "position", "fallback": "source-order",
                           "overrides": [], "priority": ["preset", "resource", "default"]}}
    req = copy.deepcopy(request(strategy, B_PROMPTS, lore=B_LORE))
    req["host"].update({"official_sections": [{"name": "base", "text": "Host for {{who}}."}],
                        "variables": {"who": "Dana", "other": ["not", "text"]},
                        "contexts": [{"name": "sandbox:policy", "text": "SANDBOX"}, {"name": "own", "text": "OWN"}]})
    return req


def _answer(req):
    try:
        return assemble(req).model_dump_json()
    except AssemblyError as exc:
        return ("error", exc.code, exc.message, exc.status, exc.detail)


def _fresh(req):
    """The answer with no memo holding anything, to a copy (the caller's dict is not touched)."""
    clear_settings_memo()
    clear_plan_memo()
    clear_source_memo()
    return _answer(copy.deepcopy(req))


@pytest.fixture(autouse=True)
def _no_memo():
    clear_settings_memo()
    yield
    clear_settings_memo()


def _set(path, value):
    def change(req):
        *parents, last = path
        target = req
        for key in parents:
            target = target[key]
        target[last] = value
    return change


ST_CHANGES = {
    "strategy": _set(["strategy"], "builtin-native-slots"),
    "resources": _set(["resources", "preset", "prompts", 0, "content"], "HEAD, changed"),
    "worldbook": _set(["resources", "worldbook", "entries", 0, "content"], "LORE, changed"),
    "character": _set(["resources", "character", "name"], "Lilith"),
    "generation": _set(["generation"], {"type": "swipe"}),
    "quiet": _set(["generation"], {"type": "quiet", "quiet_prompt": "QUIET"}),
    "names": _set(["names"], {"user": "Ann", "char": "Char"}),
    "budget": _set(["budget"], {"context_window": 30, "reserve_output": 5, "apply": True}),
    "tokenizer": _set(["tokenizer"], "cl100k_base"),
    "model": _set(["model"], "gpt-4o"),
    "host": _set(["host", "core_available"], False),
    "unknown": _set(["surprise"], 1),
    "bool for int": _set(["budget"], {"context_window": True}),
    "content": _set(["conversation", "history", 0, "content"], "OLD, changed"),
    "input": _set(["conversation", "input"], []),
    "duplicate id": _set(["conversation", "input", 0, "id"], "h0"),
    "unsafe text": _set(["conversation", "history", 1, "content"], "lone \ud800"),
    "bad role": _set(["conversation", "history", 1, "role"], "narrator"),
    "tool call": _set(["conversation", "history", 1], {"id": "h1", "role": "assistant", "content": "",
                                                       "tool_calls": [{"id": "c1", "type": "function"}]}),
}

NATIVE_CHANGES = {
    "rule": _set(["strategy", "rules", 1, "enabled"], False),
    "layout": _set(["strategy", "layout", "priority"], ["default", "resource", "preset"]),
    "placement": _set(["strategy", "placement"], "native-roles"),
    "variables": _set(["host", "variables", "who"], "Ann"),
    "missing variable": _set(["host", "variables"], {}),
    "contexts": _set(["host", "contexts", 0, "text"], "SANDBOX, changed"),
    "sections": _set(["host", "official_sections", 0, "interpolate"], False),
    "update": _set(["host", "system_prompt_update"], "in-history"),
    "native off": _set(["host", "native_available"], False),
}


@pytest.mark.parametrize(("base", "change"), [(_st_request, c) for c in ST_CHANGES.values()]
                         + [(_native_request, c) for c in NATIVE_CHANGES.values()],
                         ids=[f"st-{n}" for n in ST_CHANGES] + [f"native-{n}" for n in NATIVE_CHANGES])
def test_a_request_changed_between_two_calls_gets_a_fresh_answer(base, change):
    req = base()
    first = _answer(req)
    assert _answer(req) == first  # the second call is served from the memo
    change(req)
    changed = _answer(req)
    again = _answer(req)
    assert changed == again == _fresh(req)
    assert _answer(base()) == first  # the original settings again: the same answer as before


def test_a_repeated_request_reads_only_its_conversation(monkeypatch):
    req = _st_request()
    first = _answer(req)
    calls = []
    monkeypatch.setattr(api, "read_request", lambda *a, **k: calls.append(a))
    req["conversation"]["history"][0]["content"] = "OLD, changed"
    changed = _answer(req)
    assert calls == [] and changed != first
    monkeypatch.undo()
    assert changed == _fresh(req)


def test_refused_settings_are_never_remembered():
    req = _native_request()
    req["host"]["variables"] = {}
    for _ in range(2):
        assert _answer(req)[:2] == ("error", "NATIVE_PREVIEW_VARIABLE_UNAVAILABLE")
    assert recalled_settings(settings_key(req).key) is None
    req["conversation"]["input"][0]["id"] = "h0"  # both refusals: the conversation's is found first, as ever
    assert _answer(req) == _fresh(req) and _answer(req)[1] == "ASSEMBLY_REQUEST_INVALID"


def _containers(value, found, seen):
    """The ids of every mutable container reachable from `value` (models, dicts, lists, sets)."""
    if id(value) in seen:
        return found
    seen.add(id(value))
    if isinstance(value, BaseModel):
        children = [*value.__dict__.values(), *(value.__pydantic_extra__ or {}).values()]
        if not value.model_config.get("frozen"):
            found.add(id(value))
    elif isinstance(value, dict):
        children = [*value.keys(), *value.values()]
        found.add(id(value))
    elif isinstance(value, (list, set)):
        children = list(value)
        found.add(id(value))
    elif isinstance(value, tuple):
        children = list(value)
    elif isinstance(value, api._Decided):
        children = [getattr(value, name) for name in value.__slots__]
    else:
        return found
    for child in children:
        _containers(child, found, seen)
    return found


@pytest.mark.parametrize("base", [_st_request, _native_request])
def test_what_is_remembered_shares_nothing_with_the_caller_or_a_result(base):
    req = base()
    result = assemble(req)
    hit = assemble(req)
    decided = recalled_settings(settings_key(req).key)
    assert decided is not None
    # the engine's own shared values (an empty conversation, a built-in's rules) are read only and no result's
    remembered = _containers(decided, set(), set()) - _containers(api.READ_CONVERSATION, set(), set())
    assert not remembered & _containers(req, set(), set())
    assert not remembered & _containers(result, set(), set())
    assert not remembered & _containers(hit, set(), set())


def test_changing_a_result_or_the_callers_dict_changes_no_later_answer():
    req = _native_request()
    first = _answer(req)
    result = assemble(req)
    result.layout.policy["priority"].reverse()
    result.runtime_context_controls[0].enabled = not result.runtime_context_controls[0].enabled
    result.nodes.clear()
    # the caller changes its strategy in place (a new key), then sends the old settings again in a new dict
    req["strategy"]["rules"][1]["enabled"] = False
    req["host"]["variables"]["other"].append("more")
    _answer(req)
    assert _answer(_native_request()) == first == _fresh(_native_request())


def test_the_memo_is_bounded():
    first = _st_request()
    assemble(first)
    for number in range(70):
        other = _st_request()
        other["names"] = {"user": f"user {number}"}
        assemble(other)
    assert recalled_settings(settings_key(first).key) is None
    assert _answer(first) == _fresh(first)


def test_keys_follow_content_and_refuse_what_is_not_plain_data():
    req = _st_request()
    assert settings_key(req) == settings_key(copy.deepcopy(req))
    changed = copy.deepcopy(req)
    changed["conversation"]["history"].clear()
    assert settings_key(changed) == settings_key(req)  # the conversation is not a setting
    changed["names"]["user"] = "Ann"
    assert settings_key(changed) != settings_key(req)
    assert settings_key({**req, "budget": {"context_window": 1}}) != settings_key({**req, "budget": {"context_window": True}})
    assert settings_key({**req, "resources": {"preset": object()}}) is None


def test_a_request_model_takes_the_general_path():
    req = _st_request()
    model = AssemblyRequest.model_validate(copy.deepcopy(req))
    fresh = _fresh(req)
    clear_settings_memo()
    assert assemble(model).model_dump_json() == fresh
    assert recalled_settings(settings_key(req).key) is None  # a model is not remembered
    assert [m.content for m in model.conversation.history] == ["OLD", "ANSWER"]  # nor its conversation dropped
    assemble(req)
    assert assemble(model).model_dump_json() == _answer(req)


def test_a_dict_subclass_is_not_remembered():
    class Request(dict):
        pass

    req = _st_request()
    fresh = _fresh(req)
    clear_settings_memo()
    assert assemble(Request(req)).model_dump_json() == fresh
    assert recalled_settings(settings_key(req).key) is None
