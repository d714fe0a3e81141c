"""SillyTavern's Advanced Formatting files as the engine reads them: an instruct template, a context template, a
system prompt, a reasoning template, or the "master export" holding several of them (`instruct`, `context`,
`sysprompt`, `reasoning`). Which one a file is comes from its keys, as SillyTavern's master import tells them
apart; each is read into the shape `resources.instruct_template` / `context_template` / `system_prompt` take
(text-completion.md), every field SillyTavern does not read kept as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assembly.errors import AssemblyError
from assembly.sillytavern.text_templates import TextSettingsInvalid, read_text_templates

# the keys SillyTavern's master import checks a lone template for
_KIND_KEYS: dict[str, tuple[str, ...]] = {
    "instruct": ("name", "input_sequence", "output_sequence"),
    "context": ("name", "story_string"),
    "sysprompt": ("name", "content"),
    "reasoning": ("name", "prefix", "suffix", "separator"),
}
MASTER_SECTIONS = tuple(_KIND_KEYS)


class TextPresetInvalid(AssemblyError):
    def __init__(self, path: str, expected: str) -> None:
        super().__init__("IMPORT_INVALID", f"{path}: expected {expected}", status=422, detail={"path": path})


@dataclass(frozen=True)
class TextPresets:
    """What one Advanced Formatting file holds, each part in its resource shape (None when absent)."""

    instruct_template: dict[str, Any] | None = None
    context_template: dict[str, Any] | None = None
    system_prompt: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None  # kept as data: the prompt does not use it

    def resources(self) -> dict[str, Any]:
        """The parts a text-completion request's `resources` take."""
        parts = {"instruct_template": self.instruct_template, "context_template": self.context_template,
                 "system_prompt": self.system_prompt}
        return {k: v for k, v in parts.items() if v is not None}


def detect_text_preset(data: Any) -> str | None:
    """"master" for a master export (any of its sections is an object), else the kind whose keys a lone template
    has all of (instruct, context, sysprompt, reasoning, tried in that order), else None."""
    if not isinstance(data, dict):
        return None
    if any(isinstance(data.get(section), dict) for section in MASTER_SECTIONS):
        return "master"
    return next((kind for kind, keys in _KIND_KEYS.items() if all(k in data for k in keys)), None)


def _checked(kind: str, data: dict[str, Any], path: str) -> dict[str, Any]:
    """`data` as it is, after the fields the prompt reads were checked (a bad one is refused, naming it)."""
    resource = {"instruct": "instruct_template", "context": "context_template", "sysprompt": "system_prompt"}.get(kind)
    if resource is not None:
        try:
            read_text_templates({resource: data})
        except TextSettingsInvalid as exc:  # its field is "<resource>.<key>": named within this file instead
            raise TextPresetInvalid(path + exc.field[len(resource):], exc.expected) from None
    return dict(data)


def _system_prompt(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "name": data.get("name", ""), "content": data.get("content", ""),
            "post_history": data.get("post_history", "")}


def read_text_presets(data: Any) -> TextPresets:
    """A master export or a lone template, read into `TextPresets`; anything else is refused."""
    kind = detect_text_preset(data)
    if kind is None:
        raise TextPresetInvalid("file", "an instruct, context, system-prompt or reasoning template, or a master "
                                        "export of them")
    sections = {k: data.get(k) for k in MASTER_SECTIONS} if kind == "master" else {kind: data}
    read: dict[str, Any] = {}
    for section, value in sections.items():
        if value is None:
            continue
        path = section if kind == "master" else "file"
        if not isinstance(value, dict):
            raise TextPresetInvalid(path, "an object")
        read[section] = _checked(section, value, path)
    return TextPresets(instruct_template=read.get("instruct"), context_template=read.get("context"),
                       system_prompt=_system_prompt(read["sysprompt"]) if "sysprompt" in read else None,
                       reasoning=read.get("reasoning"))
