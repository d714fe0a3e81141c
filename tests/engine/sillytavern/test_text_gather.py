"""Text completion's world info (assembly/sillytavern/text_gather.py, text_request.py): SillyTavern 1.18 runs the same
world-info scan for text completion as for chat completion (sillytavern-text-completion.md §1 step 8, sillytavern.md
§7.3), so the carried timed effects (`resources.world_state`), the seeded chance (`generation.seed`, `generation.turn`)
and the entry triggers apply, and the result gives the state after the generation in `world_info.world_state`
(engine.md §10). Expected values are worked out from those rules by hand."""

from __future__ import annotations

from typing import Any

import pytest

from assembly import assemble
from assembly.errors import AssemblyError

BOOK = "lore"


def _entry(**fields: Any) -> dict[str, Any]:
    return {"uid": 1, "keys": ["apple"], "content": "Apples are red.", "position": "before", **fields}


def _text(entry: dict[str, Any], messages: list[tuple[str, str]], *, turn: int = 0, state: Any = None,
          seed: int | None = None, generation: str = "normal") -> dict[str, Any]:
    """A text request whose story string is the world info before, then the chat (the newest user message typed)."""
    chat = [{"id": f"m{n}", "role": role, "content": text, "name": "Ann" if role == "user" else "Bo"}
            for n, (role, text) in enumerate(messages, 1)]
    typed = 1 if generation == "normal" and chat[-1]["role"] == "user" else 0
    return {
        "api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate", "names": {"user": "Ann", "char": "Bo"},
        "generation": {"type": generation, "turn": turn, **({"seed": seed} if seed is not None else {})},
        "resources": {
            "character": {"name": "Bo"},
            "context_template": {"story_string": "{{#if wiBefore}}{{wiBefore}}\n{{/if}}", "chat_start": "",
                                 "example_separator": ""},
            "instruct_template": {"input_sequence": "[U]", "output_sequence": "[B]"},
            "system_prompt": {"name": "none", "content": "", "post_history": ""},
            "text_settings": {"instruct_enabled": False, "max_context": 4096, "amount_gen": 96, "token_padding": 0},
            # the key is looked for in the newest message only
            "worldbook": {"name": BOOK, "activation": "keywords", "scan_depth": 1, "entries": [entry]},
            "world_state": state,
        },
        "conversation": {"history": chat[:len(chat) - typed], "input": chat[len(chat) - typed:]},
    }


def _run(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = assemble(request).model_dump(mode="json")
    return result["request"]["prompt"], result["world_info"]


FIRST = [("user", "An apple?")]
SECOND = [("user", "An apple?"), ("assistant", "Yes."), ("user", "And a pear?")]  # no key in the newest message


def test_a_sticky_entry_starts_its_effect_at_the_scanned_chat_length():
    prompt, world = _run(_text(_entry(sticky=3), FIRST))
    assert prompt == "Apples are red.\nAnn: An apple?"
    # start = 1 scanned message, end = start + sticky
    assert world["world_state"] == {"sticky": {f"{BOOK}.1": {"start": 1, "end": 4, "protected": False}},
                                    "cooldown": {}}


def test_a_sticky_entry_stays_in_the_prompt_on_the_next_turn_without_its_key():
    state = _run(_text(_entry(sticky=3), FIRST))[1]["world_state"]
    prompt, world = _run(_text(_entry(sticky=3), SECOND, turn=1, state=state))
    # 3 messages < end 4: still sticky, active without a key match; the effect is kept as it was
    assert prompt == "Apples are red.\nAnn: An apple?\nBo: Yes.\nAnn: And a pear?"
    assert [e["uid"] for e in world["active"]] == [1]
    assert world["world_state"] == state
    # without the carried state the same chat leaves the entry out
    assert _run(_text(_entry(sticky=3), SECOND, turn=1))[0] == "Ann: An apple?\nBo: Yes.\nAnn: And a pear?"


def test_a_sticky_effect_ends_when_the_chat_reaches_its_end_and_its_cooldown_begins():
    state = {"sticky": {f"{BOOK}.1": {"start": 1, "end": 3}}, "cooldown": {}}
    prompt, world = _run(_text(_entry(sticky=2, cooldown=2), SECOND, turn=1, state=state))
    assert prompt == "Ann: An apple?\nBo: Yes.\nAnn: And a pear?"  # 3 messages reach end 3
    # the cooldown starts at once from the scanned length, protected (a swipe keeps it)
    assert world["world_state"] == {"sticky": {},
                                    "cooldown": {f"{BOOK}.1": {"start": 3, "end": 5, "protected": True}}}


def test_an_entry_in_cooldown_is_left_out_although_its_key_is_there():
    entry = _entry(cooldown=3)
    state = _run(_text(entry, FIRST))[1]["world_state"]
    assert state == {"sticky": {}, "cooldown": {f"{BOOK}.1": {"start": 1, "end": 4, "protected": False}}}
    again = [("user", "An apple?"), ("assistant", "Yes."), ("user", "Another apple?")]
    prompt, world = _run(_text(entry, again, turn=1, state=state))
    assert prompt == "Ann: An apple?\nBo: Yes.\nAnn: Another apple?"
    assert [(s["uid"], s["reason"]["kind"]) for s in world["skipped"]] == [(1, "cooldown")]
    assert world["world_state"] == state
    # once the chat reaches the end (5 messages >= 4) the cooldown is over and the key activates it again
    later = [*again, ("assistant", "Sure."), ("user", "One more apple?")]
    assert _run(_text(entry, later, turn=2, state=state))[0].startswith("Apples are red.\n")


def test_a_delayed_entry_waits_for_the_chat_to_have_that_many_messages():
    entry = _entry(delay=3)
    assert _run(_text(entry, FIRST))[0] == "Ann: An apple?"
    late = [("user", "Hi."), ("assistant", "Yes."), ("user", "An apple?")]
    assert _run(_text(entry, late, turn=1))[0].startswith("Apples are red.\n")


def _chat(seed: int, turn: int) -> dict[str, Any]:
    """The chat-completion request over the same chat, book and chance."""
    return {"strategy": "builtin-st", "host": {"core_available": True}, "names": {"user": "Ann"},
            "generation": {"type": "normal", "seed": seed, "turn": turn},
            "resources": {"character": {"name": "Bo"}, "worldbook": {
                "name": BOOK, "activation": "keywords", "scan_depth": 1,
                "entries": [_entry(probability=50, use_probability=True)]}},
            "conversation": {"input": [{"id": "m1", "role": "user", "content": "An apple?", "name": "Ann"}]}}


def test_a_seeded_half_chance_entry_decides_as_chat_completion_does():
    decided = set()
    for seed in range(12):
        for turn in (0, 1):
            text = _run(_text(_entry(probability=50, use_probability=True), FIRST, turn=turn, seed=seed))[1]
            chat = assemble(_chat(seed, turn)).world_info
            assert [e["uid"] for e in text["active"]] == [e.uid for e in chat.active]
            # the same draw: the roll the entry passed or failed with
            have = (text["active"] or text["skipped"])[0]["reason"]["roll"]
            want = (chat.active or chat.skipped)[0].reason.roll
            assert have == want and have is not None
            decided.add(bool(text["active"]))
    assert decided == {True, False}  # some seeds pass the 50% roll, some fail it


def test_an_unseeded_half_chance_entry_takes_the_previews_middle_roll():
    # the preview rolls 50, which is not above 50: the entry passes; at 49 it fails
    assert _run(_text(_entry(probability=50), FIRST))[0] == "Apples are red.\nAnn: An apple?"
    assert _run(_text(_entry(probability=49), FIRST))[0] == "Ann: An apple?"


def test_entry_triggers_follow_the_text_generation_type():
    entry = _entry(triggers=["continue"])
    chat = [("user", "Hi."), ("assistant", "An apple")]
    assert _run(_text(entry, FIRST))[0] == "Ann: An apple?"  # a normal generation: not among its triggers
    assert _run(_text(entry, chat, generation="continue"))[0] == "Apples are red.\nAnn: Hi.\nBo: An apple"


def test_a_text_request_without_a_world_book_gives_no_world_info():
    request = _text(_entry(), FIRST)
    del request["resources"]["worldbook"]
    assert assemble(request).world_info is None


def test_a_regex_key_over_its_limit_matches_nothing_and_is_listed_as_for_chat_completion():
    request = _text(_entry(keys=["/" + "a" * 10_001 + "/"]), FIRST)  # over the 10,000-character pattern limit
    result = assemble(request)
    assert result.request.prompt == "Ann: An apple?"
    assert [(d.code, d.details["owner"], d.details["limit"]) for d in result.diagnostics] == [
        ("ST_PATTERN_LIMIT", "world info entry 1", "size")]


@pytest.mark.parametrize(("where", "value", "code", "path"), [
    ("resources", [1], "IMPORT_INVALID", "resources.world_state"),
    ("generation", -1, "ASSEMBLY_REQUEST_INVALID", "generation.seed"),
    ("generation", "x", "ASSEMBLY_REQUEST_INVALID", "generation.turn"),
])
def test_a_bad_world_state_seed_or_turn_is_refused_naming_the_field(where, value, code, path):
    request = _text(_entry(), FIRST)
    request[where][path.rsplit(".", 1)[1]] = value
    with pytest.raises(AssemblyError) as caught:
        assemble(request)
    assert caught.value.code == code and path in str(caught.value)


# --- the extension prompts the scan reads beside the chat ------------------------------------------------------------
# SillyTavern's text completion runs the same Generate() up to the scan: setFloatingPrompt sets the author's note
# (scan = "allow WI scan") before getWorldInfoPrompt, and addPersonaDescriptionExtensionPrompt sets the persona at
# depth (scan=true) after it, kept for the next generation; the character's note is set with scan = "allow WI scan"
# (sillytavern.md §1, §7.3, §8.1–§8.3).

MOON = _entry(keys=["moon"], content="The moon is red.")


def _chat_request(text_request: dict[str, Any]) -> dict[str, Any]:
    """The same chat, resources and generation as a chat-completion request (builtin-st's default preset)."""
    request = {k: v for k, v in text_request.items() if k not in ("api", "tokenizer")}
    shared = {k: v for k, v in text_request["resources"].items()
              if k not in ("context_template", "instruct_template", "system_prompt", "text_settings")}
    return {**request, "host": {"core_available": True}, "resources": shared}


def _active(request: dict[str, Any]) -> list[int]:
    return [e["uid"] for e in assemble(request).model_dump(mode="json")["world_info"]["active"]]


@pytest.mark.parametrize("allow", [True, False])
def test_an_entry_keyed_by_a_word_only_in_the_authors_note_activates_when_the_note_allows_scanning(allow):
    request = _text(MOON, [("user", "Hello")])
    request["resources"]["author_note"] = {"content": "Mention the moon.", "allow_wi_scan": allow}
    prompt, world = _run(request)
    # the note goes in the chat at depth 4 (above the one message); the entry before it in the story string
    assert prompt == ("The moon is red.\n" if allow else "") + "Mention the moon.\nAnn: Hello"
    assert [e["uid"] for e in world["active"]] == ([1] if allow else [])
    assert _active(_chat_request(request)) == ([1] if allow else [])  # as chat completion scans it


@pytest.mark.parametrize(("turn", "active"), [(0, []), (1, [1])])
def test_a_persona_at_depth_is_scanned_from_the_chats_second_generation_on(turn, active):
    request = _text(MOON, [("user", "Hello")], turn=turn)
    request["resources"]["persona"] = {"name": "Ann", "description": "Ann loves the moon.", "position": "at_depth",
                                       "depth": 2}
    prompt, world = _run(request)
    # the first generation's scan ran before the persona was set; the second reads the one set then
    assert [e["uid"] for e in world["active"]] == active
    assert prompt.startswith("The moon is red.\n") is bool(active)
    assert "Ann loves the moon." in prompt  # placed in the chat either way
    assert _active(_chat_request(request)) == active


def test_a_note_its_interval_leaves_out_is_not_scanned():
    # interval 2, one user message: 2 - 1 = 1 message till insertion, so the note is set empty before the scan
    request = _text(MOON, [("user", "Hello")])
    request["resources"]["author_note"] = {"content": "Mention the moon.", "allow_wi_scan": True, "interval": 2}
    prompt, world = _run(request)
    assert prompt == "Ann: Hello" and world["active"] == []
    assert _active(_chat_request(request)) == []
    # the second user message puts it in (2 % 2 == 0), and the scan reads it
    request = _text(MOON, [("user", "Hello"), ("assistant", "Hi."), ("user", "Well?")], turn=1)
    request["resources"]["author_note"] = {"content": "Mention the moon.", "allow_wi_scan": True, "interval": 2}
    assert _run(request)[0].startswith("The moon is red.\n")
    assert _active(_chat_request(request)) == [1]


@pytest.mark.parametrize("allow", [True, False])
def test_the_characters_note_is_scanned_when_the_authors_note_allows_scanning(allow):
    request = _text(MOON, [("user", "Hello")])
    request["resources"]["character"] = {"name": "Bo", "depth_prompt": {"prompt": "Bo hums about the moon.",
                                                                          "depth": 4}}
    request["resources"]["author_note"] = {"content": "", "allow_wi_scan": allow}
    prompt, world = _run(request)
    assert [e["uid"] for e in world["active"]] == ([1] if allow else [])
    assert prompt == ("The moon is red.\n" if allow else "") + "Bo hums about the moon.\nAnn: Hello"
    assert _active(_chat_request(request)) == ([1] if allow else [])


# --- other extensions' prompts in the prompt ---------------------------------------------------------------------------
# SillyTavern 1.18 text completion (sillytavern-text-completion.md §2, §4): extension prompts "before prompt" / "in
# prompt" are the story string's anchorBefore / anchorAfter (with the author's note of that place, each trimmed, in
# key order, joined by a newline, trimmed); in-chat ones go through doChatInject by depth and role, joined in key
# order with the author's note, the character's note, ... of the same depth and role.

ANCHORS = "{{#if anchorBefore}}{{anchorBefore}}\n{{/if}}Bo is tall.\n{{#if anchorAfter}}{{anchorAfter}}\n{{/if}}"


def _with_extensions(extensions: list[dict[str, Any]], messages: list[tuple[str, str]], *,
                     story: str = ANCHORS, generation: str = "normal", note: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    request = _text(MOON, messages, generation=generation)
    request["resources"]["worldbook"] = None
    request["resources"]["context_template"]["story_string"] = story
    request["resources"]["extension_prompts"] = extensions
    if note is not None:
        request["resources"]["author_note"] = note
    return request


def _spans(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["source"], s["text"]) for s in assemble(request).model_dump(mode="json")["request"]["spans"]]


def test_before_and_in_prompt_extensions_are_the_anchors_joined_in_key_order_with_the_authors_note():
    request = _with_extensions([
        {"key": "3_vectors", "content": "  Vectors on {{char}}  ", "position": "before_prompt"},
        {"key": "1_memory", "content": "Memory", "position": "before_prompt"},
        {"key": "0_summary", "content": "\nSummary\n", "position": "in_prompt"},
    ], [("user", "Hello")], note={"content": "Note", "position": "before_main"})
    prompt, _world = _run(request)
    # 1_memory < 2_floating_prompt (the note) < 3_vectors; each trimmed, macros substituted
    assert prompt == "Memory\nNote\nVectors on Bo\nBo is tall.\nSummary\nAnn: Hello"
    # the story string's span names every extension prompt it holds, in key order, before then after
    assert _spans(request)[0] == (
        "story_string+extension:1_memory+author_note+extension:3_vectors+extension:0_summary",
        "Memory\nNote\nVectors on Bo\nBo is tall.\nSummary\n")


def test_an_anchor_the_story_string_leaves_out_is_neither_in_the_prompt_nor_in_its_span():
    request = _with_extensions([{"key": "1_memory", "content": "Memory", "position": "before_prompt"}],
                               [("user", "Hello")], story="Bo is tall.\n")
    assert _run(request)[0] == "Bo is tall.\nAnn: Hello"
    assert _spans(request)[0] == ("story_string", "Bo is tall.\n")


def test_in_chat_extensions_are_injected_by_depth_and_role_joined_in_key_order_with_the_authors_note():
    request = _with_extensions([
        {"key": "3_vectors", "content": "Vectors", "position": "in_chat", "depth": 1, "role": "system"},
        {"key": "1_memory", "content": "Memory", "position": "in_chat", "depth": 1, "role": "system"},
        {"key": "9_user", "content": "Hint for {{user}}", "position": "in_chat", "depth": 0, "role": "user"},
        {"key": "4_hidden", "content": "Never placed", "position": "none"},
    ], [("user", "Hello"), ("assistant", "Hi."), ("user", "Well?")], story="",
        note={"content": "Note", "position": "in_chat", "depth": 1, "role": "system"})
    prompt, _world = _run(request)
    # depth 0: the user prompt after the newest message (as the user); depth 1: 0 + 1 inserted = 2 from the newest,
    # i.e. above "Well?"; the system prompts of depth 1 joined 1_memory, 2_floating_prompt, 3_vectors
    assert prompt == "Ann: Hello\nBo: Hi.\nMemory\nNote\nVectors\nAnn: Well?\nAnn: Hint for Ann"
    sources = [source for source, _text in _spans(request)]
    assert sources == ["message:m1", "message:m2", "extension:1_memory+author_note+extension:3_vectors",
                       "message:m3", "extension:9_user"]


def test_a_continue_counts_an_extensions_depth_zero_as_one():
    messages = [("user", "Hello"), ("assistant", "Hi there")]
    extension = [{"key": "1_memory", "content": "Memory", "position": "in_chat", "depth": 0}]
    # a normal generation puts it after the newest message; a continue above the continued one
    assert _run(_with_extensions(extension, messages, story=""))[0] == "Ann: Hello\nBo: Hi there\nMemory"
    assert _run(_with_extensions(extension, messages, story="", generation="continue"))[0] == \
        "Ann: Hello\nMemory\nBo: Hi there"


def test_an_in_chat_story_string_carries_its_anchors_sources():
    request = _with_extensions([{"key": "1_memory", "content": "Memory", "position": "in_prompt"}],
                               [("user", "Hello")], story="{{anchorAfter}}")
    request["resources"]["context_template"].update({"story_string_position": 1, "story_string_depth": 0})
    assert _run(request)[0] == "Ann: Hello\nMemory"
    assert _spans(request)[-1] == ("story_string+extension:1_memory", "Memory")
