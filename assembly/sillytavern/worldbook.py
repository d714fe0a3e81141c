"""SillyTavern's world books (sillytavern.md §7, §9.3): the native file, a card's `character_book` and engine.md's
simplified list, read into one `WorldBook`; written back as the native file or a card's book."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assembly.reading import (
    MISSING,
    ROLES,
    ImportInvalid,
    Reader,
    camel_case,
    field_keys,
    guarded,
    invalid,
    join_path,
    read_flag,
    read_integer,
    read_named,
    read_object,
    read_role,
    read_text,
    read_texts,
    spellings,
    whole_number,
)
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.vocabulary import (
    CHARACTER_STRATEGY_BY_NUMBER,
    SELECTIVE_LOGIC_BY_NUMBER,
    WORLD_POSITION_NUMBER,
    read_generation_types,
    world_position,
)

BOOK_SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (our name, other accepted spellings: SillyTavern's world_info_* settings, the V2 character_book's names)
    ("scan_depth", ("world_info_depth",)),
    ("include_names", ("world_info_include_names",)),
    ("recursive", ("world_info_recursive", "recursive_scanning")),
    ("case_sensitive", ("world_info_case_sensitive",)),
    ("match_whole_words", ("world_info_match_whole_words",)),
    ("budget_percent", ("world_info_budget",)),
    ("budget_cap", ("world_info_budget_cap",)),
    ("min_activations", ("world_info_min_activations",)),
    ("min_activations_depth_max", ("world_info_min_activations_depth_max",)),
    ("max_recursion_steps", ("world_info_max_recursion_steps",)),
    ("use_group_scoring", ("world_info_use_group_scoring",)),
)
_BOOK_SETTING_KEYS = tuple((name, spellings(name, aliases)) for name, aliases in BOOK_SETTINGS)
_BOOK_SETTING_OF = {spelling: name for name, keys in _BOOK_SETTING_KEYS for spelling in keys}
_STRATEGY_KEYS = spellings("character_strategy", ("world_info_character_strategy",))
_BOOK_SETTING_LIMITS = {"scan_depth": (0, 1000), "budget_percent": (0, 100)}


def book_settings(r: Reader) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    defaults = WorldBook.model_fields
    given = {_BOOK_SETTING_OF.get(key) for key in r.data}  # the settings the book gives, in one pass over its keys
    if r.fallback is not None:
        given.update(_BOOK_SETTING_OF.get(key) for key in r.fallback.data)
    for name, keys in _BOOK_SETTING_KEYS:
        if name not in given:
            continue
        value, where = r.read(keys)
        default = defaults[name].default
        if isinstance(default, bool):
            parsed = read_flag(value, where, MISSING)
        else:
            low, high = _BOOK_SETTING_LIMITS.get(name, (0, None))
            parsed = read_integer(value, where, MISSING, minimum=low, maximum=high)
        if parsed is not MISSING:
            settings[name] = parsed
    strategy, where = r.read(_STRATEGY_KEYS)
    if strategy is not MISSING and strategy is not None:
        settings["character_strategy"] = read_named(
            strategy, where, "character_first", names={n: n for n in CHARACTER_STRATEGY_BY_NUMBER.values()},
            numbers=CHARACTER_STRATEGY_BY_NUMBER, expected="a character lore strategy: evenly, character_first, "
            "global_first (or 0, 1, 2)")
    activation, where = r.get("activation")
    if activation is not MISSING and activation is not None:
        if activation not in ("all", "keywords"):
            raise invalid(where, "the activation mode 'all' or 'keywords'", activation)
        settings["activation"] = activation
    name_value = read_text(*r.get("name"), default=None)
    if name_value is not None:
        settings["name"] = name_value
    return settings



def _uid(value: Any, path: str) -> int | str:
    number = whole_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value:
        return value
    raise invalid(path, "an entry id (integer or non-empty string)", value)


_ENTRY_FLAGS = (
    ("constant", False), ("selective", True), ("use_probability", True), ("group_override", False),
    ("prevent_recursion", False), ("exclude_recursion", False), ("ignore_budget", False), ("vectorized", False),
    ("match_persona_description", False), ("match_character_description", False),
    ("match_character_personality", False), ("match_character_depth_prompt", False), ("match_scenario", False),
    ("match_creator_notes", False),
)


def _entry_state(r: Reader, default_uid: int | str, shape: _Shape, *, book_form: bool
                 ) -> tuple[int | str, bool, Any, bool | int, dict[str, Any] | None]:
    """An entry's uid, whether it is enabled (`enabled` and `disable` must agree), its position (a card book's exact
    number lives in extensions.position), its recursion delay and its character filter."""
    keys = shape.keys
    uid_value, uid_path = r.value(_KEYS["uid"], keys["uid"]) if "uid" in keys else (MISSING, "")
    uid = default_uid if uid_value is MISSING or uid_value is None else _uid(uid_value, uid_path)

    enabled_value, enabled_path = r.value(_KEYS["enabled"], keys["enabled"]) if "enabled" in keys else (MISSING, "")
    disable_value, disable_path = r.value(_KEYS["disable"], keys["disable"]) if "disable" in keys else (MISSING, "")
    enabled = read_flag(enabled_value, enabled_path, MISSING)
    disabled = read_flag(disable_value, disable_path, MISSING)
    if enabled is not MISSING and disabled is not MISSING and enabled == disabled:
        raise invalid(disable_path, f"the opposite of enabled ({enabled})", disabled)
    enabled = enabled if enabled is not MISSING else (not disabled if disabled is not MISSING else True)

    # The card book's exact number lives in extensions.position; its own position is only before/after_char.
    position_value, position_path = MISSING, ""
    if shape.position_in_extensions:
        assert r.fallback is not None
        position_value, position_path = r.fallback.read(_KEYS["position"])
        if position_value is not MISSING and position_value is not None:
            r.used.add("position")
    if (position_value is MISSING or position_value is None) and "position" in keys:
        position_value, position_path = r.value(_KEYS["position"], keys["position"])
    default_position = "after" if book_form else "before"
    position = default_position if position_value is MISSING or position_value is None else world_position(
        position_value, position_path
    )

    delay_value, delay_path = (r.value(_KEYS["delay_until_recursion"], keys["delay_until_recursion"])
                               if "delay_until_recursion" in keys else (MISSING, ""))
    if delay_value is MISSING or delay_value is None:
        delay_until_recursion: bool | int = False
    elif isinstance(delay_value, bool):
        delay_until_recursion = delay_value
    else:
        delay_until_recursion = read_integer(delay_value, delay_path, 0, minimum=0)

    filter_value, filter_path = (r.value(_KEYS["character_filter"], keys["character_filter"])
                                 if "character_filter" in keys else (MISSING, ""))
    character_filter = None
    if filter_value is not MISSING and filter_value is not None:
        character_filter = copy.deepcopy(read_object(filter_value, filter_path, "a {isExclude, names, tags} object"))

    return uid, enabled, position, delay_until_recursion, character_filter


# a field read by its reader: (name, its one key or None, the reader, the type the reader takes as it is or None)
_Step = tuple[str, str | None, Callable[[Any, str], Any], type | None]


@dataclass(slots=True)  # read only, but not frozen: a frozen one sets each field through object.__setattr__
class _Shape:
    """What an entry's keys (and its card-book `extensions`' keys) say before any value is read: each field it gives
    with the one key to read it from (None: spelled twice or in `extensions`, read through the Reader), those keys,
    and the fields with a reader of their own in reading order (the first refusal is the one reported)."""

    keys: dict[str, str | None]
    direct: frozenset[str]
    position_in_extensions: bool
    first: tuple[_Step, ...]
    later: tuple[_Step, ...]


def _shape(keys: tuple[str, ...], fallback_keys: tuple[str, ...], book_form: bool) -> _Shape:
    fields = field_keys(keys, fallback_keys, _FIELD_OF_SPELLING)
    # the spelling of the order read only when the other is missing is not read at once (see _entry)
    later_order = "order" if book_form else "insertion_order"
    return _Shape(fields, frozenset(key for name, key in fields.items() if key is not None and name != later_order),
                  "position" in fallback_keys,
                  tuple((name, fields[name], read, as_is) for name, read, as_is in _FIRST_STEPS if name in fields),
                  tuple((name, fields[name], read, as_is) for name, read, as_is in _LATER_STEPS if name in fields))


def _read_steps(steps: tuple[_Step, ...], r: Reader, fields: dict[str, Any]) -> None:
    """Each step's field read into `fields`, in order: by its one key, where a value of the type its reader takes as
    it is needs no call (nor a path), else through the Reader."""
    data, path = r.data, r.path
    for name, key, read, as_is in steps:
        if key is None:
            fields[name] = read(*r.read(_KEYS[name]))
        else:
            value = data[key]
            fields[name] = value if type(value) is as_is else read(value, f"{path}.{key}")


# An entry's shape by its keys and its extensions' keys: a book's entries share a few (an export writes every
# entry with the same fields), so each shape is worked out once per book.
_Shapes = dict[tuple[tuple[str, ...], tuple[str, ...]], _Shape]


def _entry(value: Any, path: str, default_uid: int | str, shapes: _Shapes, *, book_form: bool) -> dict[str, Any]:
    """One entry's fields, each read and checked (the book validates them as its entries in one call). `book_form`:
    a list entry (card character_book or the simplified list) whose `extensions` carry SillyTavern's fields in
    snake_case; a native entry keeps its `extensions` untouched. Only the fields the entry gives are read; the others
    take their defaults."""
    data = read_object(value, path, "a world book entry object")
    ext = data.get("extensions") if book_form else None
    fallback = None
    if ext is not None:
        ext_path = join_path(path, "extensions")
        fallback = Reader(read_object(ext, ext_path), ext_path)
    shape_key = (tuple(data), tuple(fallback.data) if fallback is not None else ())
    shape = shapes.get(shape_key)
    if shape is None:
        shape = shapes[shape_key] = _shape(*shape_key, book_form)
    r = Reader(data, path, fallback, shape.direct)
    if book_form:
        r.used.add("extensions")

    uid, enabled, position, delay_until_recursion, character_filter = _entry_state(r, default_uid, shape,
                                                                                    book_form=book_form)
    # the fields the entry gives, read; the model fills in the others' defaults (half the validation of all 43)
    fields: dict[str, Any] = dict(uid=uid, enabled=enabled, position=position,
                                  delay_until_recursion=delay_until_recursion, character_filter=character_filter)
    _read_steps(shape.first, r, fields)
    # A native entry's order is `order`, a card book's `insertion_order`; the other spelling, when a converted file
    # carries both and they disagree, is never read by SillyTavern, so it is kept as written rather than refused.
    first, second = ("insertion_order", "order") if book_form else ("order", "insertion_order")
    keys = shape.keys
    order_value, order_path = r.value(_KEYS[first], keys[first]) if first in keys else (MISSING, "")
    if (order_value is MISSING or order_value is None) and second in keys:
        order_value, order_path = r.value(_KEYS[second], keys[second])
        if keys[second] is not None:
            r.used.add(keys[second])
    fields["order"] = read_integer(order_value, order_path, 100)
    _read_steps(shape.later, r, fields)
    other = r.leftovers()
    if fallback is not None:
        rest = fallback.leftovers()
        if rest:
            other["extensions"] = rest
    elif not book_form and other.get("extensions") == {}:
        del other["extensions"]  # an empty native `extensions` says nothing; book exports always write one
    fields["other_fields"] = other
    return fields


_SELECTIVE_LOGIC_NAMES = {v: v for v in SELECTIVE_LOGIC_BY_NUMBER.values()}
_LORE_NAMES = {n: n for n in ("global", "character", "chat", "persona")}
# Each field read by name alone, and how: a field the entry does not give keeps the model's default.
# (in the order they are read: the first refusal is the one reported)
_FIRST_READERS: dict[str, Callable[[Any, str], Any]] = {
    **{name: (lambda value, path, default=default: read_flag(value, path, default)) for name, default in _ENTRY_FLAGS},
    "selective_logic": lambda value, path: read_named(
        value, path, "and_any", names=_SELECTIVE_LOGIC_NAMES, numbers=SELECTIVE_LOGIC_BY_NUMBER,
        expected="a selective logic: and_any, not_all, not_any, and_all (or 0..3)"),
    "triggers": read_generation_types,
}
_LATER_READERS: dict[str, Callable[[Any, str], Any]] = {
    "comment": read_text,
    "content": read_text,
    "keys": read_texts,
    "secondary_keys": read_texts,
    "depth": lambda value, path: read_integer(value, path, None, minimum=0, nullable=True),
    "role": read_role,
    "outlet_name": read_text,
    "probability": lambda value, path: read_integer(value, path, 100, minimum=0, maximum=100),
    "group": read_text,
    "group_weight": lambda value, path: read_integer(value, path, 100, minimum=0),
    "use_group_scoring": lambda value, path: read_flag(value, path, None),
    "scan_depth": lambda value, path: read_integer(value, path, None, minimum=0, maximum=1000, nullable=True),
    "case_sensitive": lambda value, path: read_flag(value, path, None),
    "match_whole_words": lambda value, path: read_flag(value, path, None),
    "sticky": lambda value, path: read_integer(value, path, None, minimum=0, nullable=True),
    "cooldown": lambda value, path: read_integer(value, path, None, minimum=0, nullable=True),
    "delay": lambda value, path: read_integer(value, path, None, minimum=0, nullable=True),
    "display_index": lambda value, path: read_integer(value, path, None, nullable=True),
    "automation_id": read_text,
    "lore": lambda value, path: read_named(value, path, "global", names=_LORE_NAMES, numbers={},
                                           expected="where the entry comes from: global, character, chat or persona"),
}
# the fields whose reader gives back a value of this type as it is (a flag given as true or false, a text as text)
_TAKEN_AS_IS: dict[str, type] = {
    **{name: bool for name, _ in _ENTRY_FLAGS}, "use_group_scoring": bool, "case_sensitive": bool,
    "match_whole_words": bool, "display_index": int,
    **{name: str for name, read in _LATER_READERS.items() if read is read_text}}
# each field with a reader of its own, in reading order: (name, reader, the type it takes as it is or None)
_FIRST_STEPS, _LATER_STEPS = (tuple((name, read, _TAKEN_AS_IS.get(name)) for name, read in readers.items())
                              for readers in (_FIRST_READERS, _LATER_READERS))
# each field's spellings (the name first), and the field each spelling names
_KEYS: dict[str, tuple[str, ...]] = {
    names[0]: spellings(names[0], names[1:])
    for names in (*((name,) for name in (*_FIRST_READERS, *_LATER_READERS)), ("uid", "id"), ("enabled",),
                  ("disable",), ("position",), ("delay_until_recursion",), ("character_filter",),
                  ("insertion_order",), ("order",), ("keys", "key"), ("secondary_keys", "keysecondary"))}
_FIELD_OF_SPELLING: dict[str, str] = {spelling: name for name, keys in _KEYS.items() for spelling in keys}


def parse_worldbook(value: Any, path: str) -> WorldBook:
    data = read_object(value, path, "a world book object with `entries`")
    r = Reader(data, path)
    entries_value, entries_path = r.get("entries")
    if entries_value is MISSING:
        raise ImportInvalid(entries_path, "the world book's entries (an object keyed by uid, or a list)")
    entries: list[dict[str, Any]] = []
    shapes: _Shapes = {}
    if isinstance(entries_value, dict):
        for key, item in read_object(entries_value, entries_path).items():
            default_uid: int | str = int(key) if key.isascii() and key.isdecimal() and len(key) <= 15 else key
            entries.append(_entry(item, join_path(entries_path, key), default_uid, shapes, book_form=False))
    elif isinstance(entries_value, list):
        for index, item in enumerate(entries_value):
            entries.append(_entry(item, join_path(entries_path, index), index, shapes, book_form=True))
    else:
        raise invalid(entries_path, "the world book's entries (an object keyed by uid, or a list)", entries_value)
    seen: dict[int | str, int] = {}
    for index, entry in enumerate(entries):
        uid = entry["uid"]
        if uid in seen:
            where = join_path(entries_path, index) if isinstance(entries_value, list) else join_path(
                entries_path, list(entries_value)[index]
            )
            raise invalid(join_path(where, "uid"), "a uid used by one entry only", uid)
        seen[uid] = index
    settings = book_settings(r)
    other = r.leftovers()
    if other.get("extensions") == {}:
        del other["extensions"]  # the card book's required-but-empty extensions; its export always writes one
    return WorldBook(entries=tuple(entries), other_fields=other, **settings)


def import_worldbook(data: dict[str, Any]) -> WorldBook:
    """A native world book `{"entries": {"<uid>": {...}}}`, a card's `character_book` (entries list plus
    extensions), or engine.md's simplified `{"entries": [...]}` -> WorldBook."""
    return guarded(lambda: parse_worldbook(data, ""))


def _book_settings_out(book: WorldBook) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if book.name is not None:
        out["name"] = book.name
    for name in ("activation", "character_strategy", *(n for n, _ in BOOK_SETTINGS)):
        if getattr(book, name) != WorldBook.model_fields[name].default:
            out[name] = getattr(book, name)
    return out


def _entry_fields(entry: WorldBookEntry) -> dict[str, Any]:
    """The fields both formats share, in SillyTavern's native (camelCase) spelling."""
    out: dict[str, Any] = {
        "comment": entry.comment, "content": entry.content, "constant": entry.constant,
        "selective": entry.selective,
        "selectiveLogic": next(n for n, v in SELECTIVE_LOGIC_BY_NUMBER.items() if v == entry.selective_logic),
        "role": ROLES.index(entry.role), "outletName": entry.outlet_name, "probability": entry.probability,
        "useProbability": entry.use_probability, "group": entry.group, "groupOverride": entry.group_override,
        "groupWeight": entry.group_weight, "preventRecursion": entry.prevent_recursion,
        "excludeRecursion": entry.exclude_recursion, "delayUntilRecursion": entry.delay_until_recursion,
        "ignoreBudget": entry.ignore_budget, "vectorized": entry.vectorized, "automationId": entry.automation_id,
        "triggers": list(entry.triggers),
    }
    for spelled, name in _EXPORTED_AS_CAMEL_CASE:
        out[spelled] = getattr(entry, name)  # None is written as SillyTavern's null ("not set")
    if entry.character_filter is not None:
        out["characterFilter"] = copy.deepcopy(entry.character_filter)
    if entry.lore != "global":
        out["lore"] = entry.lore
    return out


# the entry fields written under their camelCase names as they are: the match_* flags, then the nullable settings
_EXPORTED_AS_CAMEL_CASE = tuple((camel_case(name), name) for name in (
    *(name for name, _default in _ENTRY_FLAGS if name.startswith("match_")),
    "depth", "use_group_scoring", "scan_depth", "case_sensitive", "match_whole_words", "sticky", "cooldown", "delay",
    "display_index"))


def _export_native_entry(entry: WorldBookEntry) -> dict[str, Any]:
    return {
        **copy.deepcopy(entry.other_fields), "uid": entry.uid, "key": list(entry.keys),
        "keysecondary": list(entry.secondary_keys), "order": entry.order,
        "position": WORLD_POSITION_NUMBER[entry.position], "disable": not entry.enabled, **_entry_fields(entry),
    }


def export_worldbook(book: WorldBook) -> dict[str, Any]:
    """WorldBook -> SillyTavern's native world book JSON `{"entries": {"<uid>": {...}}}`."""
    out = copy.deepcopy(book.other_fields)
    out.update(_book_settings_out(book))
    out["entries"] = {str(e.uid): _export_native_entry(e) for e in book.entries}
    return out


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _export_book_entry(entry: WorldBookEntry) -> dict[str, Any]:
    other = copy.deepcopy(entry.other_fields)
    kept_extensions = other.pop("extensions", {})
    shared = _entry_fields(entry)
    comment, content = shared.pop("comment"), shared.pop("content")
    constant, selective = shared.pop("constant"), shared.pop("selective")
    extensions = kept_extensions if isinstance(kept_extensions, dict) else {}
    # The card book's extensions use snake_case except these two, as SillyTavern writes them (§9.3).
    extensions.update({key if key in ("useProbability", "selectiveLogic") else _snake(key): value
                       for key, value in shared.items()})
    extensions["position"] = WORLD_POSITION_NUMBER[entry.position]
    return {
        **other, "id": entry.uid, "keys": list(entry.keys), "secondary_keys": list(entry.secondary_keys),
        "comment": comment, "content": content, "constant": constant, "selective": selective,
        "insertion_order": entry.order, "enabled": entry.enabled,
        "position": "before_char" if entry.position == "before" else "after_char", "extensions": extensions,
    }


def export_character_book(book: WorldBook) -> dict[str, Any]:
    """WorldBook -> a card's V2 `character_book` (entries list; SillyTavern's fields in each entry's extensions)."""
    out = copy.deepcopy(book.other_fields)
    out.update(_book_settings_out(book))
    out.setdefault("extensions", {})
    out["entries"] = [_export_book_entry(e) for e in book.entries]
    return out

