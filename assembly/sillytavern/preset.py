"""SillyTavern's chat-completion preset (sillytavern.md §2): read, with what SillyTavern fills in, and written back.

Where SillyTavern itself fills something in (the prompt order of a preset that has none for character 100001, the
built-in prompt definitions it re-adds, `role: null` meaning system), we do the same.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from assembly.reading import (
    MISSING,
    REQUIRED,
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
    spellings,
    whole_number,
)
from assembly.sillytavern.models import Preset, Prompt, PromptOrderEntry, PromptOrderList
from assembly.sillytavern.vocabulary import (
    BUILTIN_PROMPTS,
    DEFAULT_PROMPT_ORDER,
    PROMPT_ORDER_CHARACTER_ID,
    UTILITY_PROMPT_DEFAULTS,
    read_generation_types,
)


@dataclass(slots=True)
class _PromptShape:
    """What a prompt's keys (and its `st` extras' keys) say before any value is read: each field it gives with the one
    key to read it from (None: spelled twice or in `st`, read through the Reader), those keys, its other fields in
    reading order, and the fields SillyTavern may write as null."""

    keys: dict[str, str | None]
    direct: frozenset[str]
    steps: tuple[tuple[str, str | None, tuple[str, ...], Any, Any, type], ...]
    nullable: tuple[str, ...]


def _prompt_shape(keys: tuple[str, ...], st_keys: tuple[str, ...]) -> _PromptShape:
    fields = field_keys(keys, st_keys, _PROMPT_FIELD_OF)
    steps = tuple((name, fields[name], spelled, read, default, as_is)
                  for name, spelled, read, default, as_is in _PROMPT_FIELDS if name in fields)
    return _PromptShape(fields, frozenset(key for key in fields.values() if key is not None), steps,
                        tuple(key for key in _NULLABLE_ON_EXPORT if key in keys))


# A prompt's shape by its keys and its `st` extras' keys: a preset's prompts share a few, each worked out once.
_PromptShapes = dict[tuple[tuple[str, ...], tuple[str, ...]], _PromptShape]


def _prompt(value: Any, path: str, coerced: list[str], shapes: _PromptShapes) -> dict[str, Any]:
    """One prompt's fields, each read and checked (the preset's prompts are validated in one call); only the fields
    it gives are read (a field it leaves out takes the model's default)."""
    data = read_object(value, path, "a prompt object")
    st_extras = data.get("st")  # the DSH adapter's {"st": {injection_order, forbid_overrides}} (reference A.12)
    fallback = Reader(read_object(st_extras, join_path(path, "st")), join_path(path, "st")) if st_extras is not None else None
    shape_key = (tuple(data), tuple(fallback.data) if fallback is not None else ())
    shape = shapes.get(shape_key)
    if shape is None:
        shape = shapes[shape_key] = _prompt_shape(*shape_key)
    r = Reader(data, path, fallback, shape.direct)
    keys = shape.keys
    identifier = read_text(*r.value(("identifier",), keys.get("identifier")), default=REQUIRED)
    if not identifier:
        raise ImportInvalid(join_path(path, "identifier"), "a non-empty identifier")
    fields: dict[str, Any] = {"identifier": identifier}
    if "injection_trigger" in keys:
        fields["injection_trigger"] = read_generation_types(
            *r.value(_PROMPT_KEYS["injection_trigger"], keys["injection_trigger"]))
    if "injection_position" in keys:
        fields["injection_position"] = read_named(
            *r.value(_PROMPT_KEYS["injection_position"], keys["injection_position"]), 0,
            names={"relative": 0, "in_chat": 1, "absolute": 1}, numbers={0: 0, 1: 1},
            expected="0 (relative) or 1 (in-chat)")
    if "role" in keys:
        role_value, role_path = r.value(("role",), keys["role"])
        if role_value == "":  # SillyTavern reads a falsy role as system
            role_value = None
            coerced.append(f"{role_path}: an empty role, read as system")
        fields["role"] = read_role(role_value, role_path)
    for name, key, spelled, read, default, as_is in shape.steps:
        if key is None:
            fields[name] = read(*r.read(spelled), default)
        else:  # a value of the type its reader takes as it is needs no call (nor a path)
            value = data[key]
            fields[name] = value if type(value) is as_is else read(value, f"{path}.{key}", default)
    # a field written as null reads as its default and is written back as null (see _export_prompt)
    other = r.leftovers("st")
    for key in shape.nullable:
        if data[key] is None:
            other[key] = None
    fields["other_fields"] = other
    return fields


# a prompt's other fields read alike: (name, its spellings, reader, default, the type the reader takes as it is);
# any depth is kept: SillyTavern injects in-chat prompts at depths 0..MAX_INJECTION_DEPTH only, and never reads a
# relative prompt's depth
_PROMPT_FIELDS: tuple[tuple[str, tuple[str, ...], Any, Any, type], ...] = tuple(
    (name, spellings(name, ()), read, default, as_is) for name, read, default, as_is in (
        ("name", read_text, "", str), ("content", read_text, "", str), ("enabled", read_flag, True, bool),
        ("marker", read_flag, False, bool), ("system_prompt", read_flag, False, bool),
        ("injection_depth", read_integer, 4, int), ("injection_order", read_integer, 100, int),
        ("forbid_overrides", read_flag, False, bool)))
_PROMPT_KEYS: dict[str, tuple[str, ...]] = {
    name: spellings(name, ()) for name in ("identifier", "injection_trigger", "injection_position", "role",
                                           *(field[0] for field in _PROMPT_FIELDS))}
_PROMPT_FIELD_OF: dict[str, str] = {key: name for name, keys in _PROMPT_KEYS.items() for key in keys}


def _order_entries(value: Any, path: str) -> tuple[PromptOrderEntry, ...]:
    if not isinstance(value, list):
        raise invalid(path, "a list of {identifier, enabled}", value)
    entries = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        # two fields, each in one spelling (the item's path is spelled out for a refusal only)
        if type(item) is not dict or not _ORDER_ENTRY_KEYS.issuperset(item):
            item = read_object(item, join_path(path, index), "an {identifier, enabled} object")
        identifier, enabled = item.get("identifier", MISSING), item.get("enabled", MISSING)
        if type(identifier) is not str:
            identifier = read_text(identifier, join_path(join_path(path, index), "identifier"), default=REQUIRED)
        if type(enabled) is not bool:
            where = join_path(path, index)
            if enabled is MISSING or enabled is None:
                raise ImportInvalid(join_path(where, "enabled"), "true or false (required)")
            enabled = read_flag(enabled, join_path(where, "enabled"), False)
        for key in item if len(item) > 2 else ():
            if key not in _ORDER_ENTRY_KEYS:
                raise ImportInvalid(join_path(join_path(path, index), str(key)), "one of the fields identifier, enabled")
        if identifier in seen:
            raise invalid(join_path(join_path(path, index), "identifier"), "an identifier listed once in this order",
                          identifier)
        seen.add(identifier)
        entries.append({"identifier": identifier, "enabled": enabled})
    return _ORDER.validate_python(entries)


_ORDER_ENTRY_KEYS = frozenset(("identifier", "enabled"))
# the prompts and an order's entries, each list validated in one call (their fields are read and checked first)
_PROMPTS = TypeAdapter(tuple[Prompt, ...])
_ORDER = TypeAdapter(tuple[PromptOrderEntry, ...])


def _character_id(value: Any, path: str) -> int | str:
    number = whole_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value:
        return value
    raise invalid(path, "a character id (integer or string)", value)


def _prompt_orders(
    value: Any, path: str
) -> tuple[tuple[PromptOrderEntry, ...] | None, str, tuple[PromptOrderList, ...]]:
    """prompt_order -> (the order for character 100001 or None, that order's path, the other characters' orders)."""
    if not isinstance(value, list):
        raise invalid(path, "a list of {character_id, order}", value)
    if value and all(isinstance(item, dict) and "identifier" in item for item in value):
        return _order_entries(value, path), path, ()  # a prompt export's flat order (sillytavern.md §2.7)
    chosen: tuple[PromptOrderEntry, ...] | None = None
    chosen_path = path
    others: list[PromptOrderList] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = join_path(path, index)
        r = Reader(read_object(item, where, "a {character_id, order} object"), where)
        raw_id, id_path = r.read(_CHARACTER_ID_KEYS)
        if raw_id is MISSING or raw_id is None:
            raise ImportInvalid(id_path, "a character id (required)")
        character_id = _character_id(raw_id, id_path)
        order_value, order_path = r.get("order")
        order = _order_entries([] if order_value is MISSING or order_value is None else order_value, order_path)
        r.reject_leftovers(("character_id", "order"))
        if str(character_id) in seen:
            raise invalid(id_path, "a character id listed once", raw_id)
        seen.add(str(character_id))
        if str(character_id) == str(PROMPT_ORDER_CHARACTER_ID):
            chosen, chosen_path = order, order_path
        else:
            others.append(PromptOrderList(character_id=character_id, order=order))
    return chosen, chosen_path, tuple(others)


_CHARACTER_ID_KEYS, _PROMPT_ORDER_KEYS = spellings("character_id", ()), spellings("prompt_order", ())
_PRESET_TEXT_OPTIONS = (*UTILITY_PROMPT_DEFAULTS, "continue_postfix", "assistant_prefill", "assistant_impersonation")
_OPTION_KEYS: dict[str, tuple[str, ...]] = {
    key: spellings(key, ()) for key in (*_PRESET_TEXT_OPTIONS, "squash_system_messages", "continue_prefill",
                                        "openai_max_context", "openai_max_tokens", "names_behavior")}
_OPTION_OF: dict[str, str] = {spelling: key for key, keys in _OPTION_KEYS.items() for spelling in keys}
_UTILITY_KEYS = frozenset(key for name in UTILITY_PROMPT_DEFAULTS for key in (name, camel_case(name)))


def parse_preset(value: Any, path: str) -> Preset:
    data = read_object(value, path, "a preset object")
    if "prompts" not in data and "prompt_order" not in data and isinstance(data.get("data"), dict):
        # A Prompt Manager export {"version", "type", "data": {"prompts", "prompt_order"}} (sillytavern.md §2.7).
        wrapper = Reader(data, path)
        wrapper.get("data")
        wrapper.get("version")
        wrapper.get("type")
        wrapper.reject_leftovers(("version", "type", "data"))
        return parse_preset(data["data"], join_path(path, "data"))
    r = Reader(data, path)
    prompts_value, prompts_path = r.get("prompts")
    order_value, order_path = r.read(_PROMPT_ORDER_KEYS)
    if prompts_value is MISSING and order_value is MISSING:
        raise ImportInvalid(prompts_path, "a list of prompts (a preset has `prompts` or `prompt_order`)")
    if prompts_value is MISSING or prompts_value is None:
        prompts_value = []
    if not isinstance(prompts_value, list):
        raise invalid(prompts_path, "a list of prompts", prompts_value)
    coerced: list[str] = []
    read: list[dict[str, Any]] = []
    seen: set[str] = set()
    shapes: _PromptShapes = {}
    for index, item in enumerate(prompts_value):
        fields = _prompt(item, join_path(prompts_path, index), coerced, shapes)
        identifier = fields["identifier"]
        if identifier in seen:  # SillyTavern finds a prompt by identifier: the first one wins
            coerced.append(f"{join_path(join_path(prompts_path, index), 'identifier')}: {identifier!r} is "
                           "defined earlier in the list; this later definition is not used, as in SillyTavern")
            continue
        seen.add(identifier)
        read.append(fields)
    prompts = list(_PROMPTS.validate_python(read))

    has_order = order_value is not MISSING and order_value is not None
    others: tuple[PromptOrderList, ...] = ()
    if has_order:
        chosen, chosen_path, others = _prompt_orders(order_value, order_path)
        # SillyTavern re-adds missing built-in definitions and uses its default order when 100001 has none.
        prompts += [Prompt(**b) for b in BUILTIN_PROMPTS if b["identifier"] not in seen]
        order = chosen or tuple(PromptOrderEntry(identifier=i, enabled=e) for i, e in DEFAULT_PROMPT_ORDER)
        known = {p.identifier for p in prompts}
        for index, entry in enumerate(order):
            if entry.identifier not in known:
                raise invalid(join_path(join_path(chosen_path, index), "identifier"),
                               "the identifier of a prompt defined in `prompts`", entry.identifier)
    else:
        order = tuple(PromptOrderEntry(identifier=p.identifier, enabled=p.enabled) for p in prompts)

    options: dict[str, Any] = {}
    given = {_OPTION_OF.get(key) for key in data}  # the options the preset gives, in one pass over its keys
    for key in _PRESET_TEXT_OPTIONS:
        if key not in given:
            continue
        text = read_text(*r.read(_OPTION_KEYS[key]), default=MISSING)
        if text is not MISSING:
            options[key] = text
    has_utility = not _UTILITY_KEYS.isdisjoint(data)
    for key in ("squash_system_messages", "continue_prefill"):
        if key not in given:
            continue
        flag = read_flag(*r.read(_OPTION_KEYS[key]), MISSING)
        if flag is not MISSING:
            options[key] = flag
    for key in ("openai_max_context", "openai_max_tokens"):
        if key not in given:
            continue
        number = read_integer(*r.read(_OPTION_KEYS[key]), MISSING, minimum=0)
        if number is not MISSING:
            options[key] = number
    names = read_integer(*r.read(_OPTION_KEYS["names_behavior"]), MISSING, minimum=-1, maximum=2) if (
        "names_behavior" in given) else MISSING
    if names is not MISSING:
        options["names_behavior"] = names
    return Preset(
        prompts=tuple(prompts), prompt_order=order, has_prompt_order=has_order, other_prompt_orders=others,
        has_utility_prompts=has_utility, other_fields=r.leftovers(), coerced=tuple(coerced), **options,
    )


def import_preset(data: dict[str, Any]) -> Preset:
    """A SillyTavern chat-completion preset (current or 1.12-era), a Prompt Manager export, or engine.md's
    simplified `{"prompts": [...]}` -> Preset."""
    return guarded(lambda: parse_preset(data, ""))


# Prompt fields SillyTavern files sometimes carry as null (read as the default).
_NULLABLE_ON_EXPORT = ("name", "role", "content", "enabled", "marker", "system_prompt", "injection_position",
                       "injection_depth", "injection_order", "injection_trigger", "forbid_overrides")
_PROMPT_DEFAULTS = {k: (list(d) if isinstance(d := Prompt.model_fields[k].default, tuple) else d)
                    for k in _NULLABLE_ON_EXPORT}


def _export_prompt(prompt: Prompt) -> dict[str, Any]:
    written = _prompt_fields(prompt)
    for key, value in prompt.other_fields.items():  # a null as written, while the value it stood for is unchanged
        if value is None and key in written and written[key] == _PROMPT_DEFAULTS.get(key, ...):
            written[key] = None
    return written


def _prompt_fields(prompt: Prompt) -> dict[str, Any]:
    return {
        **copy.deepcopy(prompt.other_fields),
        "identifier": prompt.identifier, "name": prompt.name, "role": prompt.role, "content": prompt.content,
        "system_prompt": prompt.system_prompt, "marker": prompt.marker, "enabled": prompt.enabled,
        "injection_position": prompt.injection_position, "injection_depth": prompt.injection_depth,
        "injection_order": prompt.injection_order, "injection_trigger": list(prompt.injection_trigger),
        "forbid_overrides": prompt.forbid_overrides,
    }


def export_preset(preset: Preset) -> dict[str, Any]:
    """Preset -> SillyTavern preset JSON (the keys it did not model come back as they were)."""
    out = copy.deepcopy(preset.other_fields)
    out["prompts"] = [_export_prompt(p) for p in preset.prompts]
    if preset.has_prompt_order:
        out["prompt_order"] = [
            {"character_id": lst.character_id, "order": [e.model_dump() for e in lst.order]}
            for lst in preset.other_prompt_orders
        ] + [{"character_id": PROMPT_ORDER_CHARACTER_ID, "order": [e.model_dump() for e in preset.prompt_order]}]
    if preset.has_utility_prompts:
        out.update({key: getattr(preset, key) for key in UTILITY_PROMPT_DEFAULTS})
    for key in ("names_behavior", "squash_system_messages", "continue_prefill", "continue_postfix",
                "assistant_prefill", "assistant_impersonation", "openai_max_context", "openai_max_tokens"):
        out[key] = getattr(preset, key)
    return out

