"""Every write to strategies and resources: plain functions with keyword-only arguments, one transaction each.

Views and management commands call these; they decide nothing themselves. Bad input raises before anything is
written (the engine's `StrategyError` / `ImportInvalid`, or `ServiceError`), and the transaction makes a failure half
way store nothing. Permission checks happen before a service is called (`strategies_app.access`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from assembly import assemble
from assembly.layout import with_block_move
from assembly.positions import position_rows
from assembly.strategy import (
    CONTEXT_CONTROL_KINDS,
    DEFAULT_BUILTIN_ID,
    DEFAULT_PRIORITY,
    TEXT_RULE_KINDS,
    get_builtin_strategy,
    normalize_strategy,
    strategy_revision,
    with_context_control_rows,
)
from strategies_app import sillytavern
from strategies_app.models import (
    Character,
    Persona,
    Preset,
    PromptEntry,
    Strategy,
    StrategyRevision,
    WorldBook,
    WorldBookEntry,
)
from studio.errors import ServiceError

SLUG_MAX = 80


@dataclass
class ImportReport:
    """What an import created (or, for a dry run, would create)."""

    kind: str
    name: str
    dry_run: bool
    creates: dict[str, int]
    items: list[str] = field(default_factory=list)
    id: int | str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "kind": self.kind, "dry_run": self.dry_run, "id": self.id, "name": self.name,
                "creates": self.creates, "items": self.items, "notes": self.notes}


# ---------------------------------------------------------------------------------------------- strategies


def _free_slug(wanted: str) -> str:
    base = (slugify(wanted) or "strategy")[:SLUG_MAX - 4].strip("-") or "strategy"
    slug, number = base, 2
    while Strategy.objects.filter(slug=slug).exists():
        slug, number = f"{base}-{number}", number + 1
    return slug


def _named(document: dict[str, Any], name: str | None) -> dict[str, Any]:
    return normalize_strategy({**document, "name": name} if name is not None else document)


def _save_revision(strategy: Strategy, *, user, note: str) -> tuple[StrategyRevision, bool]:
    revision = strategy_revision(strategy.draft)
    return StrategyRevision.objects.get_or_create(
        strategy=strategy, revision=revision,
        defaults={"document": strategy.draft, "author": user, "note": note[:500]})


@transaction.atomic
def strategy_create(*, user, name: str, document: dict[str, Any] | None = None) -> Strategy:
    """A new strategy owned by `user`; its draft is `document` (default: the default built-in's rules)."""
    source = document if document is not None else {k: v for k, v in get_builtin_strategy(DEFAULT_BUILTIN_ID).items()
                                                    if k != "id"}
    draft = _named(source, name)
    return Strategy.objects.create(slug=_free_slug(draft["name"]), name=draft["name"], owner=user, draft=draft)


@transaction.atomic
def strategy_copy(*, user, source: Strategy, name: str | None = None) -> Strategy:
    """A copy of `source`'s draft owned by `user` (how a built-in becomes editable)."""
    wanted = name if name is not None else f"{source.name} (copy)"[:200]
    draft = _named(source.draft, wanted)
    slug = _free_slug(draft["name"] if name is not None else source.slug + "-copy")
    return Strategy.objects.create(slug=slug, name=draft["name"], owner=user, draft=draft)


@transaction.atomic
def strategy_import(*, user, document: Any, dry_run: bool = False) -> ImportReport:
    """An A.2 document -> a new strategy with that draft and a first revision. The document's `id` is used as the
    slug when it is free; otherwise a free one is made from it (the report says so)."""
    draft = normalize_strategy(document)
    wanted = document.get("id") if isinstance(document.get("id"), str) else draft["name"]
    slug = _free_slug(wanted)
    notes = [] if slug == wanted else [f"id {wanted!r} is taken or not a slug; the strategy is stored as {slug!r}"]
    report = ImportReport(kind="strategy", name=draft["name"], dry_run=dry_run, id=slug, notes=notes,
                          creates={"strategy": 1, "revision": 1},
                          items=[f"{rule['id']} ({rule['kind']})" for rule in draft["rules"]])
    if dry_run:
        return report
    strategy = Strategy.objects.create(slug=slug, name=draft["name"], owner=user, draft=draft)
    _save_revision(strategy, user=user, note="imported")
    return report


@transaction.atomic
def draft_update(*, strategy: Strategy, user, document: Any, expected_version: int) -> Strategy:
    """Replace the working draft if nobody changed it since `expected_version`; a stale version is a 409 carrying
    the fresh state, and nothing is written."""
    locked = Strategy.objects.select_for_update().get(pk=strategy.pk)
    if locked.builtin:
        raise ServiceError("STRATEGY_READ_ONLY", f"strategy {locked.slug!r} is a built-in: copy it to edit",
                           status=409, detail={"id": locked.slug})
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise ServiceError("INPUT_INVALID", "version: expected the integer version the edit started from",
                           detail={"path": "version"})
    if locked.version != expected_version:
        raise _stale(locked, expected_version)
    draft = normalize_strategy(document)
    # The conditional update is the real guard: it holds on databases where select_for_update does not lock.
    changed = Strategy.objects.filter(pk=locked.pk, version=expected_version).update(
        draft=draft, name=draft["name"], version=F("version") + 1, updated_at=timezone.now())
    if not changed:
        raise _stale(Strategy.objects.get(pk=locked.pk), expected_version)
    return Strategy.objects.get(pk=locked.pk)


def _stale(current: Strategy, expected_version: int) -> ServiceError:
    return ServiceError(
        "STRATEGY_VERSION_CONFLICT",
        f"version: the draft of {current.slug!r} is at version {current.version}, the edit started from "
        f"{expected_version}; reload and edit again", status=409,
        detail={"path": "version", "id": current.slug, "version": current.version, "draft": current.draft})


@transaction.atomic
def revision_save(*, strategy: Strategy, user, note: str = "") -> tuple[StrategyRevision, bool]:
    """Save the current draft as an immutable revision; saving an unchanged draft again returns the existing one."""
    locked = Strategy.objects.select_for_update().get(pk=strategy.pk)
    if locked.builtin:
        raise ServiceError("STRATEGY_READ_ONLY", f"strategy {locked.slug!r} is a built-in: copy it to edit",
                           status=409, detail={"id": locked.slug})
    return _save_revision(locked, user=user, note=note)


# ---------------------------------------------------------------------------------------------- resources


@transaction.atomic
def preset_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A preset file (or a settings.json's preset). Preset files carry no name: `name` (the file name) gives it."""
    preset = sillytavern.read_preset(data)
    name = sillytavern.check_name(name or "Imported preset", "name")
    options, has_order, entries = sillytavern.preset_parts(preset)
    report = ImportReport(kind="preset", name=name, dry_run=dry_run,
                          creates={"preset": 1, "prompt_entries": len(entries)},
                          items=[e["name"] or e["identifier"] for e in sorted(entries, key=lambda e: e["position"])])
    if dry_run:
        return report
    row = Preset.objects.create(name=name, owner=user, options=options, has_prompt_order=has_order)
    PromptEntry.objects.bulk_create(PromptEntry(preset=row, **values) for values in entries)
    report.id = row.pk
    return report


@transaction.atomic
def character_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A card (JSON or PNG bytes). A PNG is kept as the avatar; an embedded world book stays part of the card.
    The card's own name is used; `name` is accepted for a uniform signature and ignored."""
    character = sillytavern.read_character(data)
    columns, card_fields = sillytavern.character_parts(character)
    book = character.character_book
    report = ImportReport(kind="character", name=columns["name"], dry_run=dry_run,
                          creates={"character": 1, "avatar": int(isinstance(data, bytes | bytearray))},
                          items=[c for c in sillytavern.CHARACTER_COLUMNS if columns[c]])
    if book is not None:
        report.notes.append(f"the card embeds a world book of {len(book.entries)} entries; import the card as a "
                            "world book to use it on its own")
    if dry_run:
        return report
    avatar = bytes(data) if isinstance(data, bytes | bytearray) else None
    row = Character.objects.create(owner=user, card_fields=card_fields, avatar=avatar, **columns)
    report.id = row.pk
    return report


@transaction.atomic
def worldbook_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A native world book, a card book, or a card that embeds one; named by the book, else by `name`."""
    book = sillytavern.read_worldbook(data)
    name = sillytavern.check_name(book.name or name or "Imported world book", "name")
    settings, entries = sillytavern.worldbook_parts(book)
    report = ImportReport(kind="worldbook", name=name, dry_run=dry_run,
                          creates={"worldbook": 1, "entries": len(entries)},
                          items=[e["comment"] or str(e["entry_fields"].get("uid")) for e in entries])
    if dry_run:
        return report
    row = WorldBook.objects.create(name=name, owner=user, settings=settings)
    WorldBookEntry.objects.bulk_create(WorldBookEntry(book=row, **values) for values in entries)
    report.id = row.pk
    return report


@transaction.atomic
def persona_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A persona object or a settings.json; the persona's own name is used (`name` is ignored)."""
    values = sillytavern.persona_parts(sillytavern.read_persona(data))
    report = ImportReport(kind="persona", name=values["name"], dry_run=dry_run, creates={"persona": 1},
                          items=[values["name"]])
    if dry_run:
        return report
    report.id = Persona.objects.create(owner=user, **values).pk
    return report


IMPORTERS = {"preset": preset_import, "character": character_import, "worldbook": worldbook_import,
             "persona": persona_import}


# ---------------------------------------------------------------------------------------------- editor edits
# The strategy editor's writes (web.md screen 2). Each one locks the row, refuses a built-in or a stale `version`
# (409 with the fresh draft), computes the new document from the stored draft, and writes it through
# `draft_update`, all in one transaction. A refused edit raises before anything is written.

RULE_FIELDS = ("enabled", "role", "delivery", "lifetime", "depth", "name", "text")


def _draft_for_edit(strategy: Strategy, expected_version: Any) -> Strategy:
    locked = Strategy.objects.select_for_update().get(pk=strategy.pk)
    if locked.builtin:
        raise ServiceError("STRATEGY_READ_ONLY", f"strategy {locked.slug!r} is a built-in: copy it to edit",
                           status=409, detail={"id": locked.slug})
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise ServiceError("INPUT_INVALID", "version: expected the integer version the edit started from",
                           detail={"path": "version"})
    if locked.version != expected_version:
        raise _stale(locked, expected_version)
    return locked


def _refused(current: Strategy, code: str, message: str, **detail: Any) -> ServiceError:
    """A 409 that carries the fresh state, like a stale version does."""
    return ServiceError(code, message, status=409,
                        detail={"id": current.slug, "version": current.version, "draft": current.draft, **detail})


def _commit(locked: Strategy, user, document: dict[str, Any], expected_version: int) -> Strategy:
    return draft_update(strategy=locked, user=user, document=document, expected_version=expected_version)


def _check_order(current: Strategy, order: Any, ids: list[str], what: str) -> list[str]:
    """`order` must name every current id exactly once; anything else is refused with what was wrong."""
    if not isinstance(order, list | tuple) or not all(isinstance(item, str) for item in order):
        raise ServiceError("INPUT_INVALID", "order: expected a list of ids", detail={"path": "order"})
    unknown = [item for item in dict.fromkeys(order) if item not in ids]
    missing = [item for item in ids if item not in order]
    repeated = sorted({item for item in order if order.count(item) > 1})
    if unknown or missing or repeated:
        problems = [f"{label} {', '.join(items)}" for label, items in
                    (("unknown:", unknown), ("missing:", missing), ("repeated:", repeated)) if items]
        raise _refused(current, "ORDER_NOT_PERMUTATION",
                       f"order: expected each of the {len(ids)} current {what} exactly once ({'; '.join(problems)})",
                       path="order", unknown=unknown, missing=missing, repeated=repeated)
    return list(order)


def _kept_in_place(current: list[str], order: list[str], locked: set[str], hint: str | None) -> set[str]:
    """The largest set of rows whose relative order the new `order` keeps, preferring to keep locked rows (they
    weigh more than all others together) and to count the `hint` row (the one the user dragged) as the mover.
    Every other row is one the user moved."""
    index = {row: position for position, row in enumerate(current)}
    heavy = len(order) * 2 + 1

    def weight(row: str) -> int:
        if row in locked:
            return heavy - 1 if row == hint else heavy  # a refusal then names the row that was moved
        return 1 if row == hint else 2

    best: list[int] = []
    previous: list[int] = []
    for i, row in enumerate(order):
        best.append(weight(row))
        previous.append(-1)
        for j in range(i):
            if index[order[j]] < index[row] and best[j] + weight(row) > best[i]:
                best[i], previous[i] = best[j] + weight(row), j
    kept: set[str] = set()
    i = max(range(len(order)), key=lambda k: best[k], default=-1)
    while i != -1:
        kept.add(order[i])
        i = previous[i]
    return kept


@transaction.atomic
def rules_reorder(*, strategy: Strategy, user, order: Any, expected_version: Any) -> Strategy:
    """Put the draggable rules (every rule but the runtime-context controls, which are switches) in `order`; the
    controls keep their places in the stored list."""
    locked = _draft_for_edit(strategy, expected_version)
    rules = locked.draft["rules"]
    movable = [rule["id"] for rule in rules if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    order = _check_order(locked, order, movable, "rules")
    by_id = {rule["id"]: rule for rule in rules}
    queue = iter(order)
    reordered = [by_id[next(queue)] if rule["kind"] not in CONTEXT_CONTROL_KINDS else rule for rule in rules]
    return _commit(locked, user, {**locked.draft, "rules": reordered}, expected_version)


def _rule(current: Strategy, rule_id: Any) -> dict[str, Any]:
    found = next((rule for rule in current.draft["rules"] if rule["id"] == rule_id), None)
    if found is None:
        raise _refused(current, "RULE_NOT_FOUND", f"rule: {rule_id!r} is not a rule of this draft (any more)",
                       path="rule", rule=str(rule_id))
    return found


@transaction.atomic
def rule_update(*, strategy: Strategy, user, rule_id: str, changes: dict[str, Any], expected_version: Any) -> Strategy:
    """Change some fields of one rule (enabled, role, delivery, lifetime, depth, name, text); `delivery: None`
    removes the delivery. The engine's normalization checks the values (400, 413 for oversize text)."""
    locked = _draft_for_edit(strategy, expected_version)
    rule = _rule(locked, rule_id)
    unknown = sorted(set(changes) - set(RULE_FIELDS))
    if unknown:
        raise ServiceError("INPUT_INVALID", f"{unknown[0]}: not a field a rule edit may change (expected one of "
                           f"{', '.join(RULE_FIELDS)})", detail={"path": unknown[0]})
    if rule["kind"] in CONTEXT_CONTROL_KINDS and set(changes) - {"enabled"}:
        raise _refused(locked, "RULE_CONTROL_FIXED", f"rule {rule_id!r}: a runtime-context control is only switched "
                       "on or off", path="rule", rule=rule_id)
    updated = {**rule, **changes}
    if "delivery" in changes and changes["delivery"] is None:
        updated.pop("delivery")
    rules = [updated if r["id"] == rule_id else r for r in locked.draft["rules"]]
    return _commit(locked, user, {**locked.draft, "rules": rules}, expected_version)


def _free_rule_id(rules: list[dict[str, Any]], wanted: str) -> str:
    base = (slugify(wanted) or "custom")[:72].strip("-") or "custom"
    taken = {rule["id"] for rule in rules}
    rule_id, number = base, 2
    while rule_id in taken:
        rule_id, number = f"{base}-{number}", number + 1
    return rule_id


@transaction.atomic
def rule_add(*, strategy: Strategy, user, kind: str, name: str = "", text: str = "", role: str | None = None,
             expected_version: Any) -> tuple[Strategy, str]:
    """Append a custom text rule (kind `custom` or `dsh.text`); returns the strategy and the new rule's id."""
    locked = _draft_for_edit(strategy, expected_version)
    if kind not in TEXT_RULE_KINDS:
        raise ServiceError("INPUT_INVALID", f"kind: expected one of {', '.join(TEXT_RULE_KINDS)}",
                           detail={"path": "kind"})
    rules = locked.draft["rules"]
    rule_id = _free_rule_id(rules, name or kind.replace(".", "-"))
    rule: dict[str, Any] = {"id": rule_id, "kind": kind, "name": name, "text": text}
    if role is not None:
        rule["role"] = role
    updated = _commit(locked, user, {**locked.draft, "rules": [*rules, rule]}, expected_version)
    return updated, rule_id


@transaction.atomic
def rule_remove(*, strategy: Strategy, user, rule_id: str, expected_version: Any) -> Strategy:
    """Remove a custom text rule; the module rules stay (switch them off instead)."""
    locked = _draft_for_edit(strategy, expected_version)
    rule = _rule(locked, rule_id)
    if rule["kind"] not in TEXT_RULE_KINDS:
        raise _refused(locked, "RULE_NOT_REMOVABLE", f"rule {rule_id!r} ({rule['kind']}) is a module rule: only "
                       "custom text rules are removed; switch it off instead", path="rule", rule=rule_id)
    rules = [r for r in locked.draft["rules"] if r["id"] != rule_id]
    return _commit(locked, user, {**locked.draft, "rules": rules}, expected_version)


@transaction.atomic
def context_control_set(*, strategy: Strategy, user, kind: str, enabled: bool, expected_version: Any) -> Strategy:
    """Switch one runtime-context control (reference A.4). A draft without explicit control rows gets all three
    (enabled, as the absent rows meant) before the switch changes one of them."""
    locked = _draft_for_edit(strategy, expected_version)
    if kind not in CONTEXT_CONTROL_KINDS:
        raise ServiceError("INPUT_INVALID", f"kind: expected one of {', '.join(CONTEXT_CONTROL_KINDS)}",
                           detail={"path": "kind"})
    if not isinstance(enabled, bool):
        raise ServiceError("INPUT_INVALID", "enabled: expected a boolean", detail={"path": "enabled"})
    rules = with_context_control_rows(locked.draft["rules"])
    rules = [{**rule, "enabled": enabled} if rule["kind"] == kind else rule for rule in rules]
    return _commit(locked, user, {**locked.draft, "rules": rules}, expected_version)


def layout_or_default(*, draft: dict[str, Any]) -> dict[str, Any]:
    """The draft's layout, or (when it has none) a new policy that keeps the draft's placement, so storing
    positions or a priority list never changes how the strategy places things (A.5 defaults otherwise)."""
    if draft.get("layout"):
        return dict(draft["layout"])
    placement = draft.get("placement")
    source = "manual" if placement == "modules" else "preset-slots"
    identity = "position" if placement == "native-slots" else "preserve"
    return {"version": 1, "source": source, "identity": identity, "fallback": "source-order", "overrides": [],
            "priority": list(DEFAULT_PRIORITY)}


def position_keys(*, draft: dict[str, Any]) -> list[str]:
    """The position rows of a draft in the order the editor shows them (stored rows, then the catalogue by rule
    order); the same for every session, so it is what an order is checked against."""
    return [row["key"] for row in position_rows(draft, [], [])]


def _settings_in_order(draft: dict[str, Any], keys: list[str]) -> dict[str, dict[str, Any]]:
    stored = {f"{s['sourceId']}#{s['positionId']}": s for s in (draft.get("layout") or {}).get("positions") or []}
    settings = {}
    for key in keys:
        source_id, position_id = key.split("#", 1)
        settings[key] = dict(stored.get(key) or {"sourceId": source_id, "positionId": position_id, "enabled": True,
                                                 "placement": "source"})
    return settings


@transaction.atomic
def positions_reorder(*, strategy: Strategy, user, order: Any, locked: Iterable[str], expected_version: Any,
                      moved: str | None = None) -> Strategy:
    """Put the resource position rows in `order`. `locked` are the rows a slot, macro or runtime anchor holds in the
    preview the user saw: they may not move (their relative order must stay), 409 otherwise. The rows the user
    moved become `list` placements (their old anchor dropped: the list position is the new intent); every row is
    stored in the new order so the list reads back as it was left (A.5 configurePosition)."""
    current = _draft_for_edit(strategy, expected_version)
    keys = position_keys(draft=current.draft)
    order = _check_order(current, order, keys, "position rows")
    held = {key for key in locked if key in keys}
    kept = _kept_in_place(keys, order, held, moved)
    forced = [key for key in keys if key in held and key not in kept]
    if forced:
        raise _refused(current, "POSITION_LOCKED", f"order: {', '.join(forced)} is held by a slot, a macro or a "
                       "runtime anchor and cannot move", path="order", rows=forced)
    if order == keys:
        return current
    settings = _settings_in_order(current.draft, order)
    for key in order:
        if key not in kept:
            settings[key]["placement"] = "list"
            settings[key].pop("anchor", None)
    layout = {**layout_or_default(draft=current.draft), "positions": list(settings.values())}
    return _commit(current, user, {**current.draft, "layout": layout}, expected_version)


@transaction.atomic
def position_update(*, strategy: Strategy, user, key: str, enabled: bool, placement: str,
                    anchor: str | dict[str, Any] | None, locked: Iterable[str], expected_version: Any) -> Strategy:
    """Set one row's switch, placement (`source` / `list`) and anchor (None, 'end' or {sourceId, positionId,
    side}). A locked row may only be switched on or off. Every row is stored in the current order."""
    current = _draft_for_edit(strategy, expected_version)
    keys = position_keys(draft=current.draft)
    if key not in keys:
        raise _refused(current, "POSITION_NOT_FOUND", f"key: {key!r} is not a position row of this draft",
                       path="key", rows=[key])
    if key in set(locked) and (placement != "source" or anchor is not None):
        raise _refused(current, "POSITION_LOCKED", f"{key}: the row is held by a slot, a macro or a runtime anchor; "
                       "it can be switched on or off but not placed", path="placement", rows=[key])
    settings = _settings_in_order(current.draft, keys)
    row = settings[key]
    row.update(enabled=enabled, placement=placement)
    row.pop("anchor", None)
    if anchor is not None:
        row["anchor"] = anchor
    layout = {**layout_or_default(draft=current.draft), "positions": list(settings.values())}
    return _commit(current, user, {**current.draft, "layout": layout}, expected_version)


@transaction.atomic
def priority_reorder(*, strategy: Strategy, user, order: Any, expected_version: Any) -> Strategy:
    """Reorder the automatic position stages (`preset`, `resource`, `default`, ...); manual positions (`user`)
    always come first and are not part of the list (A.5)."""
    current = _draft_for_edit(strategy, expected_version)
    layout = layout_or_default(draft=current.draft)
    order = _check_order(current, order, list(layout["priority"]), "priority stages")
    return _commit(current, user, {**current.draft, "layout": {**layout, "priority": order}}, expected_version)


@transaction.atomic
def layout_update(*, strategy: Strategy, user, source: str, identity: str, fallback: str,
                  expected_version: Any) -> Strategy:
    """Set the layout policy (A.5: slot source, identity, fallback); a draft without a layout adopts one. The
    placement follows from it (normalization)."""
    current = _draft_for_edit(strategy, expected_version)
    layout = {**layout_or_default(draft=current.draft), "source": source, "identity": identity, "fallback": fallback}
    return _commit(current, user, {**current.draft, "layout": layout}, expected_version)


@transaction.atomic
def block_move(*, strategy: Strategy, user, request: dict[str, Any], target: str, anchor: str, side: str,
               detach: bool, expected_version: Any) -> Strategy:
    """Move one request block before or after another (reference A.11 withBlockMove) and keep the move as a layout
    override. `request` is the engine request of the preview session (its strategy is replaced): the blocks are that
    preview's, and the moved draft must assemble on it, so a move the engine would refuse later (a slot's block not
    detached, the chat, a native role or delivery boundary) is refused now (409) and nothing is saved. A draft without
    a layout adopts one that keeps its placement."""
    current = _draft_for_edit(strategy, expected_version)
    if side not in ("before", "after"):
        raise ServiceError("INPUT_INVALID", "side: expected before or after", detail={"path": "side"})
    if target == anchor:
        raise ServiceError("INPUT_INVALID", "anchor: expected another block than the one that moves",
                           detail={"path": "anchor"})
    draft = {**current.draft, "layout": layout_or_default(draft=current.draft)}
    blocks = assemble({**request, "strategy": {**draft, "id": current.slug}}).layout["blocks"]
    moved = with_block_move(draft, blocks, target, anchor, side, detach)
    assemble({**request, "strategy": {**moved, "id": current.slug}})
    return _commit(current, user, moved, expected_version)


@transaction.atomic
def block_override_remove(*, strategy: Strategy, user, target: str, expected_version: Any) -> Strategy:
    """Forget the stored move of one block: it goes back to the place its source gives it."""
    current = _draft_for_edit(strategy, expected_version)
    layout = current.draft.get("layout") or {}
    overrides = layout.get("overrides") or []
    if not any(o["target"] == target for o in overrides):
        raise _refused(current, "OVERRIDE_NOT_FOUND", f"target: no stored move for block {target!r}", path="target")
    layout = {**layout, "overrides": [o for o in overrides if o["target"] != target]}
    return _commit(current, user, {**current.draft, "layout": layout}, expected_version)


@transaction.atomic
def strategy_update(*, strategy: Strategy, user, name: str, backend: str | None, placement: str,
                    expected_version: Any) -> Strategy:
    """Rename the strategy and choose its backend (None: absent, the legacy reading `core`) and placement (which a
    layout policy overrides)."""
    current = _draft_for_edit(strategy, expected_version)
    document = {key: value for key, value in current.draft.items() if key != "backend"}
    if backend is not None:
        document = {"backend": backend, **document}
    document.update(name=name, placement=placement)
    return _commit(current, user, document, expected_version)


@transaction.atomic
def draft_revision_save(*, strategy: Strategy, user, note: str, expected_version: Any) -> tuple[StrategyRevision,
                                                                                                  bool]:
    """Save the draft the user is looking at (its `version`) as a revision; a draft changed since is a 409, so
    nobody saves a state they have not seen."""
    current = _draft_for_edit(strategy, expected_version)
    if not isinstance(note, str) or len(note) > 500:
        raise ServiceError("INPUT_INVALID", "note: expected a note of at most 500 characters",
                           detail={"path": "note"})
    return _save_revision(current, user=user, note=note)
