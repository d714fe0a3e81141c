"""A preset's collection (sillytavern.md §4.1), its prompt messages, and the content counts the budget hands to the
request messages: each answers as a fresh computation does and is never a shared mutable answer."""

from assembly.host import request_message
from assembly.sillytavern.budget import st_budget
from assembly.sillytavern.messages import StMessage, trusted_message
from assembly.sillytavern.models import Preset, Prompt, PromptOrderEntry
from assembly.sillytavern.slots import collection
from assembly.sources import ordered_prompts
from assembly.tokens import count_tokens


def _preset(chat_history_enabled: bool = True) -> Preset:
    prompts = (Prompt(identifier="main", role="system", content="MAIN"),
               Prompt(identifier="chatHistory", marker=True),
               Prompt(identifier="scenario", marker=True, injection_position=1, injection_depth=2))
    order = (PromptOrderEntry(identifier="main", enabled=True),
             PromptOrderEntry(identifier="chatHistory", enabled=chat_history_enabled),
             PromptOrderEntry(identifier="scenario", enabled=True))
    return Preset(prompts=prompts, prompt_order=order, has_prompt_order=True)


def test_collection_answers_as_the_prompts_do_and_is_read_only():
    preset = _preset()
    made = collection(preset, "normal")
    assert made is collection(preset, "normal")  # worked out once
    assert list(made.prompts) == ordered_prompts(preset, "normal")
    assert dict(made.index) == {"main": 0, "chatHistory": 1, "scenario": 2}
    assert list(made.in_chat_markers) == ["scenario"] and made.sends_history
    assert made.order == ("main", "chatHistory", "scenario")
    try:
        made.index["main"] = 5  # type: ignore[index]
    except TypeError:
        pass
    else:
        raise AssertionError("a collection's index must be read-only")


def test_collection_of_a_changed_preset_is_worked_out_again():
    preset = _preset()
    assert collection(preset, "normal").sends_history
    changed = preset.model_copy(update={"prompt_order": _preset(chat_history_enabled=False).prompt_order})
    assert not collection(changed, "normal").sends_history
    assert collection(preset, "normal").sends_history


def test_trusted_messages_are_equal_to_fresh_ones_and_frozen():
    one = trusted_message(id="p", role="system", content="text", kind="prompt", sources=("p",))
    again = trusted_message(id="p", role="system", content="te" + "xt", kind="prompt", sources=("p",))
    assert again == one
    assert one == StMessage(id="p", role="system", content="text", kind="prompt", sources=("p",))
    other = trusted_message(id="p", role="system", content="text", kind="prompt", sources=("p",), depth=1)
    assert other != one and other.depth == 1
    changed = one._replace(content="new")
    assert trusted_message(id="p", role="system", content="text", kind="prompt", sources=("p",)).content == "text"
    assert changed.content == "new"


def test_the_budget_hands_over_each_counted_content():
    messages = [StMessage(id="a", role="system", content="Hello there, world", kind="prompt"),
                StMessage(id="b", role="user", content="How are you?", name="Ann")]
    counted: dict[str, int] = {}
    st_budget(max_context=1000, max_tokens=10, history=messages, content_tokens=counted)
    assert counted == {m.id: count_tokens(m.content) for m in messages}
    without = st_budget(max_context=1000, max_tokens=10, history=messages)
    assert st_budget(max_context=1000, max_tokens=10, history=messages, content_tokens={}) == without


def test_request_message_takes_a_given_count():
    counted = request_message([], role="user", content="some words here", delivery="request", region="request",
                              status="request-only", tokenizer="o200k_base", tokens=count_tokens("some words here"))
    fresh = request_message([], role="user", content="some words here", delivery="request", region="request",
                            status="request-only", tokenizer="o200k_base")
    assert counted == fresh and counted.tokens == 3
