"""The reply-start and control-prompt steps run only when the request uses them (sillytavern.md §4.2)."""

import pytest

from assembly import assemble

PROMPTS = [{"identifier": "main", "role": "system", "content": "MAIN"}, {"identifier": "chatHistory", "marker": True}]


def run(generation):
    preset = {"prompts": PROMPTS, "impersonation_prompt": "[Write as {{user}}]",
              "prompt_order": [{"character_id": 100001, "order": [
                  {"identifier": p["identifier"], "enabled": True} for p in PROMPTS]}]}
    return assemble({"strategy": "builtin-st", "resources": {"preset": preset, "character": {"name": "Nell"}},
                     "names": {"user": "Ada"}, "host": {"core_available": True}, "generation": generation,
                     "conversation": {"history": [{"id": "u", "role": "user", "content": "Hi"}], "input": []}})


def tail(generation):
    return [(m.role, m.content) for m in run(generation).request.messages][3:]


@pytest.mark.parametrize("generation", [{"type": "normal"}, {"type": "normal", "start_reply_with": ""},
                                        {"type": "quiet", "quiet_prompt": ""}, {"type": "normal", "quiet_prompt": None}])
def test_without_their_texts_nothing_follows_the_history(generation):
    assert tail(generation) == []


def test_a_blank_reply_start_still_sends_nothing():
    assert tail({"type": "normal", "start_reply_with": "   "}) == []


def test_with_their_texts_they_still_come_last():
    assert tail({"type": "normal", "start_reply_with": "Sure {{user}}:"}) == [("assistant", "Sure Ada:")]
    assert tail({"type": "quiet", "quiet_prompt": "Sum up."}) == [("system", "Sum up.")]
    assert tail({"type": "impersonate"}) == [("system", "[Write as Ada]")]
