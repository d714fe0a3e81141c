"""SillyTavern's request steps over the collection (sillytavern.md §4.1, §4.5).
In-chat prompts keep collection order, the chat the request built itself skips only its own checks, and a
preset's silent prompts are the ones that send an empty message."""

import pytest

from assembly.blocks import Node
from assembly.sillytavern.messages import StInjection, StMessage, StParityError
from assembly.sillytavern.models import Preset, Prompt, PromptOrderEntry
from assembly.sillytavern.slots import collection, empty_prompt_messages, in_collection_order
from assembly.sillytavern.steps import inject_in_chat


def _preset() -> Preset:
    prompts = (Prompt(identifier="main", role="system", content="MAIN", injection_position=1, injection_depth=1),
               Prompt(identifier="chatHistory", marker=True),
               Prompt(identifier="nudge", role="user", content="  "),
               Prompt(identifier="jailbreak", role="system", content="JB", injection_position=1, injection_depth=1))
    order = tuple(PromptOrderEntry(identifier=p.identifier, enabled=True) for p in prompts)
    return Preset(prompts=prompts, prompt_order=order, has_prompt_order=True)


def _node(node_id: str, module: str, field: str | None = None) -> Node:
    return Node(id=node_id, rule_id=module, module=module, name=node_id, role="system", original_role="system",
                text=node_id, trust="operator", field=field)


def _injection(source: str, depth: int = 1) -> StInjection:
    return StInjection(sources=(source,), content=source, depth=depth)


def test_in_chat_prompts_follow_the_collection_and_the_rest_keep_their_order():
    preset = _preset()
    nodes = {n.id: n for n in (_node("preset:jailbreak", "preset", "jailbreak"), _node("preset:main", "preset", "main"),
                               _node("worldbook:1", "worldbook"), _node("worldbook:2", "worldbook"))}
    world = [_injection("worldbook:2"), _injection("worldbook:1")]
    assert in_collection_order(world, preset, "normal", nodes) == world  # no prompt among them: as given
    mixed = [_injection("worldbook:2"), _injection("preset:jailbreak"), _injection("worldbook:1"),
             _injection("preset:main")]
    assert [i.sources[0] for i in in_collection_order(mixed, preset, "normal", nodes)] == [
        "preset:main", "preset:jailbreak", "worldbook:2", "worldbook:1"]


def test_a_checked_chat_injects_as_an_unchecked_one_and_the_history_is_still_checked():
    chat = [StMessage(id=f"m{i}", role="user", content=f"c{i}", sources=(f"m{i}",)) for i in range(4)]
    injections = [_injection("a", 1), _injection("b", 9)]
    assert inject_in_chat(chat, injections, chat_checked=True) == inject_in_chat(chat, injections)
    clash = [*chat[:3], StMessage(id="injection@1/100/system", role="user", content="x", sources=("x",))]
    with pytest.raises(StParityError, match="history"):
        inject_in_chat(clash, injections, chat_checked=True)


def test_silent_prompts_are_the_ones_that_send_an_empty_message():
    preset = _preset()
    made = collection(preset, "normal")
    assert [p.identifier for p in made.silent] == ["nudge"]
    everything = empty_prompt_messages(preset, list(made.prompts), [])
    assert everything == empty_prompt_messages(preset, list(made.silent), [])
    assert [identifier for identifier, _ in everything] == ["nudge"]
