"""In-chat prompts for text completion (assembly/sillytavern/text_inject.py; sillytavern-text-completion.md §4)."""

from __future__ import annotations

from assembly.sillytavern.text_inject import ChatItem, InChatPrompt, inject_in_chat, joined_prompts


def _chat(n: int) -> list[ChatItem]:
    return [ChatItem(name="Ann" if i % 2 == 0 else "Bo", mes=f"m{i}", is_user=i % 2 == 0, source=f"m{i}")
            for i in range(n)]


def test_prompts_of_one_depth_come_assistant_user_system_from_oldest_to_newest():
    prompts = [InChatPrompt("a", "sys", 1, "system", "s"), InChatPrompt("b", "usr", 1, "user", "u"),
               InChatPrompt("c", "bot", 1, "assistant", "b")]
    chat, places = inject_in_chat(_chat(2), prompts, user="Ann", char="Bo", continuing=False)
    assert [c.mes for c in chat] == ["m0", "bot", "usr", "sys", "m1"]
    assert (chat[1].name, chat[2].name, chat[3].name, chat[3].narrator) == ("Bo", "Ann", "", True)
    assert places == [1, 2, 3]


def test_same_depth_and_role_join_in_key_order_with_macros():
    prompts = [InChatPrompt("b", "{{char}} two", 0, "system", "x"), InChatPrompt("a", " one ", 0, "system", "y")]
    chat, _ = inject_in_chat(_chat(1), prompts, user="Ann", char="Bo", continuing=False)
    assert chat[-1].mes == "one\nBo two"


def test_a_depth_past_the_chat_lands_at_its_start_and_continue_counts_depth_zero_as_one():
    chat, places = inject_in_chat(_chat(2), [InChatPrompt("a", "deep", 9, "system", "x")], user="Ann", char="Bo",
                                  continuing=False)
    assert chat[0].mes == "deep" and places == [2]
    chat, _ = inject_in_chat(_chat(2), [InChatPrompt("a", "zero", 0, "system", "x")], user="Ann", char="Bo",
                             continuing=True)
    assert [c.mes for c in chat] == ["m0", "zero", "m1"]


def test_extension_prompts_of_one_place_join_trimmed_in_key_order_without_the_empty_ones():
    # getExtensionPrompt: keys sorted as JavaScript sorts them (code units: "B" < "a"), values trimmed, joined by a
    # newline, macros substituted; prompts without text are left out, also from the prompts returned
    prompts = [InChatPrompt("a_ext", " {{user}} ", 0, "system", "extension:a_ext"),
               InChatPrompt("B_ext", "first\n", 0, "system", "extension:B_ext"),
               InChatPrompt("0_empty", "", 0, "system", "extension:0_empty")]
    text, here = joined_prompts(prompts, user="Ann", char="Bo")
    assert text == "first\nAnn"
    assert [p.source for p in here] == ["extension:B_ext", "extension:a_ext"]
    assert joined_prompts([], user="Ann", char="Bo") == ("", [])


def test_one_injected_message_names_every_prompt_it_joins():
    prompts = [InChatPrompt("3_vectors", "v", 1, "system", "extension:3_vectors"),
               InChatPrompt("2_floating_prompt", "n", 1, "system", "author_note")]
    chat, _ = inject_in_chat(_chat(2), prompts, user="Ann", char="Bo", continuing=False)
    assert (chat[1].mes, chat[1].source) == ("n\nv", "author_note+extension:3_vectors")
