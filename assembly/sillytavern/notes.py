"""The texts SillyTavern's extensions add around the card: the persona, the author's note and other extension
prompts (sillytavern.md §8)."""

from __future__ import annotations

from typing import Any

from assembly.reading import (
    MISSING,
    REQUIRED,
    Reader,
    invalid,
    join_path,
    read_flag,
    read_integer,
    read_named,
    read_object,
    read_role,
    read_text,
    spellings,
)
from assembly.sillytavern.models import AuthorNote, ExtensionPrompt, Persona
from assembly.sillytavern.vocabulary import (
    EXTENSION_POSITION_ALIASES,
    EXTENSION_POSITION_BY_NUMBER,
    PERSONA_POSITION_ALIASES,
    PERSONA_POSITION_BY_NUMBER,
)

# the persona's fields read in two spellings: its own name, SillyTavern's setting
_PERSONA_KEYS = {name: spellings(name, (setting,)) for name, setting in (
    ("description", "persona_description"), ("position", "persona_description_position"),
    ("depth", "persona_description_depth"), ("role", "persona_description_role"))}


def parse_persona(value: Any, path: str) -> Persona:
    r = Reader(read_object(value, path, "a persona object"), path)
    persona = Persona(
        name=read_text(*r.get("name"), default="User"),
        description=read_text(*r.read(_PERSONA_KEYS["description"])),
        position=read_named(*r.read(_PERSONA_KEYS["position"]), "in_prompt",
                        names=PERSONA_POSITION_ALIASES, numbers=PERSONA_POSITION_BY_NUMBER,
                        expected="a persona position: in_prompt, after_char, top_an, bottom_an, at_depth, none "
                        "(or 0, 1, 2, 3, 4, 9)"),
        depth=read_integer(*r.read(_PERSONA_KEYS["depth"]), 2, minimum=0),
        role=read_role(*r.read(_PERSONA_KEYS["role"])),
    )
    r.reject_leftovers(("name", "description", "position", "depth", "role"))
    return persona


def parse_author_note(value: Any, path: str) -> AuthorNote:
    r = Reader(read_object(value, path, "an author's note object"), path)
    note = AuthorNote(
        content=read_text(*r.get("content", "prompt", "note_prompt")),
        position=read_named(*r.get("position", "note_position"), "in_chat",
                        names={k: v for k, v in EXTENSION_POSITION_ALIASES.items() if v != "none"},
                        numbers={k: v for k, v in EXTENSION_POSITION_BY_NUMBER.items() if v != "none"},
                        expected="an author's note position: in_chat, before_main, after_main (or 1, 2, 0)"),
        depth=read_integer(*r.get("depth", "note_depth"), 4, minimum=0),
        role=read_role(*r.get("role", "note_role")),
        interval=read_integer(*r.get("interval", "note_interval"), 1, minimum=0),
        allow_wi_scan=read_flag(*r.get("allow_wi_scan", "allowWIScan"), False),
    )
    r.reject_leftovers(("content", "position", "depth", "role", "interval", "allow_wi_scan"))
    return note


def _extension_prompt(value: Any, path: str, key: str | None = None) -> ExtensionPrompt:
    r = Reader(read_object(value, path, "an extension prompt object"), path)
    key_value, key_path = r.get("key")
    if key is not None:
        if key_value not in (MISSING, None) and key_value != key:
            raise invalid(key_path, f"the key it is listed under ({key!r})", key_value)
        key_value = key
    prompt = ExtensionPrompt(
        key=read_text(key_value, key_path, default=REQUIRED),
        content=read_text(*r.get("content", "value")),
        position=read_named(*r.get("position"), "in_chat", names=EXTENSION_POSITION_ALIASES,
                        numbers=EXTENSION_POSITION_BY_NUMBER,
                        expected="an extension prompt position: in_chat, before_main, after_main, none "
                        "(or 1, 2, 0, -1)"),
        depth=read_integer(*r.get("depth"), 0, minimum=0),
        role=read_role(*r.get("role")),
        scan=read_flag(*r.get("scan"), False),
    )
    r.reject_leftovers(("key", "content", "position", "depth", "role", "scan"))
    return prompt


def parse_extension_prompts(value: Any, path: str) -> tuple[ExtensionPrompt, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):  # SillyTavern's own map: {key: {value, position, depth, scan, role}}
        prompts = [_extension_prompt(item, join_path(path, key), key) for key, item in read_object(value, path).items()]
    elif isinstance(value, list):
        prompts = [_extension_prompt(item, join_path(path, index)) for index, item in enumerate(value)]
    else:
        raise invalid(path, "a list of extension prompts (or an object keyed by extension key)", value)
    seen: set[str] = set()
    for index, prompt in enumerate(prompts):
        if prompt.key in seen:
            raise invalid(join_path(join_path(path, index), "key"), "a key used once", prompt.key)
        seen.add(prompt.key)
    return tuple(prompts)

