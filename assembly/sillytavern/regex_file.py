"""SillyTavern's regex script files read strictly: its regex extension exports one script per JSON file, or a list
of them (sillytavern.md §13.1). A wrong field is refused naming its path (`findRegex: expected a string, got ...`);
the lenient reader of scripts inside presets and cards stays `regex.parse_regex_scripts`."""

from __future__ import annotations

from typing import Any

from assembly.reading import (
    MISSING,
    ImportInvalid,
    invalid,
    join_path,
    read_flag,
    read_integer,
    read_object,
    read_text,
    read_texts,
)
from assembly.sillytavern.models import RegexScript

# The keys in the order SillyTavern's script editor writes them (an export keeps this order, then the rest).
SCRIPT_KEYS = ("id", "scriptName", "findRegex", "replaceString", "trimStrings", "placement", "disabled",
               "markdownOnly", "promptOnly", "runOnEdit", "substituteRegex", "minDepth", "maxDepth")
PLACEMENTS = (1, 2, 3, 5, 6)  # user input, AI output, slash command, world info, reasoning


def import_regex_scripts(value: Any) -> tuple[RegexScript, ...]:
    """One script object, or a list of them; each field checked, the unknown ones kept in `other_fields`."""
    if isinstance(value, dict):
        return (read_regex_script(value, ""),)
    if not isinstance(value, list):
        raise invalid("", "a regex script object or a list of them", value)
    if not value:
        raise ImportInvalid("", "at least one regex script")
    return tuple(read_regex_script(item, join_path("", index)) for index, item in enumerate(value))


def read_regex_script(value: Any, path: str) -> RegexScript:
    raw = read_object(value, path, "a regex script object")

    def at(key: str) -> str:
        return join_path(path, key)

    def get(key: str) -> Any:
        return raw.get(key, MISSING)

    script_id = get("id")
    if script_id is not MISSING and script_id is not None and not isinstance(script_id, str):
        raise invalid(at("id"), "a string", script_id)
    find = read_text(get("findRegex"), at("findRegex"))
    if not find:
        raise ImportInvalid(at("findRegex"), "a non-empty string (the find regex)")
    substitute = get("substituteRegex")
    if isinstance(substitute, bool):  # older SillyTavern versions wrote a flag
        substitute = int(substitute)
    placement = get("placement")
    if placement is MISSING or placement is None:
        placement = []
    if not isinstance(placement, list):
        raise invalid(at("placement"), "a list of placement numbers (1, 2, 3, 5, 6)", placement)
    for index, number in enumerate(placement):
        if read_integer(number, join_path(at("placement"), index), None) not in PLACEMENTS:
            raise invalid(join_path(at("placement"), index), "a placement number (1, 2, 3, 5, 6)", number)
    return RegexScript(
        script_name=read_text(get("scriptName"), at("scriptName")),
        find_regex=find,
        replace_string=read_text(get("replaceString"), at("replaceString")),
        trim_strings=read_texts(get("trimStrings"), at("trimStrings")),
        placement=tuple(placement),
        disabled=read_flag(get("disabled"), at("disabled"), False),
        markdown_only=read_flag(get("markdownOnly"), at("markdownOnly"), False),
        prompt_only=read_flag(get("promptOnly"), at("promptOnly"), False),
        run_on_edit=read_flag(get("runOnEdit"), at("runOnEdit"), True),
        substitute_regex=read_integer(substitute, at("substituteRegex"), 0, minimum=0, maximum=2),
        min_depth=read_integer(get("minDepth"), at("minDepth"), None, minimum=-1, nullable=True),
        max_depth=read_integer(get("maxDepth"), at("maxDepth"), None, minimum=-1, nullable=True),
        other_fields={k: v for k, v in raw.items() if k not in SCRIPT_KEYS or k == "id"},
    )
