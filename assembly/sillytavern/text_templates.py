"""SillyTavern's text-completion settings as the engine reads them: the context template, the instruct template
(with `migrateInstructModeSettings`' defaults), the system prompt and the text settings (text-completion.md)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from assembly.errors import AssemblyError

# migrateInstructModeSettings: what a preset lacking a field gets
_INSTRUCT_DEFAULTS: dict[str, Any] = {
    "input_sequence": "", "input_suffix": "", "output_sequence": "", "output_suffix": "", "system_sequence": "",
    "system_suffix": "", "first_input_sequence": "", "last_input_sequence": "", "first_output_sequence": "",
    "last_output_sequence": "", "last_system_sequence": "", "story_string_prefix": "", "story_string_suffix": "",
    "stop_sequence": "", "user_alignment_message": "", "wrap": False, "macro": False, "names_behavior": "force",
    "skip_examples": False, "system_same_as_user": False, "sequences_as_stop_strings": True,
}
_CONTEXT_DEFAULTS: dict[str, Any] = {
    "story_string": "", "chat_start": "", "example_separator": "", "use_stop_strings": False,
    "names_as_stop_strings": True, "story_string_position": 0, "story_string_depth": 1, "story_string_role": 0,
    "always_force_name2": False, "single_line": False,
}
TEXT_SETTINGS_DEFAULTS: dict[str, Any] = {
    "instruct_enabled": False, "sysprompt_enabled": False, "max_context": 4096, "amount_gen": 512,
    "token_padding": 64, "pin_examples": False, "strip_examples": False, "collapse_newlines": False,
    "user_prompt_bias": "", "custom_stopping_strings": "", "prefer_character_prompt": True,
    "prefer_character_jailbreak": True,
}
_NAMES_BEHAVIORS = ("none", "force", "always")


class TextSettingsInvalid(AssemblyError):
    """A text-completion setting of the wrong type; `field` is its path within `resources`."""

    def __init__(self, path: str, expected: str, got: Any) -> None:
        super().__init__("ASSEMBLY_REQUEST_INVALID", f"resources.{path}: expected {expected}, got {got!r}"[:400],
                         detail={"path": f"resources.{path}", "expected": expected})
        self.field, self.expected = path, expected


@dataclass(frozen=True)
class TextTemplates:
    context: dict[str, Any]
    instruct: dict[str, Any]
    system_prompt: dict[str, Any]
    settings: dict[str, Any]

    @property
    def instruct_on(self) -> bool:
        return bool(self.settings["instruct_enabled"])


def _section(raw: Any, path: str, defaults: dict[str, Any]) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise TextSettingsInvalid(path, "an object", raw)
    merged = {**defaults, **{k: v for k, v in raw.items() if v is not None}}
    for key, default in defaults.items():
        value = merged[key]
        if isinstance(default, bool):
            merged[key] = bool(value)  # SillyTavern reads these as truthy
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    raise TextSettingsInvalid(f"{path}.{key}", "a number", value) from None
            if isinstance(value, float) and not math.isfinite(value):
                raise TextSettingsInvalid(f"{path}.{key}", "a finite number", value)
            merged[key] = int(value)
        elif not isinstance(value, str):
            raise TextSettingsInvalid(f"{path}.{key}", "a string", value)
    return merged


def read_text_settings(raw: Any) -> dict[str, Any]:
    """`resources.text_settings` (SillyTavern's power-user settings) with its defaults, each of SillyTavern's type."""
    return _section(raw, "text_settings", TEXT_SETTINGS_DEFAULTS)


def read_text_templates(resources: dict[str, Any]) -> TextTemplates:
    """The four text-completion resources of a request (absent ones get SillyTavern's defaults)."""
    instruct = _section(resources.get("instruct_template"), "instruct_template", _INSTRUCT_DEFAULTS)
    if instruct["names_behavior"] not in _NAMES_BEHAVIORS:
        raise TextSettingsInvalid("instruct_template.names_behavior", "none, force or always",
                                  instruct["names_behavior"])
    system = _section(resources.get("system_prompt"), "system_prompt", {"name": "", "content": "", "post_history": ""})
    settings = read_text_settings(resources.get("text_settings"))
    return TextTemplates(context=_section(resources.get("context_template"), "context_template", _CONTEXT_DEFAULTS),
                         instruct=instruct, system_prompt=system, settings=settings)


def custom_stopping_strings(value: str) -> list[str]:
    """`custom_stopping_strings` as SillyTavern keeps it: a JSON array in a string; anything else gives none."""
    return read_custom_stopping_strings(value)[0]


def read_custom_stopping_strings(value: str) -> tuple[list[str], str | None]:
    """`custom_stopping_strings` and, when SillyTavern would drop any of it without a word, what it dropped: the
    whole value when it is not a JSON array, else the items that are not strings."""
    if not value:
        return [], None
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):  # "[[[[..." deeper than the parser's stack is as unreadable as bad JSON
        return [], "the whole value: it is not valid JSON"
    if not isinstance(parsed, list):
        return [], "the whole value: it is JSON but not an array of strings"
    strings = [s for s in parsed if isinstance(s, str)]
    dropped = len(parsed) - len(strings)
    return strings, (f"{dropped} item(s) that are not strings" if dropped else None)
