"""Generate()'s order of SillyTavern's macros over the prompts (assembly.sillytavern.macro_order): what runs before
the prompt list, and in which order, decides what variable macros see."""

from assembly import assemble

HISTORY = {"identifier": "chatHistory", "marker": True}


def request(prompts, *, character, engine="v2", preset=None, history=()):
    order = [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": engine,
            "resources": {"preset": {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}],
                                     **(preset or {})},
                          "character": {"name": "Zoe", **character}},
            "names": {"user": "Alex"},
            "conversation": {"history": list(history), "input": []}}
    return [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]


def test_the_story_string_runs_the_macros_a_card_field_still_holds():
    # an escaped macro is text after the field's own pass; renderStoryString's pass runs it, then the marker's
    sent = request([{"identifier": "charDescription", "marker": True}],
                   character={"description": "\\{\\{incvar::n\\}\\}"})
    assert sent == ["2"]


def test_the_group_nudge_and_impersonation_prompt_run_before_the_prompt_list():
    sent = request([{"identifier": "main", "role": "system", "content": "n={{getvar::n}}"}], character={},
                   preset={"group_nudge_prompt": "{{incvar::n}}", "impersonation_prompt": "{{incvar::n}}"})
    assert sent == ["n=2"]


def test_an_impersonation_sends_its_prompt_through_the_macros_and_other_generations_still_run_its_effects():
    main = {"identifier": "main", "role": "system", "content": "n={{getvar::n}}"}
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "legacy",
            "resources": {"preset": {"prompts": [main], "impersonation_prompt": "[As {{user}}, not {{char}}]",
                                     "prompt_order": [{"character_id": 100001, "order": [
                                         {"identifier": "main", "enabled": True}]}]},
                          "character": {"name": "Zoe"}},
            "names": {"user": "Alex"}, "conversation": {"history": [], "input": []},
            "generation": {"type": "impersonate"}}
    sent = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert sent == ["n=", "[As Alex, not Zoe]"]
    body["generation"] = {"type": "normal"}
    body["resources"]["preset"]["impersonation_prompt"] = "[As {{user}}]{{incvar::n}}"
    sent = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert sent == ["n=1"]  # not sent, but its macros ran before the prompt list (its later pass finds none left)


def test_the_scenario_format_is_read_before_the_personality_format():
    markers = [{"identifier": "charPersonality", "marker": True}, {"identifier": "scenario", "marker": True}]
    sent = request(markers, character={"personality": "p{{incvar::n}}", "scenario": "s{{getvar::n}}"})
    # Generate()'s own read makes n 1; the scenario format reads it before the personality format makes it 2
    assert sent == ["p2", "s1"]


def test_the_greeting_is_substituted_after_generate_reads_the_card_fields():
    sent = request([HISTORY], character={"description": "{{incvar::n}}"},
                   history=[{"role": "assistant", "content": "n={{getvar::n}}"}, {"role": "user", "content": "hi"}])
    assert sent == ["n=1", "hi"]


def test_the_world_info_prompt_goes_through_the_macros_before_the_persona_in_the_prompt():
    # the entry's escaped macro is text after activation; the story string's pass runs it (n=1), then systemPrompts
    # prepare the world info before the character (n=2) and, last, the persona
    order = [{"identifier": "worldInfoBefore", "enabled": True}, {"identifier": "personaDescription", "enabled": True}]
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "v2",
            "resources": {"preset": {"prompts": [{"identifier": "worldInfoBefore", "marker": True},
                                                 {"identifier": "personaDescription", "marker": True}],
                                     "prompt_order": [{"character_id": 100001, "order": order}]},
                          "character": {"name": "Zoe"},
                          "persona": {"description": "n={{getvar::n}}", "position": "in_prompt"},
                          "worldbook": {"activation": "all", "entries": [
                              {"uid": 1, "content": "\\{\\{incvar::n\\}\\}", "position": "before"}]}},
            "names": {"user": "Alex"}, "conversation": {"history": [], "input": []}}
    sent = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert sent == ["2", "n=2"]


def test_a_note_beside_main_is_sent_as_the_prompt_list_prepared_it():
    # the prompt anchors read it once (n=1), preparePromptsForChatCompletion once more (n=2): that text is sent
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "v2",
            "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Main"}],
                                     "prompt_order": [{"character_id": 100001, "order": [
                                         {"identifier": "main", "enabled": True}]}]},
                          "character": {"name": "Zoe"},
                          "author_note": {"content": "note {{incvar::n}}", "position": "after_main"}},
            "names": {"user": "Alex"}, "conversation": {"history": [], "input": [{"role": "user", "content": "hi"}]}}
    sent = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert sent == ["Main", "note 2"]


def test_the_examples_parse_puts_the_example_separator_through_the_macros():
    # legacy substituteParams reads every card field: parseMesExamples' separator pass is one more read of them
    def main_with(examples):
        return request([{"identifier": "main", "role": "system", "content": "n={{getvar::n}}"}], engine="legacy",
                       character={"description": "{{incvar::n}}", "mes_example": examples})[0]

    without, with_examples = main_with(""), main_with("<START>\n{{user}}: hi")
    assert int(with_examples.removeprefix("n=")) == int(without.removeprefix("n=")) + 1


def test_in_chat_extension_prompts_go_through_the_macros_depth_by_depth():
    # Generate() reads the persona first (n=1), the prompt list prepares the note (n=2); populationInjectionPrompts
    # then reads depth 0 (the note, n=3) before depth 2 (the persona there, n=4)
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "v2",
            "resources": {"preset": {"prompts": [HISTORY], "prompt_order": [{"character_id": 100001, "order": [
                {"identifier": "chatHistory", "enabled": True}]}]},
                          "character": {"name": "Zoe"},
                          "persona": {"description": "persona {{incvar::n}}", "position": "at_depth", "depth": 2},
                          "author_note": {"content": "note {{incvar::n}}", "position": "in_chat", "depth": 0}},
            "names": {"user": "Alex"},
            "conversation": {"history": [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "a"},
                                         {"role": "assistant", "content": "b"}],
                             "input": [{"role": "user", "content": "c"}]}}
    sent = [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]
    assert "note 3" in sent and "persona 4" in sent


def _with_book(entries, *, persona=None, character=None):
    prompts = [{"identifier": "charPersonality", "marker": True}, {"identifier": "personaDescription", "marker": True}]
    order = [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    resources = {"preset": {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]},
                 "character": {"name": "Zoe", **(character or {})},
                 "worldbook": {"activation": "keywords", "entries": entries}}
    if persona is not None:
        resources["persona"] = {"description": persona, "position": "in_prompt"}
    body = {"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "v2",
            "resources": resources, "names": {"user": "Alex"},
            "conversation": {"history": [], "input": [{"role": "user", "content": "a dragon"}]}}
    return [m["content"] for m in assemble(body).model_dump(mode="json")["request"]["messages"]]


MATCHING = {"uid": 1, "keys": ["dragon"], "content": "lore", "match_character_description": True}


def test_a_book_whose_entries_match_card_fields_reads_the_character_fields_once_more():
    # Generate()'s read (n=1), the scan's (n=2), the personality format's (n=3)
    assert _with_book([MATCHING], character={"personality": "p{{incvar::n}}"})[0] == "p3"
    assert _with_book([{**MATCHING, "match_character_description": False}],
                      character={"personality": "p{{incvar::n}}"})[0] == "p2"


def test_the_persona_is_read_when_the_scan_first_builds_the_text_of_an_entry_matching_card_fields():
    # Generate()'s read (n=1), the scan's for the matching entry (n=2), the persona prompt's (n=3); a constant entry
    # activates without its text being built: no read
    assert _with_book([MATCHING], persona="{{incvar::n}}") == ["3"]
    assert _with_book([{**MATCHING, "constant": True}], persona="{{incvar::n}}") == ["2"]
