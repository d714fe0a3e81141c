"""What SillyTavern reserves before filling the history (sillytavern.md §4.2 steps 1 and 8, §13.2)."""

from assembly.sillytavern.budget import st_budget, st_message_tokens
from tests.engine.sillytavern.factories import message


def test_only_the_priming_is_reserved_when_function_calling_is_off():
    # step 8 (tool definitions) applies only with function calling on; the studio registers no tools
    newest = message("m2", "user", "the newest message of the chat")
    older = message("m1", "assistant", "an older one")
    room = 3 + st_message_tokens(newest) + st_message_tokens(older)  # priming + both messages, exactly
    exact = st_budget(max_context=room, max_tokens=0, history=[older, newest])
    assert [m.id for m in exact.history] == ["m1", "m2"] and exact.remaining == 0
    short = st_budget(max_context=room - 1, max_tokens=0, history=[older, newest])
    assert [m.id for m in short.history] == ["m2"]
