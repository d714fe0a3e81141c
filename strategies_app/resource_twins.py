"""Recognising a file already stored: an import whose content equals a stored resource's (the same card as PNG and
then as V3 JSON, the same preset twice) finds that resource, so the import can reuse it or keep both under distinct
names instead of making two rows nobody can tell apart. Content is compared after reading (the stored columns and
fields), never as bytes: a PNG card and its JSON are one card."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Count

from strategies_app.models import Character, Preset, TextTemplate, WorldBook

CANDIDATES_READ = 200  # a bound on the rows compared per import (same name or same entry count first)
ENTRY_COLUMNS = {
    "preset": ("position", "definition_index", "identifier", "name", "role", "content", "marker", "enabled",
               "in_order", "prompt_fields"),
    "worldbook": ("sort_order", "comment", "content", "enabled", "entry_fields"),
}
DUPLICATE_CHOICES = ("keep", "reuse")  # keep both (the new one under a distinct name), or reuse the stored one


def canonical(value: Any) -> str:
    """A JSON value as one string whatever its key order."""
    return _canonical(value)


def _canonical(value: Any) -> str:
    # Key order is not content: PostgreSQL's jsonb hands stored objects back with their keys reordered.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _entry_rows(kind: str, entries: list[dict[str, Any]]) -> list[str]:
    columns = ENTRY_COLUMNS[kind]
    return sorted(_canonical([entry.get(c) for c in columns]) for entry in entries)  # one text per entry


def character_twin(columns: dict[str, Any], card_fields: dict[str, Any]) -> Character | None:
    for row in Character.objects.filter(name=columns["name"]).order_by("pk")[:CANDIDATES_READ]:
        if row.card_fields == card_fields and all(getattr(row, c) == v for c, v in columns.items()):
            return row
    return None


def _entries_twin(model, kind: str, head: dict[str, Any], entries: list[dict[str, Any]]):
    wanted: list[str] | None = None  # written out once a stored row could be the twin
    rows = (model.objects.annotate(entry_count=Count("entries")).filter(entry_count=len(entries))
            .order_by("pk")[:CANDIDATES_READ])
    for row in rows:
        if any(getattr(row, field) != value for field, value in head.items()):
            continue
        if wanted is None:
            wanted = _entry_rows(kind, entries)
        stored = list(row.entries.values(*ENTRY_COLUMNS[kind]))
        if _entry_rows(kind, stored) == wanted:
            return row
    return None


def preset_twin(options: dict[str, Any], has_order: bool, entries: list[dict[str, Any]]) -> Preset | None:
    return _entries_twin(Preset, "preset", {"options": options, "has_prompt_order": has_order}, entries)


def worldbook_twin(settings: dict[str, Any], entries: list[dict[str, Any]]) -> WorldBook | None:
    return _entries_twin(WorldBook, "worldbook", {"settings": settings}, entries)


def text_template_twin(kind: str, fields: dict[str, Any]) -> TextTemplate | None:
    """A stored template of `kind` whose fields equal `fields` (its name aside: a renamed twin is still one)."""
    wanted = _canonical({k: v for k, v in fields.items() if k != "name"})
    for row in TextTemplate.objects.filter(kind=kind).order_by("pk")[:CANDIDATES_READ]:
        if _canonical({k: v for k, v in row.fields.items() if k != "name"}) == wanted:
            return row
    return None


def distinct_name(model, name: str, **among: Any) -> str:
    """`name`, or `name (2)`, `name (3)`, ... when a stored resource of the kind (`among`: of these column values)
    already has it."""
    taken = set(model.objects.filter(name__startswith=name, **among).values_list("name", flat=True)[:CANDIDATES_READ])
    if name not in taken:
        return name
    number = 2
    while f"{name} ({number})" in taken:
        number += 1
    return f"{name} ({number})"[:200]
