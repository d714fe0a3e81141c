"""The resource set of an AssemblyRequest (engine.md §1): each resource in simplified JSON or SillyTavern's shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assembly.reading import MISSING, ImportInvalid, Reader, guarded, read_object, spellings
from assembly.sillytavern.card import parse_character
from assembly.sillytavern.macro_variables import parse_macro_variables
from assembly.sillytavern.models import (
    AuthorNote,
    Character,
    ExtensionPrompt,
    Persona,
    Preset,
    RegexScript,
    Resources,
    WorldBook,
)
from assembly.sillytavern.notes import parse_author_note, parse_extension_prompts, parse_persona
from assembly.sillytavern.preset import parse_preset
from assembly.sillytavern.regex import parse_regex_scripts
from assembly.sillytavern.text_templates import read_text_settings
from assembly.sillytavern.worldbook import parse_worldbook
from assembly.sillytavern.worldinfo_timed import WorldState, parse_world_state

_RESOURCE_READERS: dict[str, tuple[tuple[str, ...], type, Callable[[Any, str], Any]]] = {
    "preset": ((), Preset, parse_preset),
    "character": ((), Character, parse_character),
    "persona": ((), Persona, parse_persona),
    "worldbook": (("world_book", "worldBook"), WorldBook, parse_worldbook),
    "author_note": (("authorNote",), AuthorNote, parse_author_note),
    "extension_prompts": (("extensionPrompts",), tuple, parse_extension_prompts),
    "regex_scripts": (("regexScripts",), tuple, parse_regex_scripts),
    "world_state": (("worldState",), WorldState, parse_world_state),
    "macro_engine": (("macroEngine",), type(None), lambda value, path: _macro_engine(value, path)),
    "global_variables": (("globalVariables",), type(None), lambda value, path: parse_global_variables(value, path)),
    "text_settings": (("textSettings",), type(None), lambda value, _path: read_text_settings(value)),
}


_RESOURCE_KEYS = tuple((name, spellings(name, aliases)) for name, (aliases, _, _) in _RESOURCE_READERS.items())
_RESOURCE_OF = {key: name for name, keys in _RESOURCE_KEYS for key in keys}


def _macro_engine(value: Any, path: str) -> str:
    if value not in ("legacy", "v2"):
        raise ImportInvalid(path, "'legacy' or 'v2'")
    return value


def parse_global_variables(value: Any, path: str) -> dict[str, Any]:
    try:
        return parse_macro_variables({"global": value}, path)["global"]
    except ValueError:
        raise ImportInvalid(path, "an object of variable values with non-empty names") from None


def _resources(value: Any, path: str) -> Resources:
    if isinstance(value, Resources):
        return value
    r = Reader(read_object(value, path, "a resources object"), path)
    fields: dict[str, Any] = {}
    given = {_RESOURCE_OF.get(key) for key in r.data}  # a resource left out is not read
    for name, keys in _RESOURCE_KEYS:
        if name not in given:
            continue
        _, model, read = _RESOURCE_READERS[name]
        item, where = r.read(keys)
        if item is MISSING or item is None:
            continue
        if model is not tuple and isinstance(item, model):
            fields[name] = item
        elif model is tuple and isinstance(item, (list, tuple)) and item and all(
                isinstance(i, (ExtensionPrompt, RegexScript)) for i in item):
            fields[name] = tuple(item)
        else:
            fields[name] = read(item, where)
    r.reject_leftovers(tuple(_RESOURCE_READERS))
    return Resources(**fields)


def normalize_resources(obj: dict[str, Any]) -> Resources:
    """An AssemblyRequest's `resources` (engine.md §1): simplified JSON or SillyTavern's file shapes, per resource."""
    return guarded(lambda: _resources(obj, ""))

