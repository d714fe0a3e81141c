"""What SillyTavern reserves before filling the history (sillytavern.md §4.2 steps 1 and 8, §13.2)."""

from assembly.sillytavern.budget import TOOL_DEFINITIONS, st_budget, st_message_tokens
from tests.engine.sillytavern.factories import message


def test_the_tool_definitions_message_is_reserved_before_the_history():
    newest = message("m2", "user", "the newest message of the chat")
    older = message("m1", "assistant", "an older one")
    room = 3 + st_message_tokens(newest) + st_message_tokens(older)  # priming + both messages, exactly
    without = st_budget(max_context=room, max_tokens=0, history=[older, newest])
    assert [m.id for m in without.history] == ["m1", "m2"]
    # the reserve is a user message holding the tool JSON ("{}" without tools): 1 + 1 + 3 tokens
    assert st_message_tokens(TOOL_DEFINITIONS) == 5
    reserved = st_budget(max_context=room, max_tokens=0, history=[older, newest], tool_definitions=TOOL_DEFINITIONS)
    assert [m.id for m in reserved.history] == ["m2"]
    reserved_more = st_budget(max_context=room + 5, max_tokens=0, history=[older, newest],
                              tool_definitions=TOOL_DEFINITIONS)
    assert [m.id for m in reserved_more.history] == ["m1", "m2"]
