"""Generation types under builtin-st (sillytavern.md §13.3)."""

import pytest

from assembly import assemble

PROMPTS = [{"identifier": "main", "role": "system", "content": "MAIN"}, {"identifier": "chatHistory", "marker": True}]


def run(generation, *, prefill=False, history=None, lore=None):
    preset = {"prompts": PROMPTS, "continue_prefill": prefill,
              "prompt_order": [{"character_id": 100001, "order": [
                  {"identifier": p["identifier"], "enabled": True} for p in PROMPTS]}]}
    resources = {"preset": preset, "character": {"name": "Nell"}}
    if lore is not None:
        resources["worldbook"] = {"entries": lore, "activation": "keywords"}
    history = history or [{"id": "u", "role": "user", "content": "Hi {{char}}"},
                          {"id": "a", "role": "assistant", "content": "Hello {{user}}, I am {{char}}"}]
    return assemble({"strategy": "builtin-st", "resources": resources, "names": {"user": "Ada"},
                     "conversation": {"history": history, "input": []}, "host": {"core_available": True},
                     "generation": generation})


@pytest.mark.parametrize(("prefill", "continued"), [
    (True, "Hello {{user}}, I am {{char}}"),  # taken out of the chat before the history is filled: as written
    (False, "Hello Ada, I am Nell"),  # moved after the history is filled: expanded like the others
])
def test_the_continued_message_keeps_its_macros_only_as_a_prefill(prefill, continued):
    result = run({"type": "continue"}, prefill=prefill)
    texts = [m.content for m in result.request.messages]
    assert texts[1] == "Hi Nell"
    assert continued in texts


def test_world_info_scans_the_quiet_prompt():
    # §13.3: the quiet prompt (macros substituted) is scanned with the chat; the chat alone would not activate it
    lore = [{"uid": 1, "content": "LANTERN LORE", "keys": ["lantern"], "position": "before"},
            {"uid": 2, "content": "NELL LORE", "keys": ["about nell"], "position": "before"}]
    quiet = run({"type": "quiet", "quiet_prompt": "Describe the lantern, and tell about {{char}}"}, lore=lore)
    assert sorted(e.uid for e in quiet.world_info.active) == [1, 2]
    assert quiet.request.messages[-1].content == "Describe the lantern, and tell about Nell"
    normal = run({"type": "normal"}, lore=lore)
    assert not normal.world_info.active


@pytest.mark.parametrize(("order", "expected"), [
    # examples before the history: the collection is pushed after every slot
    (("main", "dialogueExamples", "chatHistory"), ["MAIN", "[Example Chat]", "Q?", "[Start a new Chat]", "Hi Nell", "Hello Ada, I am Nell",
                                                   "[Continue your last message without repeating its original "
                                                   "content.]"]),
    # Chat Examples is the next slot: the examples written there later replace the collection
    (("main", "chatHistory", "dialogueExamples"), ["MAIN", "[Start a new Chat]", "Hi Nell", "[Example Chat]",
                                                   "Q?"]),
    # an in-chat prompt between takes an index but no slot: the collection lands before the examples
    (("main", "chatHistory", "deep", "dialogueExamples"), [
        "MAIN", "[Start a new Chat]", "DEEP", "Hi Nell", "Hello Ada, I am Nell",
        "[Continue your last message without repeating its original content.]", "[Example Chat]", "Q?"]),
])
def test_where_the_continue_collection_lands_among_the_slots(order, expected):
    # §4.2 / §4.6: the continue collection is pushed onto SillyTavern's sparse slot list while the history is
    # filled, before the examples are: one past the highest slot filled so far.
    prompts = [{"identifier": "main", "role": "system", "content": "MAIN"},
               {"identifier": "chatHistory", "marker": True}, {"identifier": "dialogueExamples", "marker": True},
               {"identifier": "deep", "role": "system", "content": "DEEP", "injection_position": 1,
                "injection_depth": 9}]
    preset = {"prompts": prompts, "new_example_chat_prompt": "[Example Chat]", "prompt_order": [
        {"character_id": 100001, "order": [{"identifier": i, "enabled": True} for i in order]}]}
    history = [{"id": "u", "role": "user", "content": "Hi {{char}}"},
               {"id": "a", "role": "assistant", "content": "Hello {{user}}, I am {{char}}"}]
    result = assemble({"strategy": "builtin-st", "names": {"user": "Ada"}, "host": {"core_available": True},
                       "resources": {"preset": preset, "character": {"name": "Nell", "mes_example": "{{user}}: Q?"}},
                       "conversation": {"history": history, "input": []}, "generation": {"type": "continue"}})
    assert [m.content for m in result.request.messages] == expected


def test_start_reply_with_comes_after_the_ordered_prompts_and_before_the_quiet_prompt():
    # §4.2 / §11.16: the bias is an assistant message at its slot after every ordered prompt; the quiet prompt is a
    # control prompt, sent last
    result = run({"type": "quiet", "quiet_prompt": "Summarize.", "start_reply_with": "Sure:"})
    assert [(m.role, m.content) for m in result.request.messages][-2:] == [("assistant", "Sure:"),
                                                                           ("system", "Summarize.")]


@pytest.mark.parametrize("marker", ["charDescription", "personaDescription", "scenario"])
def test_a_marker_prompt_set_in_chat_is_injected_at_its_depth_and_role(marker):
    # §4.1 step 4: a pulled marker takes the position, depth, order and role of its prompt
    prompts = [{"identifier": "main", "role": "system", "content": "MAIN"},
               {"identifier": "chatHistory", "marker": True},
               {"identifier": marker, "marker": True, "role": "user", "injection_position": 1, "injection_depth": 1}]
    preset = {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": p["identifier"], "enabled": True} for p in prompts]}]}
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": preset,
                                     "character": {"name": "Nell", "description": "PULLED", "scenario": "PULLED"},
                                     "persona": {"name": "Ada", "description": "PULLED", "position": "in_prompt"}},
                       "conversation": {"history": [{"id": "a", "role": "user", "content": "one"}],
                                        "input": [{"id": "b", "role": "assistant", "content": "two"}]}})
    assert [(m.role, m.content) for m in result.request.messages] == [
        ("system", "MAIN"), ("user", "one"), ("user", "PULLED"), ("assistant", "two")]
