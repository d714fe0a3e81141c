"""SillyTavern files <-> the studio's resource rows.

Reading goes through the engine's importers (`assembly.sillytavern.*.import_*`), which validate strictly and raise
`ImportInvalid` naming the JSON path; the engine's exporters give the canonical SillyTavern JSON, which is split here
into the columns the studio edits and the rest (kept verbatim in a JSON field). The rows join back into the file they
came from, which the engine's importer reads once into its model; the exporter writes that model out, so what leaves
the studio is always a file the engine reads back equal (`import(export(x)) == x`).

Functions named `*_parts` turn an engine model into row values (no database access); functions named `*_model` give
the engine model of rows (what a preview assembles with); `*_document` give the SillyTavern JSON of rows (exports).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from assembly.reading import ImportInvalid
from assembly.sillytavern.card import export_character, import_character
from assembly.sillytavern.charx import card_from_charx, card_json_from_charx, is_charx
from assembly.sillytavern.models import Character, Persona, Preset, RegexScript, WorldBook
from assembly.sillytavern.png import card_png
from assembly.sillytavern.preset import export_preset, import_preset
from assembly.sillytavern.preset_secrets import strip_preset_secrets
from assembly.sillytavern.regex_file import SCRIPT_KEYS, import_regex_scripts
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.settings import import_settings
from assembly.sillytavern.vocabulary import PROMPT_ORDER_CHARACTER_ID
from assembly.sillytavern.worldbook import export_worldbook, import_worldbook
from strategies_app.text_templates import template_document
from studio import input_boundary
from studio.http import file_content
from studio.result_cache import kept_import

MAX_NAME_CHARS = 200

# ---------------------------------------------------------------------------------------------- reading files


def upload_content(raw: bytes, *, kind: str) -> Any:
    """Uploaded bytes -> what an importer takes: a CharX card's card.json (for a card or its book), else PNG bytes
    or parsed JSON as `studio.http.file_content` gives them."""
    if kind in ("character", "worldbook") and is_charx(raw):
        # the input rules first (the archive's limits checked on the way); what is not UTF-8 JSON at all, the
        # engine's reader words
        with contextlib.suppress(UnicodeDecodeError, json.JSONDecodeError):
            input_boundary.loads(card_json_from_charx(raw).decode("utf-8"), "file[card.json]")
        return card_from_charx(raw)
    return file_content(raw, kind=kind)


def read_preset(data: Any) -> Preset:
    """A chat-completion preset, a Prompt Manager export, or a SillyTavern settings.json (its `oai_settings`)."""
    if isinstance(data, dict) and "oai_settings" in data:
        preset = import_settings(data).preset
        assert preset is not None  # import_settings reads oai_settings whenever the key is there
        return preset
    return import_preset(data)


def read_character(data: Any) -> Character:
    """A card V2/V3 JSON object or PNG bytes."""
    return import_character(data)


def read_worldbook(data: Any) -> WorldBook:
    """A native world book, a card's `character_book`, or a card (JSON or PNG) that embeds one."""
    if isinstance(data, bytes | bytearray) or (isinstance(data, dict) and "entries" not in data
                                                and ("spec" in data or isinstance(data.get("data"), dict))):
        book = import_character(data).character_book
        if book is None:
            raise ImportInvalid("data.character_book", "a character card that embeds a world book")
        return book
    return import_worldbook(data)


def read_persona(data: Any) -> Persona:
    """A persona object {name, description, position, depth, role}, or a SillyTavern settings.json (power_user)."""
    if isinstance(data, dict) and ("power_user" in data or "oai_settings" in data):
        persona = import_settings(data).persona
        if persona is None:
            raise ImportInvalid("power_user", "the settings' power_user object with the persona description")
        return persona
    try:
        persona = normalize_resources({"persona": data}).persona
    except ImportInvalid as error:
        raise ImportInvalid(error.path.removeprefix("persona.").removeprefix("persona"), error.expected,
                            status=error.status) from None
    if persona is None:  # `null` normalizes to "no persona", which is not something to import
        raise ImportInvalid("", "a persona object {name, description, ...}")
    return persona


# ---------------------------------------------------------------------------------------------- settings.json

_SETTINGS_SECTIONS = ("oai_settings", "power_user", "extension_settings", "world_info_settings")


def is_settings_file(data: Any) -> bool:
    """SillyTavern's settings.json: one object of sections, of which each import takes its own part."""
    return isinstance(data, dict) and any(key in data for key in _SETTINGS_SECTIONS)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def settings_left_out(data: Any, *, taken: str) -> list[str]:
    """The notes of an import that takes one part of a settings.json (`taken`: preset, persona or regex): what
    else the file holds, each with where it goes in the studio. None for another file."""
    if not is_settings_file(data):
        return []
    power_user, extensions = _section(data, "power_user"), _section(data, "extension_settings")
    scripts = extensions.get("regex") if isinstance(extensions.get("regex"), list) else []
    global_variables = _section(_section(extensions, "variables"), "global")
    note_default = _section(extensions, "note").get("default")
    description = power_user.get("persona_description")
    notes = []
    if taken != "preset" and isinstance(data.get("oai_settings"), dict):
        notes.append(_("also in this settings file: the chat-completion preset (import the file as a preset)"))
    if taken != "persona" and isinstance(description, str) and description.strip():
        notes.append(_("also in this settings file: the persona description (import the file as a persona)"))
    if taken != "regex" and scripts:
        notes.append(ngettext(
            "also in this settings file: %(count)s global regex script (import the file as regex scripts)",
            "also in this settings file: %(count)s global regex scripts (import the file as regex scripts)",
            len(scripts)) % {"count": len(scripts)})
    if power_user.get("experimental_macro_engine") is True:
        notes.append(_("also in this settings file: Macros 2.0 switched on (a session's macro engine setting)"))
    if global_variables:
        notes.append(ngettext(
            "also in this settings file: %(count)s global macro variable (a session's global variables)",
            "also in this settings file: %(count)s global macro variables (a session's global variables)",
            len(global_variables)) % {"count": len(global_variables)})
    if isinstance(note_default, str) and note_default.strip():
        notes.append(_("also in this settings file: the author's note default (a session's author's note)"))
    if isinstance(data.get("world_info_settings"), dict):
        notes.append(_("also in this settings file: the world info scan settings (each world book keeps its own)"))
    return notes


def check_name(name: str, path: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise ImportInvalid(path, f"a non-blank name of at most {MAX_NAME_CHARS} characters")
    return name


# ---------------------------------------------------------------------------------------------- presets

_PROMPT_COLUMNS = ("identifier", "name", "role", "content", "marker")
# The studio's own record in a preset's options: which preset an edited preset is a revision of
# ({"of": first preset's pk, "from": the pk it was edited from, "number": n, "note": text}); never sent or exported.
PRESET_REVISION_KEY = "studio_revision"
_PROMPT_COLUMN_NULLS = {"name": "", "role": "system", "content": "", "marker": False}  # what null reads as


def preset_parts(preset: Preset) -> tuple[dict[str, Any], bool, list[dict[str, Any]]]:
    """Preset -> (options, has_prompt_order, one dict of PromptEntry values per prompt definition)."""
    exported = export_preset(preset)
    options = {k: v for k, v in exported.items() if k not in ("prompts", "prompt_order")}
    if preset.has_prompt_order:
        options["prompt_order"] = [order for order in exported["prompt_order"]
                                   if str(order["character_id"]) != str(PROMPT_ORDER_CHARACTER_ID)]
    order_index = {entry.identifier: (index, entry.enabled) for index, entry in enumerate(preset.prompt_order)}
    entries = []
    for definition_index, prompt in enumerate(exported["prompts"]):
        in_order = prompt["identifier"] in order_index
        position, enabled = order_index.get(prompt["identifier"], (len(order_index) + definition_index, False))
        # a column the file wrote as null is stored as the value it stands for, with a null beside it in
        # prompt_fields, so the export writes the null back (the columns are not nullable)
        nulls = {column: None for column in _PROMPT_COLUMNS if prompt[column] is None}
        entries.append({
            **{column: _PROMPT_COLUMN_NULLS.get(column) if column in nulls else prompt[column]
               for column in _PROMPT_COLUMNS},
            "position": position, "definition_index": definition_index, "in_order": in_order, "enabled": enabled,
            "prompt_fields": {**{k: v for k, v in prompt.items() if k not in _PROMPT_COLUMNS}, **nulls},
        })
    return options, preset.has_prompt_order, entries


def _written_null(entry, column: str) -> bool:
    """The file wrote this column as null and it still holds the value null stands for."""
    fields = entry.prompt_fields if isinstance(entry.prompt_fields, dict) else {}
    return column in fields and fields[column] is None and getattr(entry, column) == _PROMPT_COLUMN_NULLS.get(column)


def _preset_file(preset_row, entries) -> dict[str, Any]:
    """Preset row and its PromptEntry rows joined back into the preset file they were split from."""
    entries = list(entries)
    definitions = sorted(entries, key=lambda e: (e.definition_index, e.pk or 0))
    prompts = [{**e.prompt_fields, **{column: None if _written_null(e, column) else getattr(e, column)
                                      for column in _PROMPT_COLUMNS}} for e in definitions]
    ordered = sorted((e for e in entries if e.in_order), key=lambda e: (e.position, e.pk or 0))
    order = [{"identifier": e.identifier, "enabled": e.enabled} for e in ordered]
    document = {k: v for k, v in preset_row.options.items() if k not in ("prompt_order", PRESET_REVISION_KEY)}
    document["prompts"] = prompts
    # A bare prompt list (no prompt_order in the file) stays bare while the order still says what the list says.
    implied = [{"identifier": p["identifier"], "enabled": p.get("enabled", True)} for p in prompts]
    if preset_row.has_prompt_order or order != implied:
        document["prompt_order"] = [*preset_row.options.get("prompt_order", []),
                                    {"character_id": PROMPT_ORDER_CHARACTER_ID, "order": order}]
    return document


def preset_model(preset_row, entries) -> Preset:
    """Preset row and its PromptEntry rows -> the engine's Preset (read once per content: studio/result_cache.py)."""
    return kept_import(import_preset, _preset_file(preset_row, entries))


def preset_document(preset_row, entries) -> dict[str, Any]:
    """Preset row and its PromptEntry rows -> SillyTavern preset JSON (via the engine, so it reads back equal).
    Credentials are stripped again here: a preset stored before import stripped them must not export them."""
    return strip_preset_secrets(export_preset(preset_model(preset_row, entries)))[0]


# ---------------------------------------------------------------------------------------------- characters

CHARACTER_COLUMNS = ("name", "description", "personality", "scenario", "first_mes", "mes_example", "system_prompt",
                     "post_history_instructions", "creator_notes")


# card_fields' key for the card's own top level (its spec and the keys SillyTavern wrote beside `data`), so an
# export gives back the card as it came (a V3 card stays V3).
CARD_TOP_LEVEL = "_card"


def character_parts(character: Character) -> tuple[dict[str, Any], dict[str, Any]]:
    """Character -> (column values, card_fields)."""
    data = export_character(character)["data"]
    columns = {column: data[column] for column in CHARACTER_COLUMNS}
    columns["name"] = check_name(columns["name"], "data.name")
    fields = {k: v for k, v in data.items() if k not in CHARACTER_COLUMNS}
    fields[CARD_TOP_LEVEL] = {**character.card_fields, "spec": character.spec}
    return columns, fields


def character_model(row) -> Character:
    """Character row -> the engine's Character."""
    fields = dict(row.card_fields)
    top = fields.pop(CARD_TOP_LEVEL, None)
    top = top if isinstance(top, dict) else {}
    data = {**fields, **{column: getattr(row, column) for column in CHARACTER_COLUMNS}}
    spec = "chara_card_v3" if top.get("spec") == "chara_card_v3" else "chara_card_v2"
    return kept_import(import_character, {**top, "spec": spec, "spec_version": "3.0" if spec.endswith("v3") else "2.0",
                                          "data": data})


def character_document(row) -> dict[str, Any]:
    """Character row -> a V2 card JSON (`chara_card_v2`)."""
    return export_character(character_model(row))


def character_png(row) -> bytes:
    """The character as a PNG card: its avatar (or a plain image) carrying the V2 card."""
    return card_png(character_document(row), bytes(row.avatar) if row.avatar else None)


# ---------------------------------------------------------------------------------------------- world books

_ENTRY_COLUMNS = ("comment", "content")
_NOT_ENTRY_FIELDS = frozenset((*_ENTRY_COLUMNS, "disable"))  # an entry's columns, and `disable` (its `enabled`)


def null_role_uids(data: Any) -> set[str]:
    """uids of a native book's entries whose `role` is null (SillyTavern writes it for "no role"): the engine reads
    them as system, and the rows remember the null so the export gives it back."""
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return set()
    return {str(entry.get("uid", key)) for key, entry in entries.items()
            if isinstance(entry, dict) and "role" in entry and entry["role"] is None}


# Fields real files often leave out; the report says which defaults were used (nothing silently assumed).
_OFTEN_MISSING = ("scan_depth", "case_sensitive", "match_whole_words", "depth", "role", "order", "position")


def worldbook_defaulted(data: Any) -> list[str]:
    """One note per native book field left out of some entries: which entries took the default."""
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return []
    notes = []
    for name in _OFTEN_MISSING:
        missing = [str(key) for key, entry in entries.items() if isinstance(entry, dict) and name not in entry]
        if missing:
            shown = ", ".join(missing[:10])
            if len(missing) > 10:
                shown = _("%(shown)s and %(more)s more") % {"shown": shown, "more": len(missing) - 10}
            notes.append(_("defaulted: %(field)s missing in entries %(entries)s; the default was used")
                         % {"field": name, "entries": shown})
    return notes


def worldbook_parts(book: WorldBook, null_roles: set[str] = frozenset()) -> tuple[dict[str, Any],
                                                                                   list[dict[str, Any]]]:
    """WorldBook -> (settings, one dict of WorldBookEntry values per entry, in book order)."""
    exported = export_worldbook(book)
    settings = {k: v for k, v in exported.items() if k != "entries"}
    entries = []
    for index, entry in enumerate(exported["entries"].values()):
        entries.append({
            "sort_order": index, "comment": entry.get("comment", ""), "content": entry.get("content", ""),
            "enabled": not entry.get("disable", False),
            "entry_fields": {k: v for k, v in entry.items() if k not in _NOT_ENTRY_FIELDS},
        })
        if str(entry.get("uid")) in null_roles:
            entries[-1]["entry_fields"]["role"] = None
    return settings, entries


def worldbook_model(book_row, entries) -> WorldBook:
    """WorldBook row and its entries -> the engine's WorldBook."""
    native = {}
    for index, entry in enumerate(sorted(entries, key=lambda e: (e.sort_order, e.pk or 0))):
        uid = entry.entry_fields.get("uid", index)
        native[str(uid)] = {**entry.entry_fields, "comment": entry.comment, "content": entry.content,
                            "disable": not entry.enabled}
    return kept_import(import_worldbook, {**book_row.settings, "entries": native})


def worldbook_document(book_row, entries) -> dict[str, Any]:
    """WorldBook row and its entries -> SillyTavern's native world book JSON {"entries": {"<uid>": {...}}}."""
    entries = list(entries)
    document = export_worldbook(worldbook_model(book_row, entries))
    for entry in entries:
        uid = str(entry.entry_fields.get("uid"))
        if "role" in entry.entry_fields and entry.entry_fields["role"] is None and uid in document["entries"]:
            document["entries"][uid]["role"] = None
    return document


# ---------------------------------------------------------------------------------------------- personas

PERSONA_COLUMNS = ("name", "description", "position", "depth", "role")


def persona_parts(persona: Persona) -> dict[str, Any]:
    values = persona.model_dump()
    values["name"] = check_name(values["name"], "name")
    return {column: values[column] for column in PERSONA_COLUMNS}


def persona_model(row) -> Persona:
    """Persona row -> the engine's Persona."""
    return read_persona({column: getattr(row, column) for column in PERSONA_COLUMNS})


def persona_document(row) -> dict[str, Any]:
    return persona_model(row).model_dump()


# ---------------------------------------------------------------------------------------------- regex scripts

# file key -> column; the other keys stay in `script_fields`
REGEX_COLUMNS = {"scriptName": "name", "findRegex": "find_regex", "replaceString": "replace_string",
                 "placement": "placement", "disabled": "disabled", "promptOnly": "prompt_only",
                 "markdownOnly": "markdown_only"}


def read_regex_scripts(data: Any) -> list[dict[str, Any]]:
    """A regex script file (one script or a list), or a settings.json's global scripts (`extension_settings.regex`),
    each script checked by the engine's strict reader; the file's objects as they came."""
    if is_settings_file(data):
        where = "extension_settings.regex"
        scripts = _section(data, "extension_settings").get("regex")
        if not isinstance(scripts, list) or not scripts:
            raise ImportInvalid(where, "a settings file's global regex scripts (a list of at least one)")
        try:
            import_regex_scripts(scripts)
        except ImportInvalid as error:
            raise ImportInvalid(where + error.path, error.expected, status=error.status) from None
        return list(scripts)
    import_regex_scripts(data)
    return [data] if isinstance(data, dict) else list(data)


def regex_script_parts(raw: dict[str, Any]) -> dict[str, Any]:
    """One script object -> RegexScript row values (columns, and the rest in `script_fields`)."""
    script = import_regex_scripts(raw)[0]
    if len(script.script_name) > MAX_NAME_CHARS:  # kept as written (not stripped): the export gives it back
        raise ImportInvalid("scriptName", f"a name of at most {MAX_NAME_CHARS} characters")
    values = {"name": script.script_name,
              "find_regex": script.find_regex, "replace_string": script.replace_string,
              "placement": list(script.placement), "disabled": script.disabled,
              "prompt_only": script.prompt_only, "markdown_only": script.markdown_only}
    values["script_fields"] = {k: v for k, v in raw.items() if k not in REGEX_COLUMNS}
    return values


def regex_script_document(row) -> dict[str, Any]:
    """RegexScript row -> the script's SillyTavern JSON: the keys the file had, in SillyTavern's order, then any
    others; the columns always (they are what the studio edits)."""
    columns = {key: getattr(row, column) for key, column in REGEX_COLUMNS.items()}
    fields = row.script_fields
    document = {key: columns[key] if key in columns else fields[key]
                for key in SCRIPT_KEYS if key in columns or key in fields}
    document.update((k, v) for k, v in fields.items() if k not in document)
    return document


def regex_script_model(row) -> RegexScript:
    """RegexScript row -> the engine's RegexScript (what a preview runs)."""
    return import_regex_scripts(regex_script_document(row))[0]


def resource_document(kind: str, row) -> dict[str, Any]:
    """Any stored resource as its SillyTavern JSON (`kind`: preset, character, worldbook, persona, regex)."""
    if kind == "regex":
        return regex_script_document(row)
    if kind == "template":
        return template_document(row)
    if kind == "preset":
        return preset_document(row, row.entries.all())
    if kind == "character":
        return character_document(row)
    if kind == "worldbook":
        return worldbook_document(row, row.entries.all())
    return persona_document(row)
