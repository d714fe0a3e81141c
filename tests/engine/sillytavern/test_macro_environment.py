"""One generation's macros under builtin-st: SillyTavern's order (the greeting and the typed message first, the
prompts, then the history newest first), one variable state through all of them, and the variables before and
after in the result."""

import pytest

from assembly import assemble
from assembly.sillytavern.macro_environment import MacroEnvironment


def request(prompts, *, history=(), typed=None, variables=None, engine="legacy", character=None):
    order = [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": engine,
            "resources": {"preset": {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]},
                          "character": character or {"name": "Zoe"}},
            "names": {"user": "Alex"},
            "conversation": {"history": list(history), "input": [typed] if typed else []}}
    if variables is not None:
        body["macro_variables"] = variables
    return assemble(body).model_dump(mode="json")


MAIN = {"identifier": "main", "role": "system", "content": "hp={{getvar::hp}}"}
HISTORY = {"identifier": "chatHistory", "marker": True}


@pytest.mark.parametrize("engine", ["legacy", "v2"])
def test_the_typed_message_sets_variables_before_the_prompts_read_them(engine):
    result = request([MAIN, HISTORY], typed={"role": "user", "content": "{{setvar::hp::9}}go"}, engine=engine)
    assert [m["content"] for m in result["request"]["messages"]] == ["hp=9", "go"]
    assert result["macro_variables"] == {"engine": engine, "before": {"local": {}, "global": {}},
                                         "after": {"local": {"hp": "9"}, "global": {}}}


def test_the_history_is_read_newest_first():
    history = [{"role": "assistant", "content": "Welcome."},
               {"role": "user", "content": "{{setvar::mood::calm}}I am {{user}}."},
               {"role": "assistant", "content": "Mood: [{{getvar::mood}}]"}]
    result = request([HISTORY], history=history)
    assert [m["content"] for m in result["request"]["messages"]] == ["Welcome.", "I am Alex.", "Mood: []"]


def test_the_request_variables_are_the_state_before():
    result = request([MAIN, HISTORY], variables={"local": {"hp": 3}, "global": {"seen": "yes"}},
                     typed={"role": "user", "content": "{{incvar::hp}} and {{getglobalvar::seen}}"})
    assert [m["content"] for m in result["request"]["messages"]] == ["hp=4", "4 and yes"]
    assert result["macro_variables"]["before"] == {"local": {"hp": 3}, "global": {"seen": "yes"}}
    assert result["macro_variables"]["after"] == {"local": {"hp": 4}, "global": {"seen": "yes"}}


def test_no_variable_no_report():
    assert "macro_variables" not in request([MAIN | {"content": "Hi {{user}}"}, HISTORY])


def test_a_card_prompt_its_macros_empty_overrides_nothing():
    character = {"name": "Zoe", "system_prompt": "{{setvar::tone::5}}"}
    result = request([{"identifier": "main", "role": "system", "content": "Main {{getvar::tone}}"}, HISTORY],
                     character=character)
    assert [m["content"] for m in result["request"]["messages"]] == ["Main 5"]


def test_a_chat_message_its_macros_empty_is_not_sent():
    history = [{"role": "user", "content": "{{setvar::a::1}}"}, {"role": "assistant", "content": "ok"}]
    assert [m["content"] for m in request([HISTORY], history=history)["request"]["messages"]] == ["ok"]


@pytest.mark.parametrize(("flag", "engine"), [(True, "v2"), (False, "legacy")])
def test_the_settings_file_says_which_engine(flag, engine):
    from assembly.sillytavern.settings import import_settings

    resources = import_settings({"power_user": {"experimental_macro_engine": flag},
                                 "extension_settings": {"variables": {"global": {"seen": "yes"}}}})
    assert (resources.macro_engine, resources.global_variables) == (engine, {"seen": "yes"})


def _settings_request(resources, **top):
    prompts = [{"identifier": "main", "role": "system", "content": "{{if user}}v2{{/if}} {{getglobalvar::seen}}"}]
    preset = {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": "main", "enabled": True}]}]}
    body = {"strategy": "builtin-st", "host": {"core_available": True},
            "resources": {"preset": preset, **resources}, **top}
    return [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]


def test_imported_settings_choose_the_engine_and_global_variables_unless_the_request_does():
    resources = {"macro_engine": "v2", "global_variables": {"seen": "yes"}}
    assert _settings_request(resources) == ["v2 yes"]
    assert _settings_request(resources, macro_engine="legacy") == ["{{if user}}v2{{/if}} yes"]
    assert _settings_request(resources, macro_variables={"global": {"seen": "no"}}) == ["v2 no"]


@pytest.mark.parametrize(("resources", "field"), [({"macro_engine": "v3"}, "macro_engine"),
                                                  ({"global_variables": []}, "global_variables")])
def test_a_bad_settings_value_is_refused_naming_it(resources, field):
    from assembly.errors import AssemblyError

    with pytest.raises(AssemblyError) as caught:
        _settings_request(resources)
    assert caught.value.code == "IMPORT_INVALID" and field in str(caught.value)


@pytest.mark.parametrize("engine", ["legacy", "v2"])
def test_a_macro_the_engine_does_not_know_is_sent_as_written_and_named(engine):
    result = request([{"identifier": "main", "role": "system", "content": "{{Nope}} {{user}} {{foo::x}}"}],
                     engine=engine)
    assert [m["content"] for m in result["request"]["messages"]] == ["{{Nope}} Alex {{foo::x}}"]
    assert [(d["id"], d["macro"]) for d in result["diagnostics"] if d["code"] == "UNSUPPORTED_MACRO"] == [
        ("preset:main", "Nope"), ("preset:main", "foo")]


def test_input_is_the_emptied_send_box_not_a_slot():
    prompts = [{"identifier": "main", "role": "system", "content": "said: [{{input}}]"}, HISTORY]
    result = request(prompts, typed={"role": "user", "content": "hello"})
    assert [m["content"] for m in result["request"]["messages"]] == ["said: []", "hello"]


def test_the_engines_share_no_remembered_answer():
    # the same resources and chat under each engine in turn: what one engine made is never served to the other
    prompts = [{"identifier": "main", "role": "system", "content": "{{reverse::{{user}}}}"}, HISTORY]
    history = [{"role": "user", "content": "a {{reverse::ab}}"}]
    answers = {engine: [m["content"] for m in request(prompts, history=history, engine=engine)["request"]["messages"]]
               for engine in ("legacy", "v2", "legacy")}
    assert answers["legacy"] != answers["v2"]
    assert [m["content"] for m in request(prompts, history=history, engine="v2")["request"]["messages"]] == \
        answers["v2"] == ["xelA", "a ba"]


def test_the_note_and_the_world_info_around_it_are_one_text_to_the_macros():
    # {{trim}} at the note's start takes the newline that joins the entry above the note (st-macros m8132)
    body = {"strategy": "builtin-st", "host": {"core_available": True},
            "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Main"}, HISTORY],
                                     "prompt_order": [{"character_id": 100001, "order": [
                                         {"identifier": "main", "enabled": True},
                                         {"identifier": "chatHistory", "enabled": True}]}]},
                          "character": {"name": "Zoe"},
                          "worldbook": {"activation": "all", "entries": [
                              {"uid": 1, "content": "raven ", "position": "before_author_note"}]},
                          "author_note": {"content": "{{trim}}forest", "position": "in_chat", "depth": 0}},
            "conversation": {"input": [{"role": "user", "content": "hi"}]}}
    contents = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert "raven forest" in contents


COMMUNITY_PROMPTS = [
    {"identifier": "main", "role": "system",
     "content": "{{// Nemo-style header}}{{setvar::style::vivid}}You are {{char}} talking with {{user}} ({{group}})."
                "{{newline}}Style: {{getvar::style}}. {{setglobalvar::runs::1}}Runs: {{getglobalvar::runs}}"},
    {"identifier": "nsfw", "role": "system", "content": "Examples as written:{{newline}}{{mesExamplesRaw}}{{trim}}"},
    {"identifier": "charPersonality", "marker": True},
    HISTORY,
]
COMMUNITY_CARD = {"name": "Zoe", "description": "A guide.", "personality": "calm",
                  "mes_example": "<START>\n{{user}}: hi\n{{char}}: hello"}


@pytest.mark.parametrize("engine", ["legacy", "v2"])
def test_a_community_style_preset_leaves_no_macro_behind(engine):
    preset_extra = {"personality_format": "{{char}}'s personality: {{personality}} ({{description}})"}
    order = [{"identifier": p["identifier"], "enabled": True} for p in COMMUNITY_PROMPTS]
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": engine,
            "names": {"user": "Alex"},
            "resources": {"preset": {"prompts": COMMUNITY_PROMPTS, **preset_extra,
                                     "prompt_order": [{"character_id": 100001, "order": order}]},
                          "character": COMMUNITY_CARD},
            "conversation": {"input": [{"role": "user", "content": "Hi {{char}}!"}]}}
    texts = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert texts == ["You are Zoe talking with Alex (Zoe).\nStyle: vivid. Runs: 1",
                     "Examples as written:\n<START>\nAlex: hi\nZoe: hello",
                     "Zoe's personality: calm (A guide.)", "[Start a new Chat]", "Hi Zoe!"]


def test_nested_macros_resolve_in_v2_and_are_cut_in_legacy_as_sillytavern_does():
    prompts = [{"identifier": "main", "role": "system",
                "content": "{{setvar::x::{{user}}}}{{setvar::x::{{getvar::x}} + more}}[{{getvar::x}}]"}, HISTORY]
    legacy = request(prompts, engine="legacy")["request"]["messages"][0]["content"]
    v2 = request(prompts, engine="v2")["request"]["messages"][0]["content"]
    assert v2 == "[Alex + more]"
    assert legacy == "}} + more}}[{{getvar::x]"  # the first "}}" ends each legacy pattern


def test_generate_reads_the_card_system_prompt_before_the_description():
    # Macros 2.0 reads a field only once a macro asks again: the override keeps what the system prompt read at the
    # start of Generate(), before the description set the variable
    character = {"name": "Zoe", "description": "{{setglobalvar::seen::yes}}",
                 "system_prompt": "seen={{hasglobalvar::seen}}"}
    result = request([{"identifier": "main", "role": "system", "content": "main"}], engine="v2", character=character)
    assert [m["content"] for m in result["request"]["messages"]] == ["seen=false"]


def test_a_pass_made_for_its_effects_alone_is_inert_only_with_names_alone_and_card_fields_that_read_the_same():
    steady = MacroEnvironment(engine="legacy", card={"description": "A quiet town."})
    steady.start_generation()
    assert steady.inert(["plain text", "", "{{user}} asks {{Char}}"])  # the names read nothing else
    assert not steady.inert(["plain", "hi {{user}} {{setvar::seen::1}}"]) and not steady.inert(["<USER> waves"])
    assert not steady.inert(["{{{{user}}}}"]) and not steady.inert(["{{us{{char}}er}}"])  # what is left holds one
    assert not MacroEnvironment(engine="v2").inert(["{{user}}x{{/user}}"])  # a scoped macro in Macros 2.0
    assert MacroEnvironment(engine="v2").inert(["a \\ b"]) is False  # an escape is Macros 2.0's to undo
    assert MacroEnvironment(engine="legacy").inert(["a \\ b"]) is False  # no field read yet: each call reads them
    # the legacy engine reads every card field in each call: a field that adds to a variable adds again
    restless = MacroEnvironment(engine="legacy", card={"description": "{{addvar::n::1}}"})
    restless.start_generation()
    assert not restless.inert(["plain text"])
    restless.evaluate("plain text")
    assert restless.variables.snapshot()["local"] == {"n": 2}


@pytest.mark.parametrize(("source", "model"), [("claude", "claude-x"), (None, "gpt-x"), (["claude"], ""),
                                               ({"source": "claude"}, ""), (7, "")])
def test_the_model_macro_reads_the_model_of_the_presets_source(source, model):
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "legacy",
            "resources": {"preset": {
                "chat_completion_source": source, "openai_model": "gpt-x", "claude_model": "claude-x",
                "prompts": [{"identifier": "main", "role": "system", "content": "model=[{{model}}]"}],
                "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main", "enabled": True}]}]}},
            "conversation": {"history": [], "input": []}}
    messages = assemble(body).model_dump(mode="json")["request"]["messages"]
    assert messages[0]["content"] == f"model=[{model}]"


def test_a_fork_changes_its_own_variables_and_notes_and_shares_what_it_only_reads():
    env = MacroEnvironment(user="Alex", char="Zoe", chat=[{"role": "user", "content": "hi"}])
    env.variables.local["bag"] = ["rope"]
    forked = env.fork()
    assert forked.evaluate("{{setvar::hp::3}}{{incvar::turns}}{{nosuchmacro}}") == "1{{nosuchmacro}}"  # incvar gives the new value
    forked.variables.local["bag"].append("lamp")
    assert env.variables.snapshot() == {"local": {"bag": ["rope"]}, "global": {}}
    assert forked.variables.snapshot() == {"local": {"bag": ["rope", "lamp"], "hp": "3", "turns": 1}, "global": {}}
    assert env.unsupported == [] and forked.unsupported == ["nosuchmacro"]
    assert forked.chat is env.chat


def test_an_applied_eviction_plan_runs_the_chat_s_macros_once():
    """engine.md §8 `apply` builds the request again without the evicted messages: the variables a kept message
    changes are changed once, as in the request built without the plan."""
    history = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Message {i} about the storm over the harbour tonight."} for i in range(8)]
    history[6]["content"] += " {{incvar::storms}}"
    body = {"strategy": "builtin-st", "host": {"core_available": True},
            "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Be Mira."},
                                                 HISTORY], "openai_max_context": 100_000, "openai_max_tokens": 300},
                          "character": {"name": "Mira"}},
            "conversation": {"history": history, "input": [{"id": "now", "role": "user", "content": "Go."}]}}
    whole = assemble(body)
    applied = assemble({**body, "budget": {"context_window": whole.tokens.total - 30, "apply": True}})
    assert applied.budget.applied and "history:m6" not in {item.id for item in applied.budget.eviction_plan}
    assert whole.macro_variables.after == applied.macro_variables.after == {"local": {"storms": 1}, "global": {}}
