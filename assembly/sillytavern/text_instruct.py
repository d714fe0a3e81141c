"""Instruct mode for text completion (SillyTavern's `instruct-mode.js`): a chat message in its sequences and
suffixes, the last line that opens the reply, and the instruct stop sequences."""

from __future__ import annotations

import re
from typing import Any, Literal

from assembly.sillytavern.text_macros import substitute_params

Force = Literal["first", "last"] | None
_NAME_RE = re.compile(r"\{\{name\}\}", re.IGNORECASE)


def with_name(text: str, name: str) -> str:
    return _NAME_RE.sub(lambda _m: name, text)


def _prefix(instruct: dict[str, Any], is_user: bool, is_narrator: bool, force: Force) -> str:
    if is_narrator:
        return instruct["input_sequence"] if instruct["system_same_as_user"] else instruct["system_sequence"]
    kind = "input" if is_user else "output"
    if force is not None and instruct[f"{force}_{kind}_sequence"]:
        return instruct[f"{force}_{kind}_sequence"]
    return instruct[f"{kind}_sequence"]


def _suffix(instruct: dict[str, Any], is_user: bool, is_narrator: bool) -> str:
    if is_narrator:
        return instruct["input_suffix"] if instruct["system_same_as_user"] else instruct["system_suffix"]
    return instruct["input_suffix"] if is_user else instruct["output_suffix"]


def message_parts(instruct: dict[str, Any], name: str, text: str, *, is_user: bool, is_narrator: bool,
                  force: Force, user: str, char: str, macros: Any = None) -> tuple[str, str, str]:
    """`formatInstructModeChat` cut in three: (prefix with its separator, body, suffix)."""
    prefix = _prefix(instruct, is_user, is_narrator, force)
    suffix = _suffix(instruct, is_user, is_narrator)
    if instruct["macro"]:
        prefix = with_name(substitute_params(prefix, user, char, macros=macros), name or "System")
        suffix = with_name(substitute_params(suffix, user, char, macros=macros), name or "System")
    if not suffix and instruct["wrap"]:
        suffix = "\n"
    include_names = not is_narrator and instruct["names_behavior"] == "always"
    body = f"{name}: {text}" if include_names and name else text
    separator = "\n" if instruct["wrap"] else ""
    head = prefix + separator if prefix and (body + suffix) else prefix
    return head, body, suffix


def format_chat_message(instruct: dict[str, Any], name: str, text: str, *, is_user: bool, is_narrator: bool,
                        force: Force, user: str, char: str, macros: Any = None) -> str:
    head, body, suffix = message_parts(instruct, name, text, is_user=is_user, is_narrator=is_narrator, force=force,
                                       user=user, char=char, macros=macros)
    return head + body + suffix


def last_line(instruct: dict[str, Any], *, name: str, impersonate: bool, bias: str, user: str, char: str,
              macros: Any = None) -> str:
    """`formatInstructModePrompt`: the sequence that opens the reply (and Start Reply With)."""
    include_names = bool(name) and instruct["names_behavior"] == "always"
    if impersonate:
        sequence = instruct["last_input_sequence"] or instruct["input_sequence"]
    else:
        sequence = instruct["last_output_sequence"] or instruct["output_sequence"]
    if instruct["macro"]:
        sequence = with_name(substitute_params(sequence, user, char, macros=macros), name or "System")
    separator = "\n" if instruct["wrap"] else ""
    text = separator + sequence + separator + f"{name}:" if include_names else separator + sequence
    if not impersonate and bias:
        text += bias if include_names else separator + bias.lstrip()
    return (text.rstrip() if instruct["wrap"] else text) + ("" if include_names else separator)


def instruct_stop_strings(instruct: dict[str, Any], *, user: str, char: str, macros: Any = None) -> list[str]:
    """`getInstructStoppingSequences`: the stop sequence and (if asked) the message sequences, line by line."""
    sequences = [instruct["stop_sequence"]]
    if instruct["sequences_as_stop_strings"]:
        sequences += [with_name(instruct["input_sequence"], user), with_name(instruct["output_sequence"], char),
                      with_name(instruct["first_output_sequence"], char),
                      with_name(instruct["last_output_sequence"], char),
                      with_name(instruct["system_sequence"], "System"),
                      with_name(instruct["last_system_sequence"], "System")]
    lines = list(dict.fromkeys("\n".join(sequences).split("\n")))
    out = []
    for line in lines:
        if not line or not line.strip():
            continue
        stop = "\n" + line if instruct["wrap"] else line
        out.append(substitute_params(stop, user, char, macros=macros) if instruct["macro"] else stop)
    return out
