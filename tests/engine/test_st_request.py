"""builtin-st follows SillyTavern's message rules (sillytavern.md §4.3, §4.5, §4.7; engine.md §5 parity)."""

import json

import pytest

from assembly import assemble


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


def test_content_names_prefix_chat_messages(default_preset):
    preset = dict(default_preset, names_behavior=2)
    texts = contents(run(preset))
    assert "Alex: Hello there." in texts and "Sera: Hi, traveller." in texts
