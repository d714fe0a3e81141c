"""builtin-st follows SillyTavern's message rules (sillytavern.md §4.3, §4.5, §4.7; engine.md §5 parity)."""

import json

import pytest

from assembly import assemble
from assembly.tokens import count_tokens


@pytest.fixture(scope="module")
def default_preset(shared_fixtures):
    return json.loads((shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_text(encoding="utf-8"))


def run(preset, *, history=("Hello there.", "Hi, traveller."), lore=(), character=None, names=None):
    chat = [{"id": f"h{i}", "role": "user" if i % 2 == 0 else "assistant", "content": t}
            for i, t in enumerate(history)]
    resources = {"preset": preset,
                 "character": character or {"name": "Sera", "description": "A forest guardian."}}
    if lore:
        resources["worldbook"] = {"entries": list(lore), "activation": "all"}
    return assemble({"strategy": "builtin-st", "resources": resources,
                     "conversation": {"history": chat, "input": [{"id": "now", "role": "user", "content": "Go on."}]},
                     "host": {"core_available": True}, "names": names or {"user": "Alex"}})


def contents(result):
    return [m.content for m in result.request.messages]


def test_the_new_chat_separator_sits_right_above_the_history(default_preset):
    result = run(default_preset)
    texts = contents(result)
    # Default.json carries SillyTavern's utility prompts; new_chat_prompt is "[Start a new Chat]"
    assert texts[texts.index("Hello there.") - 1] == "[Start a new Chat]"
    separator = result.request.messages[texts.index("Hello there.") - 1]
    assert separator.role == "system" and separator.delivery == "request"


def test_world_info_of_one_slot_is_one_message(default_preset):
    lore = [{"uid": 1, "content": "First lore.", "position": "before", "order": 10},
            {"uid": 2, "content": "Second lore.", "position": "before", "order": 20}]
    result = run(default_preset, lore=lore)
    merged = [m for m in result.request.messages if "First lore." in m.content]
    assert len(merged) == 1 and merged[0].content == "First lore.\nSecond lore."  # wi_format "{0}": the text as is
    assert [p.split(":")[-1] for p in merged[0].parts] == ["1", "2"]  # both entries, each explained by its node


def test_in_chat_prompts_of_one_depth_order_and_role_merge(default_preset):
    preset = json.loads(json.dumps(default_preset))
    preset["prompts"].extend([
        {"identifier": "a1", "name": "A1", "role": "system", "content": "ALPHA", "injection_position": 1,
         "injection_depth": 1, "injection_order": 100},
        {"identifier": "a2", "name": "A2", "role": "system", "content": "BETA", "injection_position": 1,
         "injection_depth": 1, "injection_order": 100},
    ])
    order = next(o for o in preset["prompt_order"] if o["character_id"] == 100001)["order"]
    order.extend([{"identifier": "a1", "enabled": True}, {"identifier": "a2", "enabled": True}])
    texts = contents(run(preset))
    # depth 1: before the last chat message (the input); one message for the bucket, joined with "\n"
    assert texts[texts.index("Go on.") - 1] == "ALPHA\nBETA"


def test_dialogue_examples_become_example_chat_blocks(default_preset):
    character = {"name": "Sera", "description": "A forest guardian.",
                 "mes_example": "<START>\n{{user}}: Who are you?\n{{char}}: A guardian."}
    result = run(default_preset, character=character)
    examples = [m for m in result.request.messages if m.name in ("example_user", "example_assistant")]
    assert [(m.name, m.content) for m in examples] == [("example_user", "Who are you?"),
                                                      ("example_assistant", "A guardian.")]
    header = result.request.messages[result.request.messages.index(examples[0]) - 1]
    assert header.content == "[Example Chat]"


@pytest.mark.parametrize("card_examples", [True, False])
def test_world_info_at_the_example_positions_becomes_example_dialogues(default_preset, card_examples):
    # §7.5: each entry's text is parsed like the card's examples; EMTop entries go in front of the card's blocks
    # (taken in ascending order, each put first, so they end up descending), EMBottom entries after them.
    character = {"name": "Sera", "description": "A forest guardian.",
                 "mes_example": "<START>\n{{user}}: Who are you?\n{{char}}: A guardian." if card_examples else ""}
    lore = [{"uid": 1, "content": "<START>\n{{user}}: Top low?\n{{char}}: Yes.", "position": "before_example_messages",
             "order": 10},
            {"uid": 2, "content": "{{user}}: Top high?\n{{char}}: Also.", "position": "before_example_messages",
             "order": 20},
            {"uid": 3, "content": "<START>\n{{user}}: Bottom?\n{{char}}: Last.", "position": "after_example_messages",
             "order": 5}]
    result = run(default_preset, character=character, lore=lore)
    messages = result.request.messages
    start = next(i for i, m in enumerate(messages) if m.content == "[Example Chat]")
    shown = [(m.name, m.content) for m in messages[start:] if m.name in ("example_user", "example_assistant")
             or m.content == "[Example Chat]"]
    card = [("example_user", "Who are you?"), ("example_assistant", "A guardian.")] if card_examples else []
    header = [(None, "[Example Chat]")]
    expected = (header + [("example_user", "Top high?"), ("example_assistant", "Also.")]
                + header + [("example_user", "Top low?"), ("example_assistant", "Yes.")]
                + (header + card if card else [])
                + header + [("example_user", "Bottom?"), ("example_assistant", "Last.")])
    assert shown == expected
    assert not any("Top low?" in m.content and m.name is None for m in messages)  # not also sent as a wrapped prompt
    sources = {n.id: n.module for n in result.nodes}
    parts = [p for m in messages if m.content == "Top high?" for p in m.parts]
    assert [sources[p] for p in parts] == ["worldbook"]


def test_content_names_prefix_chat_messages(default_preset):
    preset = dict(default_preset, names_behavior=2)
    texts = contents(run(preset))
    assert "Alex: Hello there." in texts and "Sera: Hi, traveller." in texts



def test_each_node_counts_its_own_text_where_its_message_says_more(default_preset):
    # content names prefix the chat messages: a node's text is not its message's, so it is counted on its own
    result = run(dict(default_preset, names_behavior=2))
    tokens = {v.id: v.tokens for v in result.nodes}
    assert {v.id: count_tokens(v.text) for v in result.nodes} == tokens
    assert any(m.content != v.text for m in result.request.messages for v in result.nodes if m.parts == [v.id])


# sillytavern.md §5 worked examples, end to end through assemble() -----------------------------------------------

CHAT = [("M1", "user"), ("M2", "assistant"), ("M3", "user"), ("M4", "assistant"), ("M5", "user")]


def in_chat(identifier, role, depth, order=100, content=None):
    return {"identifier": identifier, "name": identifier, "role": role, "content": content or identifier,
            "injection_position": 1, "injection_depth": depth, "injection_order": order}


def utility_preset(prompts):
    """A bare preset with SillyTavern's utility prompts (so the new-chat separator is sent)."""
    return {"prompts": [{"identifier": "chatHistory", "name": "Chat History", "marker": True}, *prompts],
            "new_chat_prompt": "[Start a new Chat]", "new_example_chat_prompt": "[Example Chat]"}


def run_chat(preset, chat=CHAT, generation="normal", **resources):
    history = [{"id": t, "role": r, "content": t} for t, r in chat[:-1]]
    last = [{"id": chat[-1][0], "role": chat[-1][1], "content": chat[-1][0]}] if chat else []
    return assemble({"strategy": "builtin-st", "resources": {"preset": preset, **resources},
                     "conversation": {"history": history, "input": last}, "host": {"core_available": True},
                     "generation": {"type": generation}})


def pairs(result):
    return [(m.content, m.role) for m in result.request.messages]


def test_section5_depths_0_1_2_and_beyond_the_chat():
    preset = utility_preset([in_chat("D0", "user", 0), in_chat("D1", "system", 1), in_chat("D2", "assistant", 2),
                             in_chat("D10", "system", 10)])
    assert pairs(run_chat(preset)) == [
        ("[Start a new Chat]", "system"), ("D10", "system"), ("M1", "user"), ("M2", "assistant"), ("M3", "user"),
        ("D2", "assistant"), ("M4", "assistant"), ("D1", "system"), ("M5", "user"), ("D0", "user")]


def test_section5_one_depth_mixed_buckets():
    preset = utility_preset([in_chat("pm50sys", "system", 1, 50), in_chat("pm100sys", "system", 1),
                             in_chat("pm100user", "user", 1), in_chat("pm100asst", "assistant", 1),
                             in_chat("pm200sys", "system", 1, 200)])
    lore = {"activation": "all", "entries": [{"uid": 1, "content": "WI@1(user)", "position": "at_depth", "depth": 1,
                                              "role": "user"}]}
    character = {"name": "C", "description": "", "extensions": {"depth_prompt": {"prompt": "CHARNOTE", "depth": 1,
                                                                                "role": "system"}}}
    note = {"content": "AN", "position": "in_chat", "depth": 1, "role": "system"}
    result = run_chat(preset, worldbook=lore, character=character, author_note=note)
    texts = pairs(result)
    start = texts.index(("M4", "assistant"))
    assert texts[start:start + 7] == [
        ("M4", "assistant"), ("pm50sys", "system"), ("pm100asst", "assistant"), ("pm100user\nWI@1(user)", "user"),
        ("pm100sys\nAN\nCHARNOTE", "system"), ("pm200sys", "system"), ("M5", "user")]


def test_section5_empty_chat_with_d0_and_d3():
    preset = utility_preset([in_chat("D0", "system", 0), in_chat("D3", "system", 3)])
    assert [c for c, _ in pairs(run_chat(preset, chat=[]))] == ["[Start a new Chat]", "D3", "D0"]


def test_section5_author_note_defaults_land_between_m1_and_m2():
    result = run_chat(utility_preset([]), author_note={"content": "NOTE"})
    texts = [c for c, _ in pairs(result)]
    assert texts[texts.index("M1") + 1] == "NOTE" and texts[texts.index("NOTE") + 1] == "M2"


def test_section5_continue_without_prefill_moves_the_last_message_after_everything():
    chat = CHAT + [("M6", "assistant")]
    preset = utility_preset([{"identifier": "jailbreak", "name": "PHI", "role": "system", "content": "PHI"}])
    history = [{"id": t, "role": r, "content": t} for t, r in chat]
    result = assemble({"strategy": "builtin-st", "resources": {"preset": preset, "author_note": {
        "content": "AN@0", "depth": 0}}, "conversation": {"history": history, "input": []},
        "host": {"core_available": True}, "generation": {"type": "continue"}})
    assert [c for c, _ in pairs(result)][-5:] == [
        "M5", "AN@0", "PHI", "M6", "[Continue your last message without repeating its original content.]"]


@pytest.mark.parametrize(("source", "expected"), [
    ("claude", "Sera thinks.\n\nM6"),  # §4.2 step 9: Claude's prefill, macros expanded, then a blank line
    ("openai", "M6"),
])
def test_continue_prefill_puts_claudes_assistant_prefill_first(source, expected):
    chat = CHAT + [("M6", "assistant")]
    preset = {**utility_preset([]), "continue_prefill": True, "assistant_prefill": "{{char}} thinks.",
              "chat_completion_source": source}
    history = [{"id": t, "role": r, "content": t} for t, r in chat]
    result = assemble({"strategy": "builtin-st", "resources": {"preset": preset, "character": {"name": "Sera"}},
                       "conversation": {"history": history, "input": []}, "host": {"core_available": True},
                       "generation": {"type": "continue"}})
    last = result.request.messages[-1]
    assert (last.role, last.content) == ("assistant", expected)


def test_persona_at_depth_and_an_extension_prompt_before_main():
    preset = utility_preset([{"identifier": "main", "name": "Main", "role": "system", "content": "MAIN"}])
    result = run_chat(preset, persona={"name": "P", "description": "PERSONA", "position": "at_depth", "depth": 2},
                      extension_prompts=[{"key": "1_memory", "content": "SUMMARY", "position": "before_main"}])
    texts = [c for c, _ in pairs(result)]
    assert texts.index("SUMMARY") + 1 == texts.index("MAIN")
    # depth 2: two chat messages follow it
    assert texts[texts.index("PERSONA") + 1:texts.index("PERSONA") + 3] == ["M4", "M5"]
    sources = {n.id: n.module for n in result.nodes}
    assert sources["persona:persona"] == "persona" and sources["extension:1_memory"] == "extension"


@pytest.mark.parametrize("resources", [
    {"author_note": {"content": "Keep {{char}} terse for {{user}}.", "depth": 1}},
    {"author_note": {"content": "Keep {{char}} terse for {{user}}.", "position": "after_main"}},
    {"extension_prompts": [{"key": "1_memory", "content": "Keep {{char}} terse for {{user}}.", "position": "in_chat",
                            "depth": 1}]},
    {"persona": {"name": "Alex", "description": "Keep {{char}} terse for {{user}}.", "position": "at_depth"}},
])
def test_injected_texts_get_their_macros_expanded(resources):
    # getExtensionPrompt macro-substitutes in-chat values; relative ones go through preparePrompt (§4.1, §4.5).
    preset = utility_preset([{"identifier": "main", "name": "Main", "role": "system", "content": "MAIN"}])
    result = assemble({"strategy": "builtin-st",
                       "resources": {"preset": preset, "character": {"name": "Sera"}, **resources},
                       "conversation": {"history": [{"id": "m1", "role": "user", "content": "M1"}],
                                        "input": [{"id": "m2", "role": "user", "content": "M2"}]},
                       "host": {"core_available": True}, "names": {"user": "Alex"}})
    texts = [c for c, _ in pairs(result)]
    assert "Keep Sera terse for Alex." in texts
    assert not any("{{" in t for t in texts)


def test_every_chat_message_gets_its_macros_expanded():
    # SillyTavern 1.18 substitutes the text macros of every chat message it sends (the oracle), not
    # only of the greeting.
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": utility_preset([]), "character": {"name": "Sera"}},
                       "conversation": {"history": [
                           {"id": "g", "role": "assistant", "content": "Welcome, {{user}}. I am {{char}}."},
                           {"id": "u1", "role": "user", "content": "Is {{char}} a macro?"},
                           {"id": "a1", "role": "assistant", "content": "{{user}}, it is."}],
                           "input": [{"id": "i", "role": "user", "content": "Thanks, {{char}}"}]},
                       "names": {"user": "Alex"}})
    assert [c for c, _ in pairs(result)][1:] == ["Welcome, Alex. I am Sera.", "Is Sera a macro?", "Alex, it is.",
                                                 "Thanks, Sera"]


SWIPE_PRESET = {"prompts": [
    {"identifier": "main", "role": "system", "content": "MAIN"},
    {"identifier": "chatHistory", "marker": True},
    {"identifier": "onSwipe", "role": "system", "content": "SWIPE ONLY", "injection_trigger": ["swipe"]},
    {"identifier": "onRegenerate", "role": "system", "content": "REGENERATE ONLY", "injection_trigger": ["regenerate"]}],
    "prompt_order": [{"character_id": 100001, "order": [{"identifier": i, "enabled": True} for i in (
        "main", "chatHistory", "onSwipe", "onRegenerate")]}]}


@pytest.mark.parametrize(("generation", "history", "expected", "left_out"), [
    ("normal", ["Hi", "Hello!"], ["MAIN", "Hi", "Hello!"], None),
    # §3: a swipe pops the chat's last message; §2.6: prompts whose trigger names the type join
    ("swipe", ["Hi", "Hello!"], ["MAIN", "Hi", "SWIPE ONLY"], "h1"),
    ("swipe", [], ["MAIN", "SWIPE ONLY"], None),  # nothing to leave out; the trigger still applies
    ("regenerate", ["Hi", "Hello!"], ["MAIN", "Hi", "Hello!", "REGENERATE ONLY"], None),
])
def test_swipe_leaves_out_the_last_message_and_triggers_pick_prompts(generation, history, expected, left_out):
    chat = [{"id": f"h{i}", "role": "user" if i % 2 == 0 else "assistant", "content": t}
            for i, t in enumerate(history)]
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": SWIPE_PRESET}, "conversation": {"history": chat},
                       "generation": {"type": generation}})
    assert [c for c, _ in pairs(result)] == expected
    swiped = [d.model_dump() for d in result.diagnostics if d.code == "ST_SWIPE_LEFT_OUT"]
    assert swiped == ([{"code": "ST_SWIPE_LEFT_OUT", "id": left_out, "role": "assistant"}] if left_out else [])
    assert all(n.id != f"history:{left_out}" for n in result.nodes)


@pytest.mark.parametrize(("history", "send_if_empty", "expected_tail"), [
    # §4.3 / §11.15: only after an assistant message, only when the setting has text
    ([("Hi", "user"), ("Hello!", "assistant")], "[Continue.]", ["Hello!", "[Continue.]", "PHI"]),
    ([("Hi", "user"), ("Hello!", "assistant")], "", ["Hello!", "PHI"]),
    ([("Hello!", "assistant"), ("Hi", "user")], "[Continue.]", ["Hi", "PHI"]),
])
def test_send_if_empty_closes_a_chat_that_ends_with_the_assistant(history, send_if_empty, expected_tail):
    preset = utility_preset([{"identifier": "jailbreak", "name": "PHI", "role": "system", "content": "PHI"}])
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": {**preset, "send_if_empty": send_if_empty}},
                       "conversation": {"history": [{"id": f"h{i}", "role": r, "content": t}
                                                    for i, (t, r) in enumerate(history)]}})
    texts = [c for c, _ in pairs(result)]
    assert texts[-len(expected_tail):] == expected_tail
    filler = [m for m in result.request.messages if m.content == "[Continue.]"]
    assert all(m.role == "user" and m.history_status == "request-only" for m in filler)


@pytest.mark.parametrize("strategy", ["builtin-native-slots", "builtin-native-roles"])
def test_chat_injections_the_strategy_cannot_place_are_named(strategy):
    result = assemble({"strategy": strategy, "resources": {
        "author_note": {"content": "NOTE"},
        "extension_prompts": [{"key": "1_memory", "content": "SUMMARY"}, {"key": "3_vectors", "content": " "}]},
        "conversation": {"input": [{"id": "u", "role": "user", "content": "Hi"}]}})
    unused = [d.details for d in result.diagnostics if d.code == "CHAT_EXTENSION_UNUSED"]
    assert [(d["resource"], d["name"]) for d in unused] == [("author_note", "Author's note"),
                                                           ("extension_prompts", "1_memory")]
    assert all(m.content not in ("NOTE", "SUMMARY") for m in result.request.messages)


def test_builtin_st_places_the_note_and_raises_no_unused_diagnostic():
    result = run_chat(utility_preset([]), author_note={"content": "NOTE"})
    assert "NOTE" in [c for c, _ in pairs(result)]
    assert all(d.code != "CHAT_EXTENSION_UNUSED" for d in result.diagnostics)


def test_generation_triggers_and_the_impersonation_prompt():
    preset = utility_preset([
        {"identifier": "main", "name": "Main", "role": "system", "content": "MAIN"},
        {"identifier": "only-normal", "name": "N", "role": "system", "content": "NORMAL ONLY",
         "injection_trigger": ["normal"]},
    ])
    preset["impersonation_prompt"] = "[Write your next reply from the point of view of {{user}}.]"
    normal = [c for c, _ in pairs(run_chat(preset))]
    assert "NORMAL ONLY" in normal
    impersonate = [c for c, _ in pairs(run_chat(preset, generation="impersonate"))]
    assert "NORMAL ONLY" not in impersonate  # its trigger names another generation type
    assert impersonate[-1] == "[Write your next reply from the point of view of User.]"


def test_the_preset_budget_keeps_the_newest_history_and_lists_what_it_drops():
    preset = utility_preset([{"identifier": "main", "name": "Main", "role": "system", "content": "MAIN"}])
    preset.update(openai_max_context=80, openai_max_tokens=10)
    chat = [(f"message number {i} with a few words in it", "user" if i % 2 == 0 else "assistant")
            for i in range(12)]
    result = run_chat(preset, chat=chat)
    sent = [m.content for m in result.request.messages if m.delivery in ("history", "input")]
    everything = [t for t, _ in chat]
    assert sent and len(sent) < len(everything)
    assert sent == everything[-len(sent):]  # newest first: what is kept is the end of the chat
    dropped = [d for d in result.budget.dropped if d["part"] == "history"]
    assert [d["message_ids"][0] for d in dropped] and {d["reason"] for d in dropped} <= {"over_budget", "after_cut"}
    assert result.budget.source == "preset" and result.budget.limit == 70


def test_mandatory_prompts_over_the_context_are_reported_with_sillytaverns_message():
    preset = utility_preset([{"identifier": "main", "name": "Main", "role": "system", "content": "word " * 200}])
    preset.update(openai_max_context=50, openai_max_tokens=10)
    result = run_chat(preset)
    failure = next(d for d in result.diagnostics if d.code == "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT")
    assert failure.details["message"] == "Mandatory prompts exceed the context size."


# the default preset under each of these conditions ---------------------------------------------


def order_of(preset):
    return next(o for o in preset["prompt_order"] if o["character_id"] == 100001)["order"]


def test_card_overrides_main_and_post_history_with_original(default_preset):
    character = {"name": "Sera", "description": "A forest guardian.",
                 "system_prompt": "CARD MAIN, then {{original}}", "post_history_instructions": "CARD PHI"}
    texts = contents(run(default_preset, character=character))
    main = next(m for m in default_preset["prompts"] if m["identifier"] == "main")["content"]
    expected_main = "CARD MAIN, then " + main.replace("{{char}}", "Sera").replace("{{user}}", "Alex")
    assert texts[0] == expected_main
    # jailbreak is enabled in the default order, so the card's instructions replace it right after the chat
    assert texts[texts.index("Go on.") + 1] == "CARD PHI"


def test_forbid_overrides_keeps_the_preset_main(default_preset):
    preset = json.loads(json.dumps(default_preset))
    next(m for m in preset["prompts"] if m["identifier"] == "main")["forbid_overrides"] = True
    character = {"name": "Sera", "description": "A forest guardian.", "system_prompt": "CARD MAIN"}
    assert "CARD MAIN" not in contents(run(preset, character=character))


def test_disabled_main_still_anchors_what_goes_before_it(default_preset):
    preset = json.loads(json.dumps(default_preset))
    next(e for e in order_of(preset) if e["identifier"] == "main")["enabled"] = False
    result = run(preset, character=None)
    texts = contents(result)
    assert not any(t.startswith("Write Sera's next reply") for t in texts)
    with_note = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                          "resources": {"preset": preset, "character": {"name": "Sera", "description": "D."},
                                        "author_note": {"content": "NOTE FIRST", "position": "before_main"}},
                          "conversation": {"input": [{"id": "n", "role": "user", "content": "Hi"}]}})
    assert [m.content for m in with_note.request.messages][0] == "NOTE FIRST"


def test_a_custom_relative_prompt_is_one_message_where_the_order_puts_it(default_preset):
    preset = json.loads(json.dumps(default_preset))
    preset["prompts"].append({"identifier": "custom-style", "name": "Style", "role": "system",
                              "content": "Use short sentences."})
    order = order_of(preset)
    order.insert([e["identifier"] for e in order].index("chatHistory"), {"identifier": "custom-style",
                                                                           "enabled": True})
    texts = contents(run(preset))
    assert texts[texts.index("[Start a new Chat]") - 1] == "Use short sentences."


def test_completion_names_go_in_the_name_field(default_preset):
    preset = dict(default_preset, names_behavior=1)
    result = run(preset)
    chat = {m.content: m.name for m in result.request.messages if m.delivery in ("history", "input")}
    assert chat == {"Hello there.": "Alex", "Hi, traveller.": "Sera", "Go on.": "Alex"}


def test_an_empty_chat_still_gets_its_separator_and_no_fabricated_messages(default_preset):
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": default_preset, "character": {"name": "Sera", "description": "D."}},
                       "conversation": {"history": [], "input": []}})
    texts = contents(result)
    assert texts[-1] == "[Start a new Chat]" and all(m.delivery == "request" for m in result.request.messages)


def test_old_presets_wrap_scenario_and_personality(shared_fixtures):
    old = json.loads((shared_fixtures / "sillytavern" / "st_cc_preset_Default.v1.12.6.json").read_text(encoding="utf-8"))
    # the 1.12.6 file's own wrappers (sillytavern.md §9.1 table): personality and scenario in brackets
    assert "{{personality}}" in old["personality_format"] and "{{scenario}}" in old["scenario_format"]
    character = {"name": "Sera", "description": "D.", "personality": "kind", "scenario": "a glade"}
    texts = contents(run(old, character=character))
    assert old["personality_format"].replace("{{char}}", "Sera").replace("{{personality}}", "kind") in texts
    assert old["scenario_format"].replace("{{char}}", "Sera").replace("{{scenario}}", "a glade") in texts


def _with_settings(preset, settings, *, character, lore=(), history=("Hello there.", "Hi, traveller.")):
    chat = [{"id": f"h{i}", "role": "user" if i % 2 == 0 else "assistant", "content": t}
            for i, t in enumerate(history)]
    resources = {"preset": preset, "character": character, "text_settings": settings}
    if lore:
        resources["worldbook"] = {"entries": list(lore), "activation": "all"}
    return assemble({"strategy": "builtin-st", "resources": resources, "host": {"core_available": True},
                     "conversation": {"history": chat, "input": [{"id": "now", "role": "user", "content": "Go on."}]},
                     "names": {"user": "Alex"}})


EXAMPLE_CARD = {"name": "Sera", "description": "A forest guardian.",
                "mes_example": "<START>\n{{user}}: Who are you?\n{{char}}: A guardian."}


def test_never_include_examples_sends_no_example_dialogue_nor_the_world_info_at_their_positions(default_preset):
    """sillytavern.md §6: strip_examples ("Never include") empties the examples array, the entries spliced in too."""
    lore = [{"uid": 1, "content": "<START>\n{{user}}: Top?\n{{char}}: Yes.", "position": "before_example_messages",
             "order": 10}]
    kept = contents(_with_settings(default_preset, {}, character=EXAMPLE_CARD, lore=lore))
    assert "[Example Chat]" in kept and "Who are you?" in kept and "Top?" in kept
    stripped = _with_settings(default_preset, {"strip_examples": True}, character=EXAMPLE_CARD, lore=lore)
    texts = contents(stripped)
    assert "[Example Chat]" not in texts and "Who are you?" not in texts and "Top?" not in texts
    # everything else is sent as before
    assert [t for t in kept if t not in ("[Example Chat]", "Who are you?", "A guardian.", "Top?", "Yes.")] == texts


def test_always_included_examples_take_the_budget_before_the_history(default_preset):
    """sillytavern.md §6: the history is filled first and the examples get what is left, unless pin_examples."""
    history = tuple(f"Old message number {i} with a few more words in it." for i in range(12))
    roomy = _with_settings(default_preset, {}, character=EXAMPLE_CARD, history=history)
    base = contents(roomy)
    used = roomy.budget.limit - roomy.budget.remaining  # what SillyTavern's budget charged for everything
    # five tokens short: less than any message or example block costs, so exactly one part must give way
    preset = {**default_preset, "openai_max_tokens": 100, "openai_max_context": 100 + used - 5}
    gradual = contents(_with_settings(preset, {}, character=EXAMPLE_CARD, history=history))
    pinned = contents(_with_settings(preset, {"pin_examples": True}, character=EXAMPLE_CARD, history=history))
    assert "Who are you?" in base
    # gradual: the examples give way first, every chat message stays
    assert "Who are you?" not in gradual and all(h in gradual for h in history)
    # pinned: the examples stay and the oldest chat message gives way instead
    assert "Who are you?" in pinned and history[0] not in pinned and history[-1] in pinned
