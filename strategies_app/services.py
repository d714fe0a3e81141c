"""Every write to strategies and resources: plain functions with keyword-only arguments, one transaction each.

Views and management commands call these; they decide nothing themselves. Bad input raises before anything is
written (the engine's `StrategyError` / `ImportInvalid`, or `ServiceError`), and the transaction makes a failure half
way store nothing. Permission checks happen before a service is called (`strategies_app.access`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from assembly import AssemblyError, AssemblyResult, edits
from assembly.catalogue import DEFAULT_BUILTIN_ID, get_builtin_strategy
from assembly.sillytavern.preset_secrets import strip_preset_secrets
from assembly.strategy import normalize_strategy, strategy_revision
from strategies_app import resource_twins, sillytavern, text_templates
from strategies_app.access import builtin_strategy_refusal
from strategies_app.models import (
    Character,
    PendingUpload,
    Persona,
    Preset,
    PromptEntry,
    RegexScript,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
    WorldBookEntry,
)
from studio.errors import ServiceError, invalid
from studio.wording import ENGINE_WORDS

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
    removed: list[str] = field(default_factory=list)  # credentials taken out of the file (never stored)
    token: str | None = None  # a dry run's kept upload, for "Import it"
    same_as: dict[str, Any] | None = None  # {"id", "name"} of a stored resource with the same content

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "kind": self.kind, "dry_run": self.dry_run, "id": self.id, "name": self.name,
                "creates": self.creates, "items": self.items, "notes": self.notes, "removed": self.removed,
                "token": self.token, "same_as": self.same_as,
                "reused": self.same_as is not None and not any(self.creates.values())}


# ---------------------------------------------------------------------------------------------- strategies


def _free_slug(wanted: str) -> str:
    base = (slugify(wanted) or "strategy")[:SLUG_MAX - 4].strip("-") or "strategy"
    slug, number = base, 2
    while Strategy.objects.filter(slug=slug).exists():
        slug, number = f"{base}-{number}", number + 1
    return slug


def _create_with_free_slug(wanted: str, **fields: Any) -> Strategy:
    """Strategy.objects.create under a free slug; a racing writer that took the slug first (unique index) makes us
    try the next free one, and after a few lost races the caller gets a 409 instead of a 500."""
    for _attempt in range(5):
        slug = _free_slug(wanted)
        try:
            with transaction.atomic():  # a savepoint: the outer transaction survives the IntegrityError
                return Strategy.objects.create(slug=slug, **fields)
        except IntegrityError:
            continue
    raise ServiceError("STRATEGY_SLUG_TAKEN", f"name: another strategy took the id {slug!r} at the same time; "
                       "try again", status=409, detail={"path": "name", "id": slug})


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
    return _create_with_free_slug(draft["name"], name=draft["name"], owner=user, draft=draft)


@transaction.atomic
def strategy_copy(*, user, source: Strategy, name: str | None = None) -> Strategy:
    """A copy of `source`'s draft owned by `user` (how a built-in becomes editable)."""
    wanted = name if name is not None else f"{source.name} (copy)"[:200]
    draft = _named(source.draft, wanted)
    return _create_with_free_slug(draft["name"] if name is not None else source.slug + "-copy", name=draft["name"],
                                  owner=user, draft=draft)


@transaction.atomic
def strategy_import(*, user, document: Any, dry_run: bool = False) -> ImportReport:
    """An A.2 document -> a new strategy with that draft and a first revision. The document's `id` is used as the
    slug when it is free; otherwise a free one is made from it (the report says so)."""
    draft = normalize_strategy(document)
    given = document.get("id") if isinstance(document.get("id"), str) else None
    wanted = given if given is not None else draft["name"]
    slug = _free_slug(wanted)
    report = ImportReport(kind="strategy", name=draft["name"], dry_run=dry_run, id=slug, notes=_slug_notes(given, slug),
                          creates={"strategy": 1, "revision": 1},
                          items=[f"{rule['id']} ({rule['kind']})" for rule in draft["rules"]])
    if dry_run:
        return report
    # a racing import that took the slug meanwhile makes this one take the next free one (the report says which)
    strategy = _create_with_free_slug(wanted, name=draft["name"], owner=user, draft=draft)
    if strategy.slug != slug:
        report.id, report.notes = strategy.slug, _slug_notes(given, strategy.slug)
    _save_revision(strategy, user=user, note="imported")
    return report


def _slug_notes(given: str | None, slug: str) -> list[str]:
    """What an import says of its id: nothing when the file's own id is used (or it gave none)."""
    if given is None or given == slug:
        return []
    return [_("The file's id “%(given)s” is taken or is not a valid id, so the strategy is stored as “%(slug)s”.")
            % {"given": given, "slug": slug}]


@transaction.atomic
def draft_update(*, strategy: Strategy, user, document: Any, expected_version: int) -> Strategy:
    """Replace the working draft if nobody changed it since `expected_version`; a stale version is a 409 carrying
    the fresh state, and nothing is written."""
    locked = _draft_for_edit(strategy, expected_version)
    return _store(locked, normalize_strategy(document), expected_version)


def _store(locked: Strategy, draft: dict[str, Any], expected_version: int) -> Strategy:
    """Write a normalized `draft` over version `expected_version` of the locked row."""
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
        raise builtin_strategy_refusal(locked)
    return _save_revision(locked, user=user, note=note)


# ---------------------------------------------------------------------------------------------- resources


TWIN_KINDS = ("preset", "character", "worldbook", "template")  # the importers that recognise a stored twin (`duplicate`)


def _check_duplicate(duplicate: str) -> str:
    if duplicate not in resource_twins.DUPLICATE_CHOICES:
        raise invalid("duplicate", "one of " + ", ".join(resource_twins.DUPLICATE_CHOICES))
    return duplicate


def _twin_found(report: ImportReport, twin, model, duplicate: str, *, rename: bool = True) -> bool:
    """Notes a stored twin on the report; True when the import reuses it (nothing new is stored). Keeping both
    gives the new one a distinct name (`rename`), so the two are told apart in lists, pickers and export file names;
    a card keeps its name (it is the {{char}} of its prompts) and is told apart by its id."""
    if twin is not None:
        report.same_as = {"id": twin.pk, "name": twin.name}
        if duplicate == "reuse":  # `same_as` with nothing created says it (the report's `reused`): no note repeats it
            report.creates = dict.fromkeys(report.creates, 0)
            report.id = twin.pk if not report.dry_run else None
            return True
        if not report.dry_run:  # a dry run's page offers the choice itself
            report.notes.append(_("the same content is already stored as “%(name)s” (id %(id)s); both are kept")
                                % {"name": twin.name, "id": twin.pk})
    if not rename:
        return False
    wanted = report.name
    report.name = resource_twins.distinct_name(model, wanted)
    if report.name != wanted:
        report.notes.append(_("the name “%(wanted)s” is taken; this one is stored as “%(name)s”")
                            % {"wanted": wanted, "name": report.name})
    return False


@transaction.atomic
def preset_import(*, user, data: Any, name: str | None = None, dry_run: bool = False,
                  duplicate: str = "keep") -> ImportReport:
    """A preset file (or a settings.json's preset). Preset files carry no name: `name` (the file name) gives it."""
    data, removed = strip_preset_secrets(data)
    preset = sillytavern.read_preset(data)
    name = sillytavern.check_name(name or "Imported preset", "name")
    options, has_order, entries = sillytavern.preset_parts(preset)
    report = ImportReport(kind="preset", name=name, dry_run=dry_run,
                          creates={"preset": 1, "prompt_entries": len(entries)},
                          items=[e["name"] or e["identifier"] for e in sorted(entries, key=lambda e: e["position"])])
    report.removed = removed
    report.notes += [*preset.coerced, *sillytavern.settings_left_out(data, taken="preset")]
    if _twin_found(report, resource_twins.preset_twin(options, has_order, entries), Preset,
                   _check_duplicate(duplicate)) or dry_run:
        return report
    row = Preset.objects.create(name=report.name, owner=user, options=options, has_prompt_order=has_order)
    PromptEntry.objects.bulk_create(PromptEntry(preset=row, **values) for values in entries)
    report.id = row.pk
    return report


@transaction.atomic
def character_import(*, user, data: Any, name: str | None = None, dry_run: bool = False,
                     duplicate: str = "keep") -> ImportReport:
    """A card (JSON or PNG bytes). A PNG is kept as the avatar; an embedded world book stays part of the card.
    The card's own name is used; `name` is accepted for a uniform signature and ignored."""
    character = sillytavern.read_character(data)
    columns, card_fields = sillytavern.character_parts(character)
    book = character.character_book
    report = ImportReport(kind="character", name=columns["name"], dry_run=dry_run,
                          creates={"character": 1, "avatar": int(isinstance(data, bytes | bytearray))},
                          items=[c for c in sillytavern.CHARACTER_COLUMNS if columns[c]])
    card_data = data.get("data") if isinstance(data, dict) else None
    if isinstance(card_data, dict) and "character_book" in card_data and card_data["character_book"] is None:
        report.notes.append(_("defaulted: data.character_book is null, read as no world book"))
    if book is not None:
        report.notes.append(_("the card embeds a world book of %(count)s entries; import the card as a world book to "
                              "use it on its own") % {"count": len(book.entries)})
    if _twin_found(report, resource_twins.character_twin(columns, card_fields), Character,
                   _check_duplicate(duplicate), rename=False) or dry_run:
        return report
    avatar = bytes(data) if isinstance(data, bytes | bytearray) else None
    row = Character.objects.create(owner=user, card_fields=card_fields, avatar=avatar, **columns)
    report.id = row.pk
    return report


@transaction.atomic
def worldbook_import(*, user, data: Any, name: str | None = None, dry_run: bool = False,
                     duplicate: str = "keep") -> ImportReport:
    """A native world book, a card book, or a card that embeds one; named by the book, else by `name`."""
    book = sillytavern.read_worldbook(data)
    name = sillytavern.check_name(book.name or name or "Imported world book", "name")
    settings, entries = sillytavern.worldbook_parts(book, sillytavern.null_role_uids(data))
    report = ImportReport(kind="worldbook", name=name, dry_run=dry_run,
                          creates={"worldbook": 1, "entries": len(entries)},
                          items=[e["comment"] or _("entry %(uid)s, untitled") % {"uid": e["entry_fields"].get("uid")}
                                 for e in entries])
    report.notes += sillytavern.worldbook_defaulted(data)
    if _twin_found(report, resource_twins.worldbook_twin(settings, entries), WorldBook,
                   _check_duplicate(duplicate)) or dry_run:
        return report
    row = WorldBook.objects.create(name=report.name, owner=user, settings=settings)
    WorldBookEntry.objects.bulk_create(WorldBookEntry(book=row, **values) for values in entries)
    report.id = row.pk
    return report


@transaction.atomic
def persona_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A persona object or a settings.json; the persona's own name is used (`name` is ignored)."""
    values = sillytavern.persona_parts(sillytavern.read_persona(data))
    report = ImportReport(kind="persona", name=values["name"], dry_run=dry_run, creates={"persona": 1},
                          items=[values["name"]], notes=sillytavern.settings_left_out(data, taken="persona"))
    if dry_run:
        return report
    report.id = Persona.objects.create(owner=user, **values).pk
    return report


@transaction.atomic
def regex_import(*, user, data: Any, name: str | None = None, dry_run: bool = False) -> ImportReport:
    """A SillyTavern regex script file (one script, or a list) or a settings.json's global scripts, as global
    scripts after the existing ones in their order. Each script keeps its own name (`name`, the file name, names
    the report of a list)."""
    raws = sillytavern.read_regex_scripts(data)
    parts = [sillytavern.regex_script_parts(raw) for raw in raws]
    title = parts[0]["name"] if len(parts) == 1 else (name or "Imported regex scripts")
    report = ImportReport(kind="regex", name=title or parts[0]["find_regex"], dry_run=dry_run,
                          creates={"regex_scripts": len(parts)}, items=[p["name"] or p["find_regex"] for p in parts],
                          notes=sillytavern.settings_left_out(data, taken="regex"))
    if dry_run:
        return report
    start = (RegexScript.objects.order_by("-sort_order").values_list("sort_order", flat=True).first() or 0) + 1
    rows = RegexScript.objects.bulk_create(RegexScript(owner=user, sort_order=start + index, **values)
                                           for index, values in enumerate(parts))
    report.id = rows[0].pk if len(rows) == 1 else None
    return report


@transaction.atomic
def regex_script_update(*, script: RegexScript, disabled: bool) -> RegexScript:
    """Enable or disable a global regex script (its file's `disabled`)."""
    RegexScript.objects.filter(pk=script.pk).update(disabled=disabled)
    script.refresh_from_db()
    return script


@transaction.atomic
def text_template_import(*, user, data: Any, name: str | None = None, dry_run: bool = False,
                         duplicate: str = "keep") -> ImportReport:
    """A text-completion template file: one instruct / context / system-prompt / reasoning template, a legacy
    instruct template, or a master export holding several. Each template is one row, named by its own `name` (the
    file name when it has none); a template whose fields are already stored is reused or kept as a twin."""
    _check_duplicate(duplicate)
    parts = text_templates.read_template_file(data, fallback_name=name or "Imported template")
    report = ImportReport(kind="template", name=parts[0].name if len(parts) == 1 else (name or parts[0].name),
                          dry_run=dry_run, creates={}, items=[f"{ENGINE_WORDS['resource_kind'][p.kind]}: {p.name}" for p in parts])
    created: list[TextTemplate] = []
    for part in parts:
        report.notes += part.notes
        twin = resource_twins.text_template_twin(part.kind, part.fields)
        if twin is not None:
            report.same_as = report.same_as or {"id": twin.pk, "name": twin.name}
            if duplicate == "reuse":
                report.notes.append(_("the same content is already stored as “%(name)s” (id %(id)s); it is reused")
                                    % {"name": twin.name, "id": twin.pk})
                report.creates[part.kind] = report.creates.get(part.kind, 0)
                created.append(twin)
                continue
            if not dry_run:
                report.notes.append(_("the same content is already stored as “%(name)s” (id %(id)s); both are kept")
                                    % {"name": twin.name, "id": twin.pk})
        stored_name = resource_twins.distinct_name(TextTemplate, part.name, kind=part.kind)
        if stored_name != part.name:
            report.notes.append(_("the name “%(wanted)s” is taken; this one is stored as “%(name)s”")
                                % {"wanted": part.name, "name": stored_name})
        if len(parts) == 1:
            report.name = stored_name
        report.creates[part.kind] = report.creates.get(part.kind, 0) + 1
        if not dry_run:
            created.append(TextTemplate.objects.create(kind=part.kind, name=stored_name, owner=user,
                                                       fields=part.fields))
    if not dry_run and created:
        report.id = created[0].pk
    return report


def text_template_digest(fields: dict[str, Any]) -> str:
    """What an edit says it started from: the stored fields' sha256 (a stale edit is refused, never merged)."""
    return hashlib.sha256(resource_twins.canonical(fields).encode("utf-8")).hexdigest()


@transaction.atomic
def text_template_copy(*, user, source: TextTemplate) -> TextTemplate:
    """An editable copy of `source` (how a built-in or another user's template becomes editable), owned by `user`."""
    name = resource_twins.distinct_name(TextTemplate, f"{source.name} (copy)"[:200], kind=source.kind)
    fields = {**source.fields, "name": name} if "name" in source.fields else dict(source.fields)
    return TextTemplate.objects.create(kind=source.kind, name=name, owner=user, fields=fields)


@transaction.atomic
def text_template_update(*, template: TextTemplate, changes: Any, expected: str) -> TextTemplate:
    """Change the text fields a designer edits (`text_templates.EDITABLE_FIELDS` of its kind); every other field is
    kept as written. `expected`: the digest of the fields the edit started from (409 when they changed since)."""
    locked = TextTemplate.objects.select_for_update().get(pk=template.pk)
    if text_template_digest(locked.fields) != expected:
        raise ServiceError("TEMPLATE_CHANGED", f"template {locked.name!r} changed since the edit began; reload it",
                           status=409, detail={"id": locked.pk})
    allowed = text_templates.EDITABLE_FIELDS.get(locked.kind, ())
    if not isinstance(changes, dict):
        raise invalid("fields", "an object of field -> text")
    for key, value in changes.items():
        if key not in allowed:
            raise invalid(key, f"one of the editable fields of a {locked.kind} template: {', '.join(allowed)}")
        if not isinstance(value, str):
            raise invalid(key, "a string")
    locked.fields = {**locked.fields, **changes}
    locked.save(update_fields=["fields"])
    return locked


UPLOAD_TTL = timedelta(minutes=30)


@transaction.atomic
def upload_keep(*, user, content: bytes, filename: str) -> str:
    """Keep a dry run's upload for "Import it" -> its token. Expired uploads are cleared on the way."""
    PendingUpload.objects.filter(expires_at__lt=timezone.now()).delete()
    token = secrets.token_urlsafe(32)
    PendingUpload.objects.create(token=token, owner=user, content=content, filename=filename[:255],
                                 expires_at=timezone.now() + UPLOAD_TTL)
    return token


def upload_claimed(*, user, token: str) -> PendingUpload:
    """The kept upload `token` names, if it is `user`'s and still fresh; else 400 (unknown) or 410 (expired)."""
    upload = PendingUpload.objects.filter(token=token, owner=user).first() if token else None
    if upload is None:
        raise ServiceError("INPUT_INVALID", "token: expected the token of an upload of yours from a dry run "
                           "(this one is unknown; pick the file again)", detail={"path": "token"})
    if upload.expires_at < timezone.now():
        raise ServiceError("UPLOAD_EXPIRED", "token: this dry run's upload has expired (uploads are kept "
                           f"{int(UPLOAD_TTL.total_seconds() // 60)} minutes); pick the file again",
                           status=410, detail={"path": "token"})
    return upload


IMPORTERS = {"preset": preset_import, "character": character_import, "worldbook": worldbook_import,
             "persona": persona_import, "regex": regex_import, "template": text_template_import}


@transaction.atomic
def upload_import(*, user, upload: PendingUpload, kind: str, data: Any, name: str | None,
                  extra: dict[str, Any] | None = None) -> ImportReport:
    """Import a dry run's kept upload ("Import it") and consume its token in the same transaction: of concurrent
    imports with one token one creates the resource, the others get 409; a refused import keeps the token."""
    if PendingUpload.objects.filter(pk=upload.pk, owner=user).delete()[0] == 0:
        raise ServiceError("UPLOAD_USED", "token: this dry run's upload was imported already (or discarded); "
                           "see the resources list, or pick the file again", status=409, detail={"path": "token"})
    return IMPORTERS[kind](user=user, data=data, name=name, dry_run=False, **(extra or {}))


# ---------------------------------------------------------------------------------------------- editor edits
# The strategy editor's writes (web.md screen 2). Each one locks the row, refuses a built-in or a stale `version`
# (409 with the fresh draft), computes the new document from the stored draft with the pure edit of
# `assembly.edits`, and writes it through `draft_update`, all in one transaction. A refused edit raises before
# anything is written.

# The engine run of a draft on the preview the user sees (the session's request); raises `AssemblyError`.
DraftRun = Callable[[dict[str, Any]], AssemblyResult]


def _draft_for_edit(strategy: Strategy, expected_version: Any) -> Strategy:
    locked = Strategy.objects.select_for_update().get(pk=strategy.pk)
    if locked.builtin:
        raise builtin_strategy_refusal(locked)
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise ServiceError("INPUT_INVALID", "version: expected the integer version the edit started from",
                           detail={"path": "version"})
    if locked.version != expected_version:
        raise _stale(locked, expected_version)
    return locked


def _edited(current: Strategy, edit: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`edit(current.draft, ...)`; a refusal becomes the studio's, a 409 carrying the fresh state like a stale
    version does."""
    try:
        return edit(current.draft, *args, **kwargs)
    except edits.EditRefused as refusal:
        raise ServiceError(refusal.code, refusal.message, status=refusal.status,
                           detail={"id": current.slug, "version": current.version, "draft": current.draft,
                                   **refusal.detail}) from None
    except edits.EditInvalid as refusal:
        raise ServiceError(refusal.code, refusal.message, status=refusal.status, detail=refusal.detail) from None


class _PreviewLocks:
    """The rows the preview of `draft` holds in place, asked for only when an edit needs them (a refused preview
    holds only the rows that are never configurable)."""

    def __init__(self, draft: dict[str, Any], run: DraftRun):
        self._draft, self._run, self._rows = draft, run, None

    def __contains__(self, key: object) -> bool:
        if self._rows is None:
            try:
                result = self._run(self._draft)
            except AssemblyError:
                result = None
            self._rows = edits.locked_rows(self._draft, result)
        return key in self._rows


@transaction.atomic
def rules_reorder(*, strategy: Strategy, user, order: Any, expected_version: Any) -> Strategy:
    """Put the draggable rules in `order` (`assembly.edits.rules_reordered`)."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.rules_reordered, order), expected_version)


@transaction.atomic
def rule_update(*, strategy: Strategy, user, rule_id: str, changes: dict[str, Any], expected_version: Any) -> Strategy:
    """Change some fields of one rule (`assembly.edits.rule_updated`). The engine's normalization checks the values
    (400, 413 for oversize text)."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.rule_updated, rule_id, changes), expected_version)


@transaction.atomic
def rule_add(*, strategy: Strategy, user, kind: str, name: str = "", text: str = "", role: str | None = None,
             expected_version: Any) -> tuple[Strategy, str]:
    """Append a custom text rule (kind `custom` or `dsh.text`); returns the strategy and the new rule's id."""
    current = _draft_for_edit(strategy, expected_version)
    draft, rule_id = _edited(current, edits.rule_added, kind, name, text, role)
    return _store(current, draft, expected_version), rule_id


@transaction.atomic
def rule_remove(*, strategy: Strategy, user, rule_id: str, expected_version: Any) -> Strategy:
    """Remove a custom text rule; the module rules stay (switch them off instead)."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.rule_removed, rule_id), expected_version)


@transaction.atomic
def context_control_set(*, strategy: Strategy, user, kind: str, enabled: bool, expected_version: Any) -> Strategy:
    """Switch one runtime-context control (reference A.4; `assembly.edits.context_control_switched`)."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.context_control_switched, kind, enabled), expected_version)


@transaction.atomic
def positions_reorder(*, strategy: Strategy, user, order: Any, run: DraftRun, expected_version: Any,
                      moved: str | None = None) -> Strategy:
    """Put the resource position rows in `order`. The rows the preview of the stored draft (`run`) holds in place
    may not move, 409 otherwise (`assembly.edits.positions_reordered`); the unchanged order writes nothing."""
    current = _draft_for_edit(strategy, expected_version)
    locks = _PreviewLocks(current.draft, run)
    draft = _edited(current, edits.positions_reordered, order, locked=locks, moved=moved)
    if draft == current.draft:
        return current
    return _store(current, draft, expected_version)


@transaction.atomic
def position_update(*, strategy: Strategy, user, key: str, enabled: bool, placement: str,
                    anchor: str | dict[str, Any] | None, run: DraftRun, expected_version: Any) -> Strategy:
    """Set one row's switch, placement and anchor (`assembly.edits.position_updated`); a row the preview of the
    stored draft (`run`) holds may only be switched on or off."""
    current = _draft_for_edit(strategy, expected_version)
    draft = _edited(current, edits.position_updated, key, enabled=enabled, placement=placement, anchor=anchor,
                    locked=_PreviewLocks(current.draft, run))
    return _store(current, draft, expected_version)


@transaction.atomic
def priority_reorder(*, strategy: Strategy, user, order: Any, expected_version: Any) -> Strategy:
    """Reorder the automatic position stages (`assembly.edits.priority_reordered`)."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.priority_reordered, order), expected_version)


@transaction.atomic
def layout_update(*, strategy: Strategy, user, source: str, identity: str, fallback: str,
                  expected_version: Any) -> Strategy:
    """Set the layout policy (A.5: slot source, identity, fallback); a draft without a layout adopts one."""
    current = _draft_for_edit(strategy, expected_version)
    draft = _edited(current, edits.layout_updated, source=source, identity=identity, fallback=fallback)
    return _store(current, draft, expected_version)


@transaction.atomic
def block_move(*, strategy: Strategy, user, run: DraftRun, target: str, anchor: str, side: str, detach: bool,
               expected_version: Any) -> Strategy:
    """Move one request block before or after another and keep the move as a layout override
    (`assembly.edits.block_moved`). `run` assembles a draft on the preview session's request: a move the engine
    would refuse on it is refused now (409) and nothing is saved."""
    current = _draft_for_edit(strategy, expected_version)
    draft = _edited(current, edits.block_moved, target=target, anchor=anchor, side=side, detach=detach, run=run)
    return _store(current, draft, expected_version)


@transaction.atomic
def block_override_remove(*, strategy: Strategy, user, target: str, expected_version: Any) -> Strategy:
    """Forget the stored move of one block: it goes back to the place its source gives it."""
    current = _draft_for_edit(strategy, expected_version)
    return _store(current, _edited(current, edits.block_override_removed, target), expected_version)


@transaction.atomic
def strategy_update(*, strategy: Strategy, user, name: str, backend: str | None, placement: str,
                    expected_version: Any) -> Strategy:
    """Rename the strategy and choose its backend and placement (`assembly.edits.settings_updated`). While a layout
    policy is set it decides the placement: another placement is refused (409), since it would not be stored."""
    current = _draft_for_edit(strategy, expected_version)
    stored = current.draft.get("placement")
    if current.draft.get("layout") and placement != stored:
        raise ServiceError("PLACEMENT_SET_BY_LAYOUT", f"placement: the layout policy decides the placement "
                           f"({stored!r}); {placement!r} would not be stored", status=409,
                           detail={"path": "placement", "placement": stored, "asked": placement,
                                   "id": current.slug, "version": current.version, "draft": current.draft})
    draft = _edited(current, edits.settings_updated, name=name, backend=backend, placement=placement)
    return _store(current, draft, expected_version)


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
