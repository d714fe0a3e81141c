"""SillyTavern character cards V1/V2/V3 (sillytavern.md §9.2): JSON or PNG in; out as the spec it came in (V2 for a
flat V1 card)."""

from __future__ import annotations

import copy
import math
from typing import Any

from assembly.reading import (
    MAX_IMPORT_BYTES,
    MISSING,
    REQUIRED,
    ImportInvalid,
    Reader,
    guarded,
    invalid,
    join_path,
    read_integer,
    read_object,
    read_role,
    read_text,
    read_texts,
    spellings,
)
from assembly.sillytavern.models import Character, DepthPrompt
from assembly.sillytavern.worldbook import export_character_book, parse_worldbook

_CARD_SPECS = ("chara_card_v2", "chara_card_v3")
# The top-level copies of the data that a V2/V3 card carries for V1 readers (written anew on export).
_V1_MIRRORS = frozenset({"name", "description", "personality", "scenario", "first_mes", "mes_example", "tags",
                         "creatorcomment", "talkativeness", "spec", "spec_version", "data"})
_CARD_TEXTS = (
    ("name", ()), ("description", ()), ("personality", ()), ("scenario", ()), ("first_mes", ()),
    ("mes_example", ("messageExample", "mesExample")), ("system_prompt", ()), ("post_history_instructions", ()),
    ("creator_notes", ("creatorcomment",)), ("creator", ()), ("character_version", ()),
)
_CARD_TEXT_KEYS = tuple((name, spellings(name, aliases)) for name, aliases in _CARD_TEXTS)
_CARD_LIST_KEYS = tuple((name, spellings(name, ())) for name in ("tags", "alternate_greetings", "group_only_greetings"))
_CARD_FIELD_OF = {key: name for name, keys in (*_CARD_TEXT_KEYS, *_CARD_LIST_KEYS) for key in keys}
_DEPTH_PROMPT_KEYS, _BOOK_KEYS = spellings("depth_prompt", ()), spellings("character_book", ())


def _depth_prompt(value: Any, path: str) -> DepthPrompt:
    r = Reader(read_object(value, path, "a {prompt, depth, role} object"), path)
    prompt = DepthPrompt(
        prompt=read_text(*r.get("prompt")),
        depth=read_integer(*r.get("depth"), 4, minimum=0),
        role=read_role(*r.get("role")),
    )
    r.reject_leftovers(("prompt", "depth", "role"))
    return prompt


def _talkativeness(value: Any, path: str) -> float:
    if value is MISSING or value is None or value == "":
        return 0.5
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):  # SillyTavern stores it as a string ("0.5")
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not 0 <= number <= 1:
        raise invalid(path, "a talkativeness from 0 to 1", value)
    return number


def _character_data(data: dict[str, Any], path: str, card: dict[str, Any] | None = None) -> Character:
    """The fields of a card's `data` (V2/V3) or of a flat card (V1 / engine.md's simplified shape)."""
    r = Reader(data, path)
    fields: dict[str, Any] = {}
    given = {_CARD_FIELD_OF.get(key) for key in data}  # a field the card leaves out reads as its default
    for name, keys in _CARD_TEXT_KEYS:
        if name in given or name == "name":
            fields[name] = read_text(*r.read(keys), default=REQUIRED if name == "name" else "")
        else:
            fields[name] = ""
    for name, keys in _CARD_LIST_KEYS:
        fields[name] = read_texts(*r.read(keys)) if name in given else ()
    fields["nickname"] = read_text(*r.get("nickname"), default=None)

    ext_value, ext_path = r.get("extensions")
    extensions = {} if ext_value is MISSING or ext_value is None else read_object(ext_value, ext_path)
    ext = Reader(extensions, ext_path)
    depth_value, depth_path = ext.read(_DEPTH_PROMPT_KEYS)
    top_depth, top_depth_path = r.read(_DEPTH_PROMPT_KEYS)
    if top_depth is not MISSING and top_depth is not None:
        if depth_value not in (MISSING, None) and depth_value != top_depth:
            raise invalid(top_depth_path, f"the same value as {depth_path} (both are given)", top_depth)
        depth_value, depth_path = top_depth, top_depth_path
    if depth_value is not MISSING and depth_value is not None:
        fields["depth_prompt"] = _depth_prompt(depth_value, depth_path)
    talk_value, talk_path = ext.get("talkativeness")
    if talk_value is MISSING:
        talk_value, talk_path = r.get("talkativeness")
    else:
        r.get("talkativeness")  # the V1 top-level mirror of the same value
    fields["talkativeness"] = _talkativeness(talk_value, talk_path)

    book_value, book_path = r.read(_BOOK_KEYS)
    if book_value is not MISSING and book_value is not None:
        fields["character_book"] = parse_worldbook(book_value, book_path)
    card = card or {}
    return Character(**fields, extensions=ext.leftovers(), other_fields=r.leftovers(),
                     spec="chara_card_v3" if card.get("spec") == "chara_card_v3" else "chara_card_v2",
                     card_fields=copy.deepcopy({k: v for k, v in card.items() if k not in _V1_MIRRORS}) if card else {})


def _card(value: Any, path: str) -> Character:
    data = read_object(value, path, "a character card object")
    if "spec" in data or isinstance(data.get("data"), dict):
        spec = data.get("spec")
        if "spec" in data and spec not in _CARD_SPECS:
            raise invalid(join_path(path, "spec"), "'chara_card_v2' or 'chara_card_v3'", spec)
        # The top-level keys beside `data` are SillyTavern's V1 mirrors of it (kept as written); `data` is the card.
        return _character_data(read_object(data.get("data"), join_path(path, "data"), "the card's data object"),
                               join_path(path, "data"), data)
    return _character_data(data, path)


def parse_character(value: Any, path: str) -> Character:
    if isinstance(value, (bytes, bytearray, memoryview)):
        from assembly.sillytavern.png import PNG_SIGNATURE, card_from_png  # with the first PNG card: JSON needs none

        raw = bytes(value)
        if len(raw) > MAX_IMPORT_BYTES:
            raise ImportInvalid(path, f"a file of at most 5 MiB ({MAX_IMPORT_BYTES} bytes), got {len(raw)} bytes",
                                status=413)
        if not raw.startswith(PNG_SIGNATURE):
            raise ImportInvalid(path, "a PNG character card (these bytes are not a PNG)", status=415)
        card, card_path = card_from_png(raw)
        return _card(card, card_path)
    return _card(value, path)


def import_character(data: dict[str, Any] | bytes) -> Character:
    """A card V2 (`chara_card_v2`) or V3 (`chara_card_v3`) JSON object, a flat V1 / simplified card, or PNG bytes
    with a `ccv3` (preferred) or `chara` text chunk -> Character."""
    return guarded(lambda: parse_character(data, ""))


def export_character(character: Character) -> dict[str, Any]:
    """Character -> a card JSON in the spec it was read from (`chara_card_v2` for a flat card), with SillyTavern's V1
    mirrors at the top level taken from the data, and the card's other top-level keys as they were written."""
    extensions = copy.deepcopy(character.extensions)
    extensions["talkativeness"] = str(character.talkativeness)
    if character.depth_prompt is not None:
        extensions["depth_prompt"] = character.depth_prompt.model_dump()
    data: dict[str, Any] = {
        **copy.deepcopy(character.other_fields),
        **{name: getattr(character, name) for name, _ in _CARD_TEXTS},
        "tags": list(character.tags),
        "alternate_greetings": list(character.alternate_greetings),
        "group_only_greetings": list(character.group_only_greetings),
        "extensions": extensions,
    }
    if character.nickname is not None:
        data["nickname"] = character.nickname
    if character.character_book is not None:
        data["character_book"] = export_character_book(character.character_book)
    mirrors = {name: data[name] for name in ("name", "description", "personality", "scenario", "first_mes",
                                             "mes_example", "tags")}
    return {
        **copy.deepcopy(character.card_fields), **mirrors, "creatorcomment": character.creator_notes,
        "talkativeness": extensions["talkativeness"], "spec": character.spec,
        "spec_version": "3.0" if character.spec == "chara_card_v3" else "2.0", "data": data,
    }

