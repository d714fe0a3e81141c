"""SillyTavern's Advanced Formatting files <-> `TextTemplate` rows, and rows -> the request's text resources.

A file is a lone instruct / context / system-prompt / reasoning template or a "master export" holding several,
told apart by its keys as SillyTavern's master import does (`assembly.sillytavern.text_presets`). Each part is
stored as it was written (every key kept), so an export gives the file back field for field. Legacy instruct
templates (before SillyTavern 1.12.6) are stored as written too and read as SillyTavern migrates them
(`migrateInstructModeSettings`: `separator_sequence` is the output suffix, `names` / `names_force_groups` the names
behaviour; a `system_prompt` inside the template becomes a system prompt of its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from assembly.sillytavern.text_presets import read_text_presets

KINDS = ("instruct", "context", "sysprompt", "reasoning")
RESOURCE_OF_KIND = {"instruct": "instruct_template", "context": "context_template", "sysprompt": "system_prompt"}
# the fields of an instruct template that are sequences (what the studio marks in a prompt and lets designers edit)
SEQUENCE_FIELDS = ("input_sequence", "input_suffix", "output_sequence", "output_suffix", "system_sequence",
                   "system_suffix", "first_input_sequence", "last_input_sequence", "first_output_sequence",
                   "last_output_sequence", "last_system_sequence", "story_string_prefix", "story_string_suffix",
                   "stop_sequence")
CONTEXT_TEXT_FIELDS = ("story_string", "chat_start", "example_separator")
SYSPROMPT_TEXT_FIELDS = ("content", "post_history")
EDITABLE_FIELDS = {"instruct": SEQUENCE_FIELDS, "context": CONTEXT_TEXT_FIELDS, "sysprompt": SYSPROMPT_TEXT_FIELDS}


@dataclass
class TemplatePart:
    """One template of a file: its kind, its name and its fields as written, and what reading it noted."""

    kind: str
    name: str
    fields: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _legacy_notes(fields: dict[str, Any]) -> list[str]:
    notes = []
    if "separator_sequence" in fields:
        notes.append(_("legacy: separator_sequence is read as the output suffix"))
    if "names" in fields:
        notes.append(_("legacy: names / names_force_groups are read as the names behaviour"))
    return notes


def read_template_file(data: Any, *, fallback_name: str) -> list[TemplatePart]:
    """A master export or a lone template -> its parts (instruct, context, sysprompt, reasoning order). Refused
    (`IMPORT_INVALID` naming the field) when it is neither or a field the prompt reads has the wrong type."""
    read = read_text_presets(data)
    found = [("instruct", read.instruct_template), ("context", read.context_template),
             ("sysprompt", data.get("sysprompt") if isinstance(data.get("sysprompt"), dict) else
              (data if read.system_prompt is not None else None)),
             ("reasoning", read.reasoning)]
    parts = []
    for kind, fields in found:
        if fields is None:
            continue
        fields = dict(fields)
        name = fields.get("name") if isinstance(fields.get("name"), str) and fields.get("name").strip() else None
        part = TemplatePart(kind=kind, name=(name or fallback_name)[:200], fields=fields)
        if kind == "instruct":
            part.notes += _legacy_notes(fields)
            legacy_prompt = fields.get("system_prompt")
            if isinstance(legacy_prompt, str) and legacy_prompt and not any(p.kind == "sysprompt" for p in parts) \
                    and read.system_prompt is None:
                part.notes.append(_("legacy: the template's system_prompt becomes the system prompt “%(name)s”")
                                  % {"name": f"[Migrated] {part.name}"})
                parts.append(part)
                parts.append(TemplatePart(kind="sysprompt", name=f"[Migrated] {part.name}"[:200],
                                          fields={"name": f"[Migrated] {part.name}", "content": legacy_prompt,
                                                  "post_history": ""}))
                continue
        parts.append(part)
    return parts


def template_document(row) -> dict[str, Any]:
    """A stored template as SillyTavern's file: its fields as written, its (possibly new) name in place."""
    document = dict(row.fields)
    if "name" in document or row.name:
        document["name"] = row.name
    return document


def master_document(rows: dict[str, Any]) -> dict[str, Any]:
    """Several stored templates (kind -> row) as one master export, in SillyTavern's section order."""
    return {kind: template_document(rows[kind]) for kind in KINDS if rows.get(kind) is not None}


def instruct_resource(fields: dict[str, Any]) -> dict[str, Any]:
    """An instruct template's fields as the request's `instruct_template`, legacy keys read as SillyTavern's
    `migrateInstructModeSettings` reads them."""
    resource = {k: v for k, v in fields.items() if k not in ("system_prompt", "enabled")}
    if "separator_sequence" in resource:
        resource["output_suffix"] = resource.pop("separator_sequence") or ""
    if "names" in resource:
        names, force = resource.pop("names"), resource.pop("names_force_groups", True)
        resource["names_behavior"] = "always" if names else ("force" if force else "none")
    resource.pop("names_force_groups", None)
    return resource


def sysprompt_resource(fields: dict[str, Any]) -> dict[str, Any]:
    return {"name": str(fields.get("name", "")), "content": fields.get("content") or "",
            "post_history": fields.get("post_history") or ""}


def template_resource(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A template's fields as the text-completion request's resource of its kind."""
    if kind == "instruct":
        return instruct_resource(fields)
    if kind == "sysprompt":
        return sysprompt_resource(fields)
    return dict(fields)
