"""SillyTavern's example dialogues (sillytavern.md §3, §4.7): the card's `mes_example` and world info at EMTop /
EMBottom cut into "[Example Chat]" blocks of named system messages, and the new-chat separator."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from assembly.reading import js_trim
from assembly.sillytavern.messages import StMessage, _Frozen

_START = re.compile("<START>", re.IGNORECASE)


class ExampleWorldInfo(_Frozen):
    """A world book entry at EMTop ("before") or EMBottom ("after"), already macro-expanded."""

    source_id: str
    content: str
    position: Literal["before", "after"]


def split_example_blocks(mes_example: str) -> list[str]:
    """The card's example text cut into blocks at each <START> (case-insensitive), each block "<START>\\n" + its
    trimmed text + "\\n" (§3). A text of nothing but <START> markers and whitespace has no blocks."""
    text = mes_example
    if not js_trim(_START.sub("", text)):
        return []
    if not text.startswith("<START>"):  # only the upper-case marker counts here, as in SillyTavern
        text = "<START>\n" + js_trim(text)
    return ["<START>\n" + js_trim(part) + "\n" for part in _START.split(text)[1:]]


def _entry_blocks(content: str) -> list[str]:
    """parseMesExamples on a world-info entry's text, which nothing trimmed first: any text but a lone <START>
    gives at least one block (whitespace alone an empty one, sent as its header)."""
    if not content or content == "<START>":
        return []
    text = content if content.startswith("<START>") else "<START>\n" + js_trim(content)
    return ["<START>\n" + js_trim(part) + "\n" for part in _START.split(text)[1:]]


def example_turns(block: str, user_name: str, char_name: str) -> list[tuple[str, str]]:
    """A block's turns as (example_user | example_assistant, text).

    The first line (the block's <START>) is skipped. A line beginning with "<user name>:" starts a user turn, one with
    "<character name>:" a character turn; other lines continue the current turn, and lines before the first speaker
    belong to the first turn. A turn stays open while the same speaker goes on, so two "User:" lines in a row make one
    message. The speaker prefix is removed once, wherever it first occurs, and the text trimmed.
    """
    lines = block.replace("\r", "").split("\n")[1:]
    turns: list[tuple[str, list[str]]] = []
    speaker: str | None = None
    pending: list[str] = []
    for line in lines:
        starts = "user" if line.startswith(user_name + ":") else "char" if line.startswith(char_name + ":") else None
        if starts and speaker and starts != speaker:
            turns.append((speaker, pending))
            pending = []
        if starts:
            speaker = starts
        pending.append(line)
    if speaker:
        turns.append((speaker, pending))
    out = []
    for who, turn_lines in turns:
        prefix = (user_name if who == "user" else char_name) + ":"
        out.append(("example_user" if who == "user" else "example_assistant",
                    js_trim("\n".join(turn_lines).replace(prefix, "", 1))))
    return out


def parse_dialogue_examples(mes_example: str, *, user_name: str, char_name: str, new_example_chat_prompt: str,
                            world_info: Sequence[ExampleWorldInfo] = (),
                            source_id: str = "mes_example") -> list[list[StMessage]]:
    """Example dialogues as SillyTavern sends them (§3, §4.7): a list of blocks, each the "[Example Chat]" header
    (new_example_chat_prompt; left out when that is empty) and then one system message per turn named example_user
    or example_assistant.

    `mes_example` is the card text with macros expanded. `world_info` are the entries at EMTop / EMBottom in
    SillyTavern's EM list order (ascending `order`, §7.5): each entry's blocks are put in front of all blocks
    ("before") or after them ("after"), one entry at a time, so the "before" entries end up in descending order
    (§11.3). A block with no speaker line is a header alone.
    """
    blocks: list[tuple[str, str]] = [(b, source_id) for b in split_example_blocks(mes_example)]
    for entry in world_info:
        if not entry.content:
            continue
        parsed = [(b, entry.source_id) for b in _entry_blocks(entry.content)]
        blocks = parsed + blocks if entry.position == "before" else blocks + parsed
    header_text = new_example_chat_prompt
    out = []
    for b, (block, source) in enumerate(blocks):
        messages = []
        if header_text:
            messages.append(StMessage(id=f"newChat {b}", role="system", content=header_text, kind="example_header",
                                      sources=("new_example_chat_prompt",)))
        for j, (name, text) in enumerate(example_turns(block, user_name, char_name)):
            messages.append(StMessage(id=f"dialogueExamples {b}-{j}", role="system", content=text, name=name,
                                      kind="example", sources=(source,)))
        out.append(messages)
    return out


def new_chat_message(new_chat_prompt: str) -> StMessage:
    """The separator above the chat history (§4.3 rule 4); an empty prompt gives an empty message, never sent."""
    return StMessage(id="newMainChat", role="system", content=new_chat_prompt,
                     kind="new_chat", sources=("new_chat_prompt",))
