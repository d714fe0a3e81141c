"""SillyTavern's settings.json: the resources it defines."""

from __future__ import annotations

from typing import Any

from assembly.reading import Reader, guarded, read_object
from assembly.sillytavern.models import Resources, WorldBook
from assembly.sillytavern.notes import parse_author_note, parse_persona
from assembly.sillytavern.preset import parse_preset
from assembly.sillytavern.resource_set import parse_global_variables
from assembly.sillytavern.worldbook import book_settings


def import_settings(data: dict[str, Any]) -> Resources:
    """SillyTavern's settings.json -> the resources it defines: the preset (`oai_settings`), the world info scan
    settings (a world book with no entries), the persona (`power_user`) and the author's note defaults."""

    def read() -> Resources:
        settings = read_object(data, "", "a SillyTavern settings object")
        fields: dict[str, Any] = {}
        if "oai_settings" in settings:
            fields["preset"] = parse_preset(settings["oai_settings"], "oai_settings")
        if "world_info_settings" in settings:
            wi = read_object(settings["world_info_settings"], "world_info_settings")
            reader = Reader(wi, "world_info_settings")
            fields["worldbook"] = WorldBook(**{k: v for k, v in book_settings(reader).items() if k != "name"})
        power_user = settings.get("power_user")
        if power_user is not None:
            pu = read_object(power_user, "power_user")
            if "experimental_macro_engine" in pu:  # Macros 2.0 on: the v2 engine
                fields["macro_engine"] = "v2" if pu["experimental_macro_engine"] is True else "legacy"
            persona = {k: pu[k] for k in ("persona_description", "persona_description_position",
                                          "persona_description_depth", "persona_description_role") if k in pu}
            if "username" in settings:
                persona["name"] = settings["username"]
            fields["persona"] = parse_persona(persona, "power_user")
        variables = (settings.get("extension_settings") or {}).get("variables") \
            if isinstance(settings.get("extension_settings"), dict) else None
        if isinstance(variables, dict) and isinstance(variables.get("global"), dict) and variables["global"]:
            fields["global_variables"] = parse_global_variables(variables["global"], "extension_settings.variables.global")
        note = settings.get("extension_settings", {})
        if isinstance(note, dict) and isinstance(note.get("note"), dict):
            defaults = note["note"]
            fields["author_note"] = parse_author_note(
                {k: v for k, v in (("content", defaults.get("default")), ("position", defaults.get("defaultPosition")),
                                   ("depth", defaults.get("defaultDepth")), ("role", defaults.get("defaultRole")),
                                   ("interval", defaults.get("defaultInterval"))) if v is not None},
                "extension_settings.note",
            )
        return Resources(**fields)

    return guarded(read)
