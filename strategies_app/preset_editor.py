"""The preset editor (SillyTavern's Prompt Manager as a page): a preset's prompts in their order, each with its
switch, role, position (relative, or in-chat @ depth with its order) and content; markers shown as markers; the
preset's settings that change assembly beside them. Saving never changes the stored preset (sessions and goldens
use it): it stores a new preset, the edited revision, that sessions can be switched to."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from assembly.errors import CodedError
from strategies_app.access import EDIT_STRATEGY, require
from strategies_app.models import Preset, PromptEntry
from strategies_app.resource_twins import distinct_name
from studio.errors import invalid

ROLES = ("system", "user", "assistant")
MAX_CONTENT_CHARS = 512 * 1024
MAX_DEPTH_OR_ORDER = 10_000
ASSEMBLY_SETTINGS = ("names_behavior", "squash_system_messages", "openai_max_context", "openai_max_tokens",
                     "wi_format", "scenario_format", "personality_format", "continue_prefill", "continue_postfix",
                     "assistant_prefill", "impersonation_prompt", "new_chat_prompt", "send_if_empty",
                     "use_sysprompt")
_MACRO = re.compile(r"\{\{[^{}]{0,200}\}\}")


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
def preset_save_edited(*, user, source: Preset, name: str, post) -> Preset:
    """A new preset: `source` with the posted edits; `source` itself is left as it was."""
    name = (name or "").strip() or f"{source.name} (edited)"
    entries = [_edited_entry(entry, post) for entry in source.entries.all()]
    ordered = sorted((e for e in entries if e["in_order"]), key=lambda e: (e["position"], e["definition_index"]))
    for index, entry in enumerate(ordered):
        entry["position"] = index  # the posted numbers give the order; stored positions stay 0..n-1
    row = Preset.objects.create(name=distinct_name(Preset, name[:200]), owner=user, options=source.options,
                                has_prompt_order=source.has_prompt_order)
    PromptEntry.objects.bulk_create(PromptEntry(preset=row, **values) for values in entries)
    return row


@require_http_methods(["GET", "POST"])
def preset_editor(request, pk):
    preset = get_object_or_404(Preset, pk=pk)
    error, status = None, 200
    if request.method == "POST":
        try:
            require(request.user, EDIT_STRATEGY, "edit presets")
            saved = preset_save_edited(user=request.user, source=preset, name=request.POST.get("name", ""),
                                       post=request.POST)
        except CodedError as refusal:
            error, status = refusal.to_json(), refusal.status
            if status == 403:
                return render(request, "resources/preset_editor.html", {"denied": error}, status=403)
        else:
            messages.success(request, _("Saved as the new preset “%(name)s”; “%(source)s” and the sessions using "
                                        "it are unchanged.") % {"name": saved.name, "source": preset.name})
            return HttpResponseRedirect(reverse("preset-editor", args=[saved.pk]), status=303)
    settings = [(key, preset.options[key]) for key in ASSEMBLY_SETTINGS if key in preset.options]
    return render(request, "resources/preset_editor.html", {
        "preset": preset, "rows": _rows(preset), "settings": settings, "error": error,
        "can_edit": request.user.has_perm(EDIT_STRATEGY)}, status=status)
