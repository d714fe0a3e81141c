"""SillyTavern's stop strings for text completion (`getStoppingStrings`)."""

from __future__ import annotations

from typing import Any

from assembly.sillytavern.text_instruct import instruct_stop_strings
from assembly.sillytavern.text_macros import substitute_params
from assembly.sillytavern.text_templates import TextTemplates, custom_stopping_strings


def stop_strings(templates: TextTemplates, *, user: str, char: str, impersonate: bool,
                 continue_on_user: bool, macros: Any = None) -> list[str]:
    """Names, instruct sequences, chat start and example separator, custom strings; `\\n` first for single line;
    empties and repeats dropped."""
    context = templates.context
    out: list[str] = []
    if context["names_as_stop_strings"]:
        out += [f"\n{char}:" if impersonate else f"\n{user}:", f"\n{user}:"]
        if continue_on_user:
            out.append(f"\n{char}:")
    if templates.instruct_on:
        out += instruct_stop_strings(templates.instruct, user=user, char=char, macros=macros)
    if context["use_stop_strings"]:
        for key in ("chat_start", "example_separator"):
            if context[key]:
                out.append("\n" + substitute_params(context[key], user, char, macros=macros))
    out += [substitute_params(s, user, char, macros=macros) for s in custom_stopping_strings(templates.settings[
        "custom_stopping_strings"])]
    if context["single_line"]:
        out.insert(0, "\n")
    return [s for s in dict.fromkeys(out) if s]
