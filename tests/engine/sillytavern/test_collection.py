"""builtin-st sends what SillyTavern's prompt collection holds (sillytavern.md §2.6, §4.1, §11.8-9): a
disabled or missing prompt sends nothing of its content, and a card's own prompts only replace the preset
prompt they override."""

import pytest

from assembly import assemble

CARD = {"name": "Nell", "description": "DESCRIPTION", "personality": "PERSONALITY", "scenario": "SCENARIO",
        "mes_example": "<START>\n{{user}}: Example question\n{{char}}: Example answer",
        "system_prompt": "CARD SYSTEM ({{original}})", "post_history_instructions": "CARD PHI"}
ORDER = ("main", "worldInfoBefore", "personaDescription", "charDescription", "charPersonality", "scenario",
         "worldInfoAfter", "dialogueExamples", "chatHistory", "jailbreak")
MARKERS = ("worldInfoBefore", "personaDescription", "charDescription", "charPersonality", "scenario",
           "worldInfoAfter", "dialogueExamples", "chatHistory")
LORE = [{"uid": 1, "content": "LORE BEFORE", "position": "before"},
        {"uid": 2, "content": "LORE AFTER", "position": "after"},
        {"uid": 3, "content": "<START>\n{{user}}: Lore question", "position": "before_example_messages"},
        {"uid": 4, "content": "LORE DEEP", "position": "at_depth", "depth": 0}]


def preset(disabled=(), missing=(), **prompt_fields):
    prompts = [{"identifier": "main", "role": "system", "content": "MAIN"},
               {"identifier": "jailbreak", "role": "system", "content": "PRESET PHI"},
               *({"identifier": m, "marker": True} for m in MARKERS)]
    for identifier, fields in prompt_fields.items():
        next(p for p in prompts if p["identifier"] == identifier).update(fields)
    order = [{"identifier": i, "enabled": i not in disabled} for i in ORDER if i not in missing]
    return {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}],
            "new_chat_prompt": "[Start a new Chat]", "new_example_chat_prompt": "[Example Chat]"}


def sent(the_preset, *, card=CARD, note=None):
    resources = {"preset": the_preset, "character": card,
                 "persona": {"name": "Ada", "description": "PERSONA", "position": "in_prompt"},
                 "worldbook": {"entries": LORE, "activation": "all"}}
    if note is not None:
        resources["author_note"] = note
    result = assemble({"strategy": "builtin-st", "resources": resources, "names": {"user": "Ada", "char": "Nell"},
                       "conversation": {"history": [{"id": "a", "role": "user", "content": "Hello"}],
                                        "input": [{"id": "b", "role": "user", "content": "Still there?"}]},
                       "host": {"core_available": True}})
    return [m.content for m in result.request.messages]


def test_every_enabled_marker_sends_its_content():
    assert sent(preset()) == [
        "CARD SYSTEM (MAIN)", "LORE BEFORE", "PERSONA", "DESCRIPTION", "PERSONALITY", "SCENARIO", "LORE AFTER",
        "[Example Chat]", "Lore question", "[Example Chat]", "Example question", "Example answer",
        "[Start a new Chat]", "Hello", "Still there?", "LORE DEEP", "CARD PHI"]


@pytest.mark.parametrize(("marker", "texts"), [
    ("charDescription", ["DESCRIPTION"]),
    ("charPersonality", ["PERSONALITY"]),
    ("scenario", ["SCENARIO"]),
    ("personaDescription", ["PERSONA"]),
    ("worldInfoBefore", ["LORE BEFORE"]),
    ("worldInfoAfter", ["LORE AFTER"]),
    ("dialogueExamples", ["[Example Chat]", "Example question", "Example answer", "Lore question"]),
    ("chatHistory", ["[Start a new Chat]", "Hello", "Still there?", "LORE DEEP"]),
])
@pytest.mark.parametrize("how", ["disabled", "missing"])
def test_a_disabled_or_missing_marker_sends_nothing(marker, texts, how):
    # §2.6: only enabled prompts are in the collection; §11.9: chat history and examples take their world info
    # (the in-chat entry, the example entry) with them. Nothing is moved to the end instead.
    the_preset = preset(disabled=(marker,)) if how == "disabled" else preset(missing=(marker,))
    expected = [t for t in sent(preset()) if t not in texts]
    assert sent(the_preset) == expected


def test_the_cards_system_prompt_is_not_sent_with_main_disabled():
    # §11.8: the override applies only to an enabled Main; the disabled Main stays an empty slot.
    texts = sent(preset(disabled=("main",)))
    assert not any("CARD SYSTEM" in t or t == "MAIN" for t in texts)


def test_the_cards_post_history_instructions_are_not_sent_with_the_prompt_disabled():
    texts = sent(preset(disabled=("jailbreak",)))
    assert "CARD PHI" not in texts and "PRESET PHI" not in texts


def test_forbid_overrides_keeps_the_preset_text_and_drops_the_cards():
    texts = sent(preset(jailbreak={"forbid_overrides": True}, main={"forbid_overrides": True}))
    assert texts[0] == "MAIN" and texts[-1] == "PRESET PHI"
    assert not any(t.startswith("CARD") for t in texts)


@pytest.mark.parametrize("position", ["before_main", "after_main"])
def test_an_authors_note_at_a_disabled_mains_slot_stays_at_that_slot(position):
    # §4.4 / §11.8: a disabled Main keeps its (empty) slot in the collection, and what attaches to Main goes there,
    # not to the top of the request.
    order = ("chatHistory", "main", "jailbreak")
    the_preset = preset(disabled=("main",))
    the_preset["prompt_order"][0]["order"] = [{"identifier": i, "enabled": i != "main"} for i in order]
    texts = sent(the_preset, note={"content": "NOTE", "position": position})
    assert texts == ["[Start a new Chat]", "Hello", "Still there?", "LORE DEEP", "NOTE", "CARD PHI"]


@pytest.mark.parametrize(("role", "expected"), [
    ("assistant", ["FIRST", "SECOND"]),  # the empty assistant prompt breaks the run, then is not sent
    ("user", ["FIRST", "SECOND"]),
    ("system", ["FIRST\nSECOND"]),  # an empty system prompt is dropped before merging
])
def test_an_empty_prompt_that_is_not_system_still_breaks_a_squashed_run(role, expected):
    # §4.8: squashing drops empty system messages and merges runs of unnamed system messages; any other message,
    # empty or not, ends the run; getChat() drops the empty one afterwards (sillytavern.md §11.9).
    prompts = [{"identifier": "main", "role": "system", "content": "FIRST"},
               {"identifier": "gap", "role": role, "content": ""},
               {"identifier": "nsfw", "role": "system", "content": "SECOND"}]
    the_preset = {"prompts": prompts, "squash_system_messages": True, "prompt_order": [
        {"character_id": 100001, "order": [{"identifier": p["identifier"], "enabled": True} for p in prompts]}]}
    result = assemble({"strategy": "builtin-st", "resources": {"preset": the_preset, "character": {"name": "Nell"}},
                       "conversation": {"history": [], "input": []}, "host": {"core_available": True}})
    assert [m.content for m in result.request.messages] == expected


def test_an_authors_note_follows_a_disabled_in_chat_main_into_the_chat():
    # §4.4: the disabled Main's empty copy keeps its in-chat position, so what attaches to it lands in Main's
    # depth / role / order bucket (depth 0 here: after the last chat message), not at a relative slot.
    the_preset = preset(disabled=("main",), main={"injection_position": 1, "injection_depth": 0, "role": "user"})
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": the_preset, "character": {"name": "Nell"},
                                     "author_note": {"content": "NOTE", "position": "after_main"}},
                       "conversation": {"history": [{"id": "a", "role": "user", "content": "Hello"}],
                                        "input": [{"id": "b", "role": "assistant", "content": "Hi"}]}})
    assert [(m.role, m.content) for m in result.request.messages][-3:] == [
        ("assistant", "Hi"), ("user", "NOTE"), ("system", "PRESET PHI")]
