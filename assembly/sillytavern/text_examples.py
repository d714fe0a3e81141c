"""Example dialogues for text completion: SillyTavern's `parseMesExamples` (blocks with their heading) and
`formatInstructModeExamples` (each example message in the instruct sequences). The block split and the turn
split are the chat path's (assembly.sillytavern.examples)."""

from __future__ import annotations

import re
from typing import Any

from assembly.sillytavern.examples import example_turns, split_example_blocks
from assembly.sillytavern.text_instruct import with_name
from assembly.sillytavern.text_macros import substitute_params

_START_LINE = re.compile(r"<START>\n", re.IGNORECASE)


def example_heading(separator: str, user: str, char: str, macros: Any = None) -> str:
    """The context template's example separator (macros) and a newline; nothing when it is empty."""
    return substitute_params(separator, user, char, macros=macros) + "\n" if separator else ""


def parse_examples(text: str, *, instruct_on: bool, heading: str) -> list[str]:
    """`parseMesExamples`: one item per `<START>` block, trimmed, with its heading (`<START>` in instruct mode,
    the separator otherwise) and a closing newline."""
    if not text or text == "<START>":
        return []
    head = "<START>\n" if instruct_on else heading
    return [head + block[len("<START>\n"):] for block in split_example_blocks(text)]


def format_instruct_examples(blocks: list[str], instruct: dict[str, Any], *, heading: str, user: str,
                             char: str, macros: Any = None) -> list[str]:
    """`formatInstructModeExamples`: per block its heading, then each message [prefix, text + suffix]."""
    if instruct["skip_examples"]:
        return [_START_LINE.sub(lambda _m: heading, b, count=1) for b in blocks]
    behavior = instruct["names_behavior"]
    affixes = {}
    for who, kind, name in (("example_user", "input", user), ("example_assistant", "output", char)):
        prefix, suffix = instruct[f"{kind}_sequence"], instruct[f"{kind}_suffix"]
        if instruct["macro"]:
            prefix = with_name(substitute_params(prefix, user, char, macros=macros), name)
            suffix = with_name(substitute_params(suffix, user, char, macros=macros), name)
            if not suffix and instruct["wrap"]:
                suffix = "\n"
        affixes[who] = (prefix, suffix, name)
    separator = "\n" if instruct["wrap"] else ""
    out: list[str] = []
    for block in blocks:
        cleaned = _START_LINE.sub("{Example Dialogue:}\n", block.replace("\r", ""), count=1)
        turns = example_turns(cleaned, user, char)
        if not turns:
            continue
        if heading:
            out.append(heading)
        for who, content in turns:
            prefix, suffix, name = affixes[who]
            named = behavior == "always" or (behavior == "force" and who == "example_user")
            body = f"{name}: {content}" if named else content
            out.append(separator.join(x for x in (prefix, body + suffix) if x))
    if not out:
        return [_START_LINE.sub(lambda _m: heading, b, count=1) for b in blocks]
    return out
