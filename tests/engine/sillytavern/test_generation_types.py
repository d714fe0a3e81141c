"""Generation types under builtin-st (sillytavern.md §13.3; issue 13 rule 14)."""

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
    assert sorted(e["uid"] for e in quiet.world_info["active"]) == [1, 2]
    assert quiet.request.messages[-1].content == "Describe the lantern, and tell about Nell"
    normal = run({"type": "normal"}, lore=lore)
    assert normal.world_info["active"] == []
