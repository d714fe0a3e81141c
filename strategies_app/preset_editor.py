"""The preset editor (SillyTavern's Prompt Manager as a page): a preset's prompts in their order, each with its
switch, role, position (relative, or in-chat @ depth with its order) and content; markers shown as markers; the
preset's settings that change assembly beside them. Saving never changes the stored preset (sessions and goldens
use it): it stores a new preset, a revision of it (numbered, with its note, linked to the first preset of its line
and to the one it was edited from), that sessions can be switched to. Each revision shows its effect on a chosen
session as the strategy editor does: the session's request with the preset it was edited from against the request
with it, in one computed statement."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_http_methods

from assembly.catalogue import get_builtin_strategy
from assembly.errors import CodedError
from strategies_app.access import EDIT_STRATEGY, require
from strategies_app.edit_effects import EditEffect, edit_effect
from strategies_app.models import Preset, PromptEntry, Strategy
from strategies_app.presenters import strategy_name
from strategies_app.resource_twins import distinct_name
from strategies_app.session_previews import session_previews
from strategies_app.sillytavern import PRESET_REVISION_KEY, preset_model
from studio.engine_runs import assemble
from studio.errors import invalid
from studio.input_boundary import is_row_id

ROLES = ("system", "user", "assistant")
MAX_CONTENT_CHARS = 512 * 1024
MAX_DEPTH_OR_ORDER = 10_000
ASSEMBLY_SETTINGS = ("names_behavior", "squash_system_messages", "openai_max_context", "openai_max_tokens",
                     "wi_format", "scenario_format", "personality_format", "continue_prefill", "continue_postfix",
                     "assistant_prefill", "impersonation_prompt", "new_chat_prompt", "send_if_empty",
                     "use_sysprompt")
# Each setting as SillyTavern's chat-completion panel labels it (its key is shown beside, as the file spells it).
SETTING_LABELS = {
    "names_behavior": gettext_lazy("Character Names Behavior"),
    "squash_system_messages": gettext_lazy("Squash system messages"),
    "openai_max_context": gettext_lazy("Context Size (tokens)"),
    "openai_max_tokens": gettext_lazy("Max Response Length (tokens)"),
    "wi_format": gettext_lazy("World Info format template"),
    "scenario_format": gettext_lazy("Scenario format template"),
    "personality_format": gettext_lazy("Personality format template"),
    "continue_prefill": gettext_lazy("Continue prefill"), "continue_postfix": gettext_lazy("Continue postfix"),
    "assistant_prefill": gettext_lazy("Assistant Prefill"),
    "impersonation_prompt": gettext_lazy("Impersonation prompt"), "new_chat_prompt": gettext_lazy("New Chat"),
    "send_if_empty": gettext_lazy("Replace empty message"), "use_sysprompt": gettext_lazy("Use system prompt"),
}
# Each posted field of a prompt's row, as a refusal names it beside the prompt's name.
PROMPT_FIELDS = {
    "role": pgettext_lazy("preset prompt field", "role"), "content": pgettext_lazy("preset prompt field", "content"),
    "depth": pgettext_lazy("preset prompt field", "depth"), "order": pgettext_lazy("preset prompt field", "order"),
    "position": pgettext_lazy("preset prompt field", "place in the order"),
}
_MACRO = re.compile(r"\{\{[^{}]{0,200}\}\}")
MAX_NOTE_CHARS = 500
REVISIONS_LISTED = 50


def preset_lineage(preset: Preset) -> dict[str, Any] | None:
    """The revision record of an edited preset ({"of", "from", "number", "note"}), None for an imported one."""
    found = preset.options.get(PRESET_REVISION_KEY) if isinstance(preset.options, dict) else None
    return found if isinstance(found, dict) and is_row_id(found.get("of")) else None


def _root_pk(preset: Preset) -> int:
    lineage = preset_lineage(preset)
    return int(lineage["of"]) if lineage else preset.pk


def preset_revisions(preset: Preset) -> list[Preset]:
    """The first preset of `preset`'s line and its revisions, oldest first (bounded)."""
    root = _root_pk(preset)
    rows = Preset.objects.filter(Q(pk=root) | Q(revision_of=root))
    return list(rows.order_by("id").only("pk", "name", "options", "created_at")[:REVISIONS_LISTED])


def highlighted(content: str) -> str:
    """The content escaped, with each {{macro}} marked."""
    parts, last = [], 0
    for found in _MACRO.finditer(content):
        parts += [escape(content[last:found.start()]), f'<mark class="macro">{escape(found.group(0))}</mark>']
        last = found.end()
    parts.append(escape(content[last:]))
    return mark_safe("".join(parts))


def _rows(preset: Preset) -> list[dict[str, Any]]:
    rows = []
    for entry in preset.entries.order_by("-in_order", "position", "definition_index"):
        fields = entry.prompt_fields
        rows.append({"entry": entry, "in_chat": fields.get("injection_position") == 1,
                     "depth": fields.get("injection_depth", 4), "order": fields.get("injection_order", 100),
                     "highlighted": highlighted(entry.content)})
    return rows


def _number(post, key: str, field: str) -> int:
    raw = post.get(key, "").strip()
    if not raw.isdecimal() or int(raw) > MAX_DEPTH_OR_ORDER:
        raise invalid(field, f"a whole number from 0 to {MAX_DEPTH_OR_ORDER}")
    return int(raw)


def _edited_entry(entry: PromptEntry, post) -> dict[str, Any]:
    key = f"p{entry.pk}-"
    role = post.get(key + "role", entry.role)
    if role not in ROLES:
        raise invalid(f"{entry.identifier}.role", "one of " + ", ".join(ROLES))
    content = post.get(key + "content", entry.content)
    if len(content) > MAX_CONTENT_CHARS:
        raise invalid(f"{entry.identifier}.content", f"at most {MAX_CONTENT_CHARS} characters", status=413,
                      code="PAYLOAD_TOO_LARGE")
    fields = dict(entry.prompt_fields)
    if not entry.marker:
        fields["injection_position"] = 1 if post.get(key + "in_chat") else 0
        fields["injection_depth"] = _number(post, key + "depth", f"{entry.identifier}.depth")
        fields["injection_order"] = _number(post, key + "order", f"{entry.identifier}.order")
    return {"identifier": entry.identifier, "name": entry.name, "marker": entry.marker,
            "role": role, "content": content if not entry.marker else entry.content,
            "enabled": bool(post.get(key + "enabled")), "in_order": entry.in_order,
            "position": _number(post, key + "position", f"{entry.identifier}.position") if entry.in_order
            else entry.position, "definition_index": entry.definition_index, "prompt_fields": fields}


@transaction.atomic
def preset_save_edited(*, user, source: Preset, name: str, post, note: str = "") -> Preset:
    """A new revision of `source`'s line: `source` with the posted edits, numbered after the line's last revision;
    `source` itself is left as it was."""
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise invalid("note", f"at most {MAX_NOTE_CHARS} characters")
    entries = []
    for entry in source.entries.all():
        try:
            entries.append(_edited_entry(entry, post))
        except CodedError as refusal:
            refusal.detail["prompt"] = entry.pk  # the row it refuses, for the page to name it as the row does
            raise
    ordered = sorted((e for e in entries if e["in_order"]), key=lambda e: (e["position"], e["definition_index"]))
    for index, entry in enumerate(ordered):
        entry["position"] = index  # the posted numbers give the order; stored positions stay 0..n-1
    root = Preset.objects.filter(pk=_root_pk(source)).only("pk", "name").first() or source
    number = 1 + max([preset_lineage(p)["number"] for p in preset_revisions(source) if preset_lineage(p)
                      and isinstance(preset_lineage(p).get("number"), int)] or [1])
    name = (name or "").strip() or f"{root.name} #{number}"
    options = {**source.options, PRESET_REVISION_KEY: {"of": root.pk, "from": source.pk, "number": number,
                                                       "note": note}}
    row = Preset.objects.create(name=distinct_name(Preset, name[:200]), owner=user, options=options,
                                has_prompt_order=source.has_prompt_order, revision_of=root.pk)
    PromptEntry.objects.bulk_create(PromptEntry(preset=row, **values) for values in entries)
    return row


def _effect_session(raw: Any, preset: Preset, lineage: dict[str, Any] | None):
    """The session the effect is shown on: the one asked for, else the first using this preset or the one it was
    edited from; None when there is none."""
    sessions = session_previews().picker()
    if raw and is_row_id(raw):
        found = sessions.filter(pk=raw).first()
        if found is not None:
            return found
    wanted = [preset.pk] + ([int(lineage["from"])] if lineage and is_row_id(lineage.get("from")) else [])
    return sessions.filter(preset_id__in=wanted).first()


def _strategy_on(session) -> tuple[Strategy | None, dict[str, Any]]:
    applied = session_previews().applied(session)
    if applied is not None:
        return applied
    return Strategy.objects.filter(slug="builtin-st").first(), get_builtin_strategy("builtin-st")


def preset_effect(preset: Preset, before: Preset, session) -> tuple[EditEffect | None, dict[str, Any] | None]:
    """The effect of `preset` against `before` (the preset it was edited from) on `session`'s request, with the
    session's applied strategy (builtin-st when assembly is off): (effect, None), or (None, the engine's refusal)."""
    strategy, document = _strategy_on(session)
    base = session_previews().request(strategy, document, session)

    def run(row: Preset):
        return assemble({**base, "resources": {**base.get("resources", {}),
                                               "preset": preset_model(row, row.entries.all())}})
    try:
        return edit_effect("preset", run(before), run(preset), None), None
    except CodedError as refusal:
        return None, refusal.to_json()


def _effect_context(request, preset: Preset, lineage: dict[str, Any] | None) -> dict[str, Any]:
    session = _effect_session(request.GET.get("session"), preset, lineage)
    before = (Preset.objects.filter(pk=lineage["from"]).first()
              if lineage and is_row_id(lineage.get("from")) else None)
    effect, refusal = (preset_effect(preset, before, session) if session is not None and before is not None
                       else (None, None))
    strategy = _strategy_on(session)[0] if session is not None else None
    return {"effect_sessions": session_previews().picker(), "effect_session": session, "effect_before": before,
            "effect": effect, "effect_refusal": refusal,
            "effect_strategy": strategy_name(strategy.name) if strategy is not None else ""}


def refusal_place(error: dict[str, Any], preset: Preset) -> SafeString | None:
    """The place a refusal of one prompt's field names, as the page names that prompt: its name as its row shows it,
    with its identifier where another prompt shows the same name, and the field in words; None for any other
    refusal (it keeps its own line)."""
    detail = error.get("detail") or {}
    path, pk = detail.get("path"), detail.get("prompt")
    field = path.rpartition(".")[2] if isinstance(path, str) else ""
    if field not in PROMPT_FIELDS or not isinstance(pk, int):
        return None
    shown = {entry.pk: (entry.name or entry.identifier, entry.identifier)
             for entry in preset.entries.only("pk", "name", "identifier")}
    if pk not in shown:
        return None
    name, identifier = shown[pk]
    values = {"field": escape(PROMPT_FIELDS[field]), "prompt": escape(name),
              "identifier": format_html("<code>{}</code>", identifier)}
    twins = sum(1 for other, _identifier in shown.values() if other == name) > 1
    words = _("%(field)s of “%(prompt)s” (%(identifier)s)") if twins else _("%(field)s of “%(prompt)s”")
    return mark_safe(capfirst(words % values))  # noqa: S308 (the catalogue's words, each value escaped)


@require_http_methods(["GET", "POST"])
def preset_editor(request, pk):
    preset = get_object_or_404(Preset, pk=pk)
    error, status = None, 200
    if request.method == "POST":
        try:
            require(request.user, EDIT_STRATEGY, "edit presets")
            saved = preset_save_edited(user=request.user, source=preset, name=request.POST.get("name", ""),
                                       post=request.POST, note=request.POST.get("note", ""))
        except CodedError as refusal:
            error, status = refusal.to_json(), refusal.status
            error["place"] = refusal_place(error, preset)
            if status == 403:
                return render(request, "resources/preset_editor.html", {"denied": error}, status=403)
        else:
            messages.success(request, _("Saved as revision %(number)s, “%(name)s”; “%(source)s” and the sessions "
                                        "using it are unchanged.") % {
                "number": preset_lineage(saved)["number"], "name": saved.name, "source": preset.name})
            target = reverse("preset-editor", args=[saved.pk])
            session = request.POST.get("session", "")
            return HttpResponseRedirect(f"{target}?session={session}" if is_row_id(session) else target, status=303)
    # JSON's own spelling (false, null), as SillyTavern's file has it
    settings = [(SETTING_LABELS[key], key, json.dumps(preset.options[key], ensure_ascii=False)
                 if not isinstance(preset.options[key], str) else preset.options[key])
                for key in ASSEMBLY_SETTINGS if key in preset.options]
    lineage = preset_lineage(preset)
    return render(request, "resources/preset_editor.html", {
        "preset": preset, "rows": _rows(preset), "settings": settings, "error": error, "lineage": lineage,
        "revisions": preset_revisions(preset), "can_edit": request.user.has_perm(EDIT_STRATEGY),
        **_effect_context(request, preset, lineage)}, status=status)
