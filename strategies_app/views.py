"""Pages of strategies (web.md screens 1 and 2): the list, the editor, revisions (list, diff, apply), and the resource
import page (admins).

The editor is one page built from template partials (`strategies/editor.html`). Every write is a plain form POST
carrying the draft `version` the page showed: without JavaScript it answers with a redirect back to the page (or the
page with the refusal and its status); with htmx (`request.htmx`) it answers the re-rendered `#workspace` partial:
the changed draft, the resource positions and the live preview of the chosen session, all from one engine run.
A refusal (stale version, a locked row moved, an order that is not a permutation, ...) is answered with its status
(409 mostly) and the fresh state, and nothing is written. Permissions are checked here through
`strategies_app.access` / `preview_app.access` before a service runs; templates only hide controls.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import re
from collections import defaultdict
from typing import Any

from django import forms as django_forms
from django.contrib import messages
from django.db.models import BooleanField, Count, ExpressionWrapper, OuterRef, Q, Subquery
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import get_language, gettext_lazy, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from assembly.catalogue import CONTEXT_CONTROL_KINDS, CONTEXT_CONTROLS, POSITION_CATALOGUE
from assembly.edits import layout_or_default, position_keys
from assembly.logical import HOST_KINDS
from assembly.positions import position_rows
from assembly.strategy import (
    DELIVERIES,
    LAYOUT_FALLBACKS,
    LAYOUT_IDENTITIES,
    LAYOUT_SOURCES,
    LIFETIMES,
    PLACEMENTS,
    ROLES,
    TEXT_RULE_KINDS,
    strategy_backend,
    strategy_revision,
)
from preview_app.access import EDIT_ANY_SESSION, EDIT_SESSION, session_for_edit
from preview_app.diagnostics_text import MEANINGS
from preview_app.models import Session
from preview_app.previews import DraftPreviews
from preview_app.services import strategy_apply
from strategies_app import forms, services
from strategies_app.access import EDIT_ANY_STRATEGY, EDIT_STRATEGY, MANAGE_RESOURCES, require, strategy_for_edit
from strategies_app.api import MAX_BODY_BYTES, REFUSALS, file_content, flag, too_large
from strategies_app.errors import ServiceError
from strategies_app.models import (
    Character,
    Persona,
    Preset,
    PromptEntry,
    Strategy,
    StrategyRevision,
    WorldBook,
)

EDITOR = "strategies/editor.html"
TEXT_KINDS = ("custom", "dsh.text", "phi")  # rules whose own text the editor shows
HELD_SUFFIX = "~held"  # the row id of a partly held row's held part ("~" never occurs in position ids)
EXCERPT_CHARS = 140

KIND_LABELS = {
    "native-system": gettext_lazy("Host system prompt"), "preset": gettext_lazy("Preset prompts"),
    "persona": gettext_lazy("Persona"), "character": gettext_lazy("Character card"),
    "worldbook": gettext_lazy("World book"), "history": gettext_lazy("Chat history"),
    "input": gettext_lazy("Current input"), "phi": gettext_lazy("Post-history instructions"),
    "custom": gettext_lazy("Custom text"), "dsh.text": gettext_lazy("DSH text"),
}
CONTROL_LABELS = {
    "dsh.runtime-context": gettext_lazy("All DSH runtime contexts (master switch)"),
    "dsh.sandbox-policy": gettext_lazy("Sandbox policy context"),
    "dsh.approval-policy": gettext_lazy("Approval policy context"),
}
STAGE_LABELS = {
    "preset": gettext_lazy("Preset slots"), "resource": gettext_lazy("Resource anchors and depths"),
    "default": gettext_lazy("Rule order"),
}
CONTROL_WORDS = {
    "preset": gettext_lazy("placed by preset slots"), "native": gettext_lazy("conversation: the host places it"),
    "mixed": gettext_lazy("partly placed by preset slots"), "independent": gettext_lazy("placed by rule order"),
    "empty": gettext_lazy("no output in this preview"),
}


# ---------------------------------------------------------------------------------------------- lookups


def _strategy_or_404(slug: str) -> Strategy:
    strategy = Strategy.objects.select_related("owner").filter(slug=slug).first()
    if strategy is None:
        raise Http404(f"strategy {slug!r} does not exist")
    return strategy


def _can_edit(user, strategy: Strategy) -> bool:
    return (not strategy.builtin and user.has_perm(EDIT_STRATEGY)
            and (strategy.owner_id == user.pk or user.has_perm(EDIT_ANY_STRATEGY)))


def _preview_session(raw: Any, strategy: Strategy) -> Session | None:
    """The session the preview runs on: the one asked for, else one the strategy is applied to, else the first."""
    sessions = Session.objects.select_related("preset", "character", "persona", "applied_strategy")
    if raw and str(raw).isdecimal():
        found = sessions.filter(pk=raw).first()
        if found is not None:
            return found
    return sessions.filter(applied_strategy=strategy).first() or sessions.first()


def _editable_sessions(user):
    if user.has_perm(EDIT_ANY_SESSION):
        return Session.objects.all()
    if user.has_perm(EDIT_SESSION):
        return Session.objects.filter(owner=user)
    return Session.objects.none()


def _edit_url(strategy: Strategy, session: Session | None) -> str:
    url = reverse("strategies:edit", args=[strategy.slug])
    return f"{url}?{urlencode({'session': session.pk})}" if session is not None else url


def _chinese() -> bool:
    return (get_language() or "").lower().startswith("zh")


# ---------------------------------------------------------------------------------------------- the preview


def _run_preview(strategy: Strategy, document: dict[str, Any], session: Session | None,
                 previews: DraftPreviews | None = None):
    """(result JSON, refusal JSON): the engine run the editor shows (`previews`: the runs this request made)."""
    return (previews or DraftPreviews(strategy.slug, session)).shown(document)


class LockWords:
    """Lock reasons in words: which slot or macro of which prompt holds a row (web.md: "referenced by
    {{worldInfoBefore}} in Main Prompt")."""

    _TEXT_REFERENCE = re.compile(r"^(?P<item>.+?):(?P<offset>\d+):(?P<group>[^:]+)$")
    _MACRO_AT = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")

    def __init__(self, draft: dict[str, Any], session: Session | None):
        self.rules = draft["rules"]
        self.prompts: dict[str, tuple[str, str]] = {}
        if session is not None and session.preset_id is not None:
            self.prompts = {identifier: (name or identifier, content) for identifier, name, content in
                            PromptEntry.objects.filter(preset_id=session.preset_id)
                            .values_list("identifier", "name", "content")}

    def node(self, node: dict[str, Any]) -> str:
        reason = node.get("lock_reason") or ""
        if reason.startswith("reference:") and node.get("slot_id"):
            return self.slot(node["slot_id"])
        if reason == "depth":
            depth = node.get("depth") if node.get("depth") is not None else node.get("requested_depth")
            return _("inserted at depth %(depth)s of the chat; depth insertion fixes its place") % {"depth": depth}
        if reason == "native-depth-boundary":
            return _("pinned to the native depth boundary of the chat (depth 0 or 1)")
        if reason == "runtime":
            return _("a conversation message: the host fixes its place")
        if reason.startswith("reference:"):
            return _("held by a slot of %(owner)s") % {"owner": reason.split(":", 1)[1]}
        return reason

    def child(self, reason: str, holder: dict[str, Any]) -> str:
        name = holder.get("name") or holder.get("id")
        if reason.startswith("macro:outlet::"):
            return _("fills {{outlet::%(outlet)s}} in “%(prompt)s”") % {
                "outlet": reason.removeprefix("macro:outlet::"), "prompt": name}
        if reason == "macro:original":
            return _("replaces the preset prompt “%(prompt)s” (the card overrides it; {{original}} keeps the "
                     "prompt's text)") % {"prompt": name}
        if reason.startswith("macro:"):
            return _("referenced by {{%(macro)s}} in “%(prompt)s”") % {"macro": reason.removeprefix("macro:"),
                                                                       "prompt": name}
        return reason

    def slot(self, slot_id: str) -> str:
        rule = next((r for r in sorted(self.rules, key=lambda r: -len(r["id"]))
                     if slot_id.startswith(r["id"] + ":")), None)
        if rule is None:
            return _("held by the slot %(slot)s") % {"slot": slot_id}
        rest = slot_id[len(rule["id"]) + 1:]
        reference = self._TEXT_REFERENCE.match(rest)
        if reference is not None:  # a {{macro}} inside a prompt's (or a custom rule's) text
            offset = int(reference["offset"])
            if rule["kind"] == "preset":
                name, text = self.prompts.get(reference["item"], (reference["item"], ""))
            else:
                name, text = rule.get("name") or rule["id"], rule.get("text") or ""
            found = self._MACRO_AT.match(text, offset)
            macro = "{{" + found.group(1) + "}}" if found else "{{" + reference["group"] + "}}"
            return _("referenced by %(macro)s in “%(prompt)s”") % {"macro": macro, "prompt": name}
        item = rest.split(":", 1)[0]
        if rule["kind"] == "preset":
            name = self.prompts.get(item, (item, ""))[0]
            return _("held by the preset marker “%(prompt)s” (%(identifier)s)") % {"prompt": name,
                                                                                   "identifier": item}
        return _("held by the slot %(slot)s of rule “%(rule)s”") % {"slot": rest, "rule": rule.get("name")
                                                                     or rule["id"]}


def _macro_holds(nodes: list[dict[str, Any]], keys: set[str], words: LockWords) -> dict[str, list[str]]:
    """Rows whose output another node took in through a macro ({{description}}, {{original}}, outlets): the
    engine counts them as no output of their own; the editor shows them held, with the holder."""
    held: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for child in node.get("children") or []:
            if not child.get("locked"):
                continue
            reason = child.get("lock_reason") or ""
            key = f"{child.get('source')}#{child.get('field')}"
            if reason.startswith("macro:outlet::"):
                key = "worldbook#outlet"
            if key in keys:
                text = words.child(reason, node)
                if text not in held[key]:
                    held[key].append(text)
    return held


def _position_rows(draft: dict[str, Any], result: dict[str, Any] | None, words: LockWords) -> list[dict[str, Any]]:
    """The editor's resource rows: the engine's `positions` with each lock in words, macro holds counted as held,
    and a partly held row split into its held part and its free part."""
    rows = result["positions"] if result is not None else position_rows(draft, [], [])
    nodes = {node["id"]: node for node in (result or {}).get("nodes", [])}
    holds = _macro_holds((result or {}).get("nodes", []), {row["key"] for row in rows}, words)
    stored = {f"{s['sourceId']}#{s['positionId']}": s for s in (draft.get("layout") or {}).get("positions") or []}
    catalogue = {category["id"]: category for category in POSITION_CATALOGUE}
    rule_on: dict[str, bool] = {}
    for rule in draft["rules"]:
        rule_on.setdefault(rule["kind"], rule["enabled"])
    chinese = _chinese()
    shown = []
    for index, row in enumerate(rows):
        key = row["key"]
        own = [nodes[node_id] for node_id in row["node_ids"] if node_id in nodes]
        reasons = list(dict.fromkeys(words.node(node) for node in own if node.get("locked")))
        reasons += [text for text in holds.get(key, []) if text not in reasons]
        free = [node for node in own if not node.get("locked")]
        locked = (row["locked"] or bool(holds.get(key))) and not free
        setting = stored.get(key) or {}
        anchor = setting.get("anchor")
        category = catalogue.get(key, {})
        shown.append({
            "key": key, "name": (row["name_zh"] if chinese else row["name_en"]),
            "help": category.get("help_zh" if chinese else "help_en", ""),
            "switch": setting.get("enabled", True), "module_on": rule_on.get(row["source_id"], False),
            "placement": row["placement"], "anchor": anchor, "anchor_value": _anchor_value(anchor),
            "anchor_label": _anchor_label(anchor, rows, chinese), "missing": row["missing"],
            "configurable": row["configurable"], "empty": row["empty"] and not holds.get(key),
            "locked": locked or not row["configurable"], "partly": bool(reasons) and not locked,
            "reasons": reasons, "split": row["split"],
            "outputs": [node["name"] for node in (own if locked else free)],
            "held_outputs": [node["name"] for node in own if node.get("locked")],
            "decisions": row["decisions"], "first": index == 0, "last": index == len(rows) - 1,
            "held_id": key + HELD_SUFFIX,
        })
    return shown


def _anchor_value(anchor: Any) -> str:
    if anchor == "end":
        return "end"
    if isinstance(anchor, dict):
        return f"{anchor['side']}:{anchor['sourceId']}#{anchor['positionId']}"
    return ""


def _anchor_label(anchor: Any, rows: list[dict[str, Any]], chinese: bool) -> str:
    if anchor == "end":
        return _("at the end")
    if not isinstance(anchor, dict):
        return ""
    key = f"{anchor['sourceId']}#{anchor['positionId']}"
    row = next((r for r in rows if r["key"] == key), None)
    name = (row["name_zh"] if chinese else row["name_en"]) if row else key
    return (_("before “%(row)s”") if anchor["side"] == "before" else _("after “%(row)s”")) % {"row": name}


def _meaning(code: str) -> str:
    """The plain-language meaning of an engine or studio code (one list for every page: preview_app's)."""
    found = MEANINGS.get(code)
    return str(found) if found is not None else ""


def _preview_view(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None:
        return None
    names = {node["id"]: node["name"] for node in result["nodes"]}
    messages_shown = []
    for index, message in enumerate(result["request"]["messages"]):
        content = message["content"]
        messages_shown.append({
            "index": index, "role": message["role"], "delivery": message["delivery"], "region": message["region"],
            "history_status": message["history_status"], "enters_history": message["enters_history"],
            "tokens": message["tokens"], "parts": [names.get(part, part) for part in message["parts"]],
            "excerpt": content if len(content) <= EXCERPT_CHARS else content[:EXCERPT_CHARS] + "…",
        })
    diagnostics = [{"code": d.get("code", ""), "meaning": _meaning(d.get("code", "")),
                    "about": d.get("name") or d.get("id") or d.get("slotId") or "",
                    "detail": json.dumps({k: v for k, v in d.items() if k != "code"}, ensure_ascii=False)}
                   for d in result["diagnostics"]]
    return {"messages": messages_shown, "diagnostics": diagnostics, "tokens": result["tokens"],
            "backend": result["backend"], "placement": result["placement"],
            "contexts": result["runtime_context_controls"]}


# ---------------------------------------------------------------------------------------------- the editor page


def _editor_context(request, strategy: Strategy, session: Session | None, *, notice: str | None = None,
                    refusal: dict[str, Any] | None = None, kept: dict[str, Any] | None = None,
                    previews: DraftPreviews | None = None) -> dict[str, Any]:
    user = request.user
    draft = strategy.draft
    can_edit = _can_edit(user, strategy)
    result, preview_error = _run_preview(strategy, draft, session, previews)
    words = LockWords(draft, session)
    controls = {c["rule_id"]: c for c in (result or {}).get("placement_controls", [])}
    movable = [rule for rule in draft["rules"] if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    rules = []
    for index, rule in enumerate(movable):
        control = controls.get(rule["id"])
        shown_text = rule["text"]
        if kept and kept.get("rule") == rule["id"] and kept.get("text") is not None:
            shown_text = kept["text"]
        label = KIND_LABELS.get(rule["kind"], rule["kind"])
        rules.append({**rule, "update_url": reverse("strategies:rule-update", args=[strategy.slug, rule["id"]]),
                      "remove_url": reverse("strategies:rule-remove", args=[strategy.slug, rule["id"]]),
                      "label": label, "display": rule["name"] or label, "has_text": rule["kind"] in
                      TEXT_KINDS, "removable": rule["kind"] in TEXT_RULE_KINDS, "shown_text": shown_text,
                      "kept": bool(kept and kept.get("rule") == rule["id"]),
                      "host": rule["kind"] in HOST_KINDS,
                      "control": control, "control_words": CONTROL_WORDS.get((control or {}).get("control"), ""),
                      "first": index == 0, "last": index == len(movable) - 1})
    context_rules = []
    for kind in CONTEXT_CONTROL_KINDS:
        rule = next((r for r in draft["rules"] if r["kind"] == kind), None)
        context_rules.append({"kind": kind, "label": CONTROL_LABELS[kind], "explicit": rule is not None,
                              "enabled": rule is None or rule["enabled"], "sections": CONTEXT_CONTROLS[kind]})
    layout = draft.get("layout")
    policy = layout_or_default(draft=draft)
    latest = strategy.revisions.select_related("author").first()
    draft_revision = strategy_revision(draft)
    # Every edit form carries these three; built once, not once per form (the page has dozens of forms).
    hidden_fields = format_html(
        '<input type="hidden" name="csrfmiddlewaretoken" value="{}"><input type="hidden" name="version" value="{}">'
        '<input type="hidden" name="session" value="{}">', get_token(request), strategy.version,
        session.pk if session is not None else "")
    return {
        "strategy": strategy, "draft": draft, "session": session, "can_edit": can_edit, "hidden_fields": hidden_fields,
        "urls": {name.replace("-", "_"): reverse(f"strategies:{name}", args=[strategy.slug]) for name in (
            "block-move", "block-reset", "control", "layout", "position-update", "positions-order", "priority-order",
            "revision-save", "rule-add", "rules-order", "settings")},
        "can_copy": user.has_perm(EDIT_STRATEGY), "backend": strategy_backend(draft),
        "backend_given": draft.get("backend"), "native": strategy_backend(draft) == "native",
        "rules": rules, "context_rules": context_rules, "has_layout": layout is not None, "policy": policy,
        "priority": [{"id": stage, "label": STAGE_LABELS.get(stage, stage), "first": i == 0,
                      "last": i == len(policy["priority"]) - 1} for i, stage in enumerate(policy["priority"])],
        "positions": _position_rows(draft, result, words),
        **_block_context(draft, result),
        "preview": _preview_view(result), "preview_error": preview_error,
        "preview_error_meaning": _meaning(preview_error["code"]) if preview_error else "",
        "sessions": Session.objects.order_by("name", "id").only("pk", "name"),
        "latest": latest, "draft_revision": draft_revision,
        "saved": latest is not None and latest.revision == draft_revision,
        "notice": notice, "refusal": refusal, "kept": kept,
        "roles": ROLES, "deliveries": DELIVERIES, "lifetimes": LIFETIMES, "placements": PLACEMENTS,
        "layout_sources": LAYOUT_SOURCES, "layout_identities": LAYOUT_IDENTITIES, "layout_fallbacks": LAYOUT_FALLBACKS,
        "text_kinds": TEXT_RULE_KINDS,
        **_apply_context(request, strategy),
    }


BINDING_WORDS = {
    "free": gettext_lazy("free: moves anywhere"),
    "slot": gettext_lazy("follows its preset slot; detach it to move it"),
    "runtime": gettext_lazy("fixed by the chat or the host"),
}


def _block_context(draft: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """The request's layout blocks (reference A.11) in request order, and the stored moves (`layout.overrides`),
    with a label each; a stored move whose block is not in this preview says so."""
    if result is None:
        blocks = []
    else:
        names = {node["id"]: node.get("name") or node["id"] for node in result["nodes"]}
        blocks = []
        for index, block in enumerate(result["layout"]["blocks"]):
            rule_id, module, group, _slot, depth, role, _region = block["key"]
            members = block["node_ids"]
            if module == "history":
                label = ngettext("the chat history: %(n)s message", "the chat history: %(n)s messages",
                                 len(members)) % {"n": len(members)}
            elif module == "input":
                label = _("the user's input")
            else:
                shown = [names.get(i, i) for i in members[:3]]
                label = ", ".join(shown) + (f" +{len(members) - 3}" if len(members) > 3 else "")
            blocks.append({"id": block["id"], "index": index, "label": label, "module": module, "rule": rule_id,
                           "group": group, "role": role, "depth": depth, "region": block["region"],
                           "binding": block["binding"], "binding_words": BINDING_WORDS[block["binding"]],
                           "movable": block["movable"], "overridable": block["overridable"],
                           "detached": bool(block.get("original_slot_id"))})
    labels = {b["id"]: f"#{b['index']} {b['label']}" for b in blocks}
    overrides = [{**o, "target_label": labels.get(o["target"]), "anchor_label": labels.get(o["anchor"])}
                 for o in (draft.get("layout") or {}).get("overrides") or []]
    moved = {o["target"]: o for o in overrides}
    for block in blocks:
        block["override"] = moved.get(block["id"])
    return {"blocks": blocks, "overrides": overrides}


def _apply_context(request, strategy: Strategy, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apply_sessions": _editable_sessions(request.user).order_by("name", "id"),
            "apply_revisions": list(strategy.revisions.all()[:50]), "apply_results": results,
            "strategy": strategy}


@require_GET
def strategy_edit(request, slug):
    strategy = _strategy_or_404(slug)
    session = _preview_session(request.GET.get("session"), strategy)
    context = _editor_context(request, strategy, session)
    if request.htmx:
        return render(request, f"{EDITOR}#workspace", context)
    return render(request, EDITOR, context)


# ---------------------------------------------------------------------------------------------- writes


class Invalid(Exception):
    """A form the browser posted is malformed (400), with the first problem in words."""


def _form(form_class, request, **kwargs):
    form = form_class(request.POST, **kwargs)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        raise Invalid(f"{field}: {errors[0]}" if field != "__all__" else errors[0])
    return form


def _refusal_words(error: dict[str, Any], positions: list[dict[str, Any]]) -> str:
    code, detail = error.get("code"), error.get("detail") or {}
    if code == "STRATEGY_VERSION_CONFLICT":
        return _("Someone saved a newer version of this draft (version %(version)s) after you loaded it. Nothing was "
                 "changed; the editor now shows the current state.") % {"version": detail.get("version")}
    if code == "POSITION_LOCKED":
        rows = {row["key"]: row for row in positions}
        parts = []
        for key in detail.get("rows", []):
            row = rows.get(key)
            if row is not None:
                parts.append(f"“{row['name']}” ({'; '.join(row['reasons']) or _('not configurable')})")
            else:
                parts.append(key)
        return _("A locked row cannot move or be placed: %(rows)s. Nothing was changed.") % {"rows": ", ".join(parts)}
    if code == "ORDER_NOT_PERMUTATION":
        problems = [f"{label}: {', '.join(detail[key])}" for label, key in (
            (_("unknown"), "unknown"), (_("missing"), "missing"), (_("repeated"), "repeated")) if detail.get(key)]
        return _("The new order was refused: it must list each current row exactly once (%(problem)s). Nothing was "
                 "changed.") % {"problem": "; ".join(problems)}
    if code == "RULE_NOT_FOUND":
        return _("That rule is no longer in this draft. Nothing was changed.")
    if code == "RULE_NOT_REMOVABLE":
        return _("Only custom text rules can be removed; switch a module off instead. Nothing was changed.")
    if code == "ASSEMBLY_LAYOUT_UNSUPPORTED":
        why = re.sub(r": block:.*$", "", error.get("error") or "")  # the block's id is in the technical detail
        return _("This block cannot move like that: %(why)s. Nothing was changed.") % {"why": why}
    if code == "OVERRIDE_NOT_FOUND":
        return _("That block has no stored move any more. Nothing was changed.")
    if code == "POSITION_NOT_FOUND":
        return _("That position row is no longer in this draft. Nothing was changed.")
    if code == "STRATEGY_READ_ONLY":
        return _("Built-in strategies are read-only: copy this one to edit it.")
    if code == "FORBIDDEN":
        return _("You may not change this strategy (%(why)s).") % {"why": error.get("error")}
    if code == "INPUT_INVALID" or code == "STRATEGY_INVALID":
        return _("The change was refused: %(why)s. Nothing was changed.") % {"why": error.get("error")}
    return _("The change was refused (%(code)s): %(why)s. Nothing was changed.") % {"code": code,
                                                                                    "why": error.get("error")}


def _answer(request, strategy: Strategy, session: Session | None, *, status: int = 200, notice: str | None = None,
            refusal: dict[str, Any] | None = None, kept: dict[str, Any] | None = None,
            previews: DraftPreviews | None = None) -> HttpResponse:
    strategy = Strategy.objects.select_related("owner").get(pk=strategy.pk)  # the fresh state
    context = _editor_context(request, strategy, session, notice=notice, refusal=refusal, kept=kept,
                              previews=previews)
    if refusal is not None:
        refusal["words"] = _refusal_words(refusal, context["positions"])
    if request.htmx:
        return render(request, f"{EDITOR}#workspace", context, status=status)
    return render(request, EDITOR, context, status=status)


def editor_write(keeps_text: bool = False):
    """An editor POST: permission (403 / 409 for a built-in), then the handler, which returns the notice to show.
    Refusals answer the fresh state with their status; success answers the workspace (htmx) or a redirect. A
    handler that takes `previews` gets the request's engine runs, which the answer then reuses."""

    def decorate(handler):
        wants_previews = "previews" in inspect.signature(handler).parameters

        @require_POST
        @functools.wraps(handler)
        def view(request, slug, **kwargs):
            strategy = _strategy_or_404(slug)
            session = _preview_session(request.POST.get("session"), strategy)
            previews = DraftPreviews(strategy.slug, session)
            try:
                strategy_for_edit(request.user, slug)
                notice = handler(request, strategy, session, **kwargs, **({"previews": previews}
                                                                          if wants_previews else {}))
            except Invalid as error:
                refusal = ServiceError("INPUT_INVALID", str(error)).to_json()
                return _answer(request, strategy, session, status=400, refusal=refusal, previews=previews)
            except REFUSALS as error:
                refusal = error.to_json()
                if error.status == 403 and request.htmx:
                    response = render(request, f"{EDITOR}#status", {"refusal": {
                        **refusal, "words": _refusal_words(refusal, [])}}, status=403)
                    return reswap(retarget(response, "#editor-status"), "innerHTML")
                kept = None
                if keeps_text and "text" in request.POST:
                    kept = {"rule": kwargs.get("rule_id"), "text": request.POST.get("text")}
                return _answer(request, strategy, session, status=error.status, refusal=refusal, kept=kept,
                               previews=previews)
            if request.htmx:
                return _answer(request, strategy, session, notice=notice, previews=previews)
            messages.success(request, notice)
            return HttpResponseRedirect(_edit_url(strategy, session), status=303)

        return view

    return decorate


@editor_write()
def rules_order(request, strategy, session):
    form = _form(forms.MoveForm, request)
    current = [rule["id"] for rule in strategy.draft["rules"] if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    try:
        order, moved = form.order_for(current)
    except django_forms.ValidationError as error:
        raise Invalid(error.messages[0]) from None
    services.rules_reorder(strategy=strategy, user=request.user, order=order,
                           expected_version=form.cleaned_data["version"])
    return _("Module order saved (moved: %(rule)s).") % {"rule": moved or "-"}


@editor_write(keeps_text=True)
def rule_update(request, strategy, session, rule_id):
    form = _form(forms.RuleForm, request)
    services.rule_update(strategy=strategy, user=request.user, rule_id=rule_id, changes=form.changes(),
                         expected_version=form.cleaned_data["version"])
    return _("Rule “%(rule)s” saved.") % {"rule": rule_id}


@editor_write()
def rule_add(request, strategy, session):
    form = _form(forms.NewRuleForm, request)
    data = form.cleaned_data
    _updated, rule_id = services.rule_add(strategy=strategy, user=request.user, kind=data["kind"], name=data["name"],
                                          text=data["text"], role=data["role"] or None,
                                          expected_version=data["version"])
    return _("Custom rule “%(rule)s” added at the end of the module list.") % {"rule": rule_id}


@editor_write()
def rule_remove(request, strategy, session, rule_id):
    form = _form(forms.VersionedForm, request)
    services.rule_remove(strategy=strategy, user=request.user, rule_id=rule_id,
                         expected_version=form.cleaned_data["version"])
    return _("Custom rule “%(rule)s” removed.") % {"rule": rule_id}


@editor_write()
def control_set(request, strategy, session):
    form = _form(forms.ControlForm, request)
    data = form.cleaned_data
    services.context_control_set(strategy=strategy, user=request.user, kind=data["kind"], enabled=data["enabled"],
                                 expected_version=data["version"])
    return _("Runtime-context switch saved.")


@editor_write()
def positions_order(request, strategy, session, previews):
    form = _form(forms.MoveForm, request)
    try:
        order, moved = form.order_for(position_keys(draft=strategy.draft))
    except django_forms.ValidationError as error:
        raise Invalid(error.messages[0]) from None
    version = form.cleaned_data["version"]
    had_layout = bool(strategy.draft.get("layout"))
    services.positions_reorder(strategy=strategy, user=request.user, order=order, run=previews.run,
                               expected_version=version, moved=moved)
    notice = _("Resource position order saved.")
    return notice if had_layout else notice + " " + _("The strategy adopted a layout policy to store it.")


@editor_write()
def position_update(request, strategy, session, previews):
    form = _form(forms.PositionForm, request)
    data = form.cleaned_data
    services.position_update(strategy=strategy, user=request.user, key=data["key"], enabled=data["enabled"],
                             placement=data["placement"], anchor=data["anchor"], run=previews.run,
                             expected_version=data["version"])
    return _("Position “%(row)s” saved.") % {"row": data["key"]}


@editor_write()
def priority_order(request, strategy, session):
    form = _form(forms.MoveForm, request)
    try:
        order, _moved = form.order_for(list(layout_or_default(draft=strategy.draft)["priority"]))
    except django_forms.ValidationError as error:
        raise Invalid(error.messages[0]) from None
    services.priority_reorder(strategy=strategy, user=request.user, order=order,
                              expected_version=form.cleaned_data["version"])
    return _("Priority order saved.")


@editor_write()
def layout_update(request, strategy, session):
    form = _form(forms.LayoutForm, request)
    data = form.cleaned_data
    services.layout_update(strategy=strategy, user=request.user, source=data["source"], identity=data["identity"],
                           fallback=data["fallback"], expected_version=data["version"])
    return _("Layout policy saved.")


@editor_write()
def block_move(request, strategy, session, previews):
    form = _form(forms.BlockMoveForm, request)
    data = form.cleaned_data
    services.block_move(strategy=strategy, user=request.user, run=previews.run, target=data["target"],
                        anchor=data["anchor"], side=data["side"], detach=data["detach"],
                        expected_version=data["version"])
    return _("Block moved; the strategy keeps the move as a layout override.")


@editor_write()
def block_reset(request, strategy, session):
    form = _form(forms.BlockResetForm, request)
    services.block_override_remove(strategy=strategy, user=request.user, target=form.cleaned_data["target"],
                                   expected_version=form.cleaned_data["version"])
    return _("The block's stored move was removed; it goes back to its source's place.")


@editor_write()
def settings_update(request, strategy, session):
    form = _form(forms.SettingsForm, request)
    data = form.cleaned_data
    services.strategy_update(strategy=strategy, user=request.user, name=data["name"], backend=data["backend"] or None,
                             placement=data["placement"], expected_version=data["version"])
    return _("Strategy settings saved.")


@editor_write()
def revision_save(request, strategy, session):
    form = _form(forms.RevisionForm, request)
    revision, created = services.draft_revision_save(strategy=strategy, user=request.user,
                                                     note=form.cleaned_data["note"],
                                                     expected_version=form.cleaned_data["version"])
    if created:
        return _("Saved revision %(revision)s.") % {"revision": revision.revision[:12]}
    return _("The draft is unchanged since revision %(revision)s; nothing new was saved.") % {
        "revision": revision.revision[:12]}


# ---------------------------------------------------------------------------------------------- list, create, copy


@require_GET
def strategy_list(request):
    latest = StrategyRevision.objects.filter(strategy=OuterRef("pk")).order_by("-created_at", "-id")
    strategies = (Strategy.objects.filter(visible=True).select_related("owner")
                  .annotate(latest_revision=Subquery(latest.values("revision")[:1]),
                            latest_note=Subquery(latest.values("note")[:1]),
                            latest_at=Subquery(latest.values("created_at")[:1]),
                            session_count=Count("sessions", distinct=True)))
    using: dict[int, list[Session]] = defaultdict(list)
    for session in Session.objects.filter(applied_strategy__isnull=False).only("pk", "name", "applied_strategy_id"):
        using[session.applied_strategy_id].append(session)
    rows = [{"strategy": s, "backend": strategy_backend(s.draft), "given_backend": s.draft.get("backend"),
             "placement": s.draft.get("placement"), "sessions": using.get(s.pk, []), "can_edit": _can_edit(
                 request.user, s), "mine": s.owner_id == request.user.pk} for s in strategies]
    return render(request, "strategies/list.html", {"rows": rows, "can_create": request.user.has_perm(EDIT_STRATEGY)})


@require_POST
def strategy_create(request):
    try:
        require(request.user, EDIT_STRATEGY, "create strategies")
        name = _form(forms.NameForm, request).cleaned_data["name"].strip() or _("New strategy")
        created = services.strategy_create(user=request.user, name=name)
    except Invalid as error:
        messages.error(request, str(error))
        return HttpResponseRedirect(reverse("strategies:list"), status=303)
    except REFUSALS as error:
        return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=error.status)
    messages.success(request, _("Created “%(name)s”.") % {"name": created.name})
    return HttpResponseRedirect(reverse("strategies:edit", args=[created.slug]), status=303)


@require_POST
def strategy_copy(request, slug):
    source = _strategy_or_404(slug)
    try:
        require(request.user, EDIT_STRATEGY, "copy strategies")
        name = _form(forms.NameForm, request).cleaned_data["name"].strip() or None
        copy = services.strategy_copy(user=request.user, source=source, name=name)
    except Invalid as error:
        messages.error(request, str(error))
        return HttpResponseRedirect(reverse("strategies:edit", args=[source.slug]), status=303)
    except REFUSALS as error:
        return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=error.status)
    messages.success(request, _("Copied “%(source)s”: this copy is yours to edit.") % {"source": source.name})
    url = reverse("strategies:edit", args=[copy.slug])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url, status=303)


# ---------------------------------------------------------------------------------------------- revisions


def _document_lines(document: dict[str, Any]) -> list[str]:
    return json.dumps(document, indent=2, ensure_ascii=False).splitlines()


def _request_lines(strategy: Strategy, document: dict[str, Any], session: Session | None) -> list[str]:
    """The assembled request of `document` on `session` as diffable lines (one header line per message, then its
    content), or the engine's refusal."""
    result, refusal = _run_preview(strategy, document, session)
    if refusal is not None:
        return [f"REFUSED {refusal['code']} ({refusal['status']}): {refusal['error']}"]
    lines = []
    for index, message in enumerate(result["request"]["messages"]):
        lines.append(f"#{index} {message['role']} · {message['delivery']} · {message['history_status']} · "
                     f"{message['tokens']} tokens")
        lines.extend("    " + line for line in message["content"].splitlines() or [""])
    return lines


def _diff(a: list[str], b: list[str], a_name: str, b_name: str) -> list[dict[str, str]]:
    lines = []
    for line in difflib.unified_diff(a, b, a_name, b_name, lineterm="", n=2):
        kind = ("meta" if line.startswith(("---", "+++", "@@")) else "added" if line.startswith("+")
                else "removed" if line.startswith("-") else "same")
        lines.append({"kind": kind, "text": line})
    return lines


def _side(strategy: Strategy, choice: str) -> tuple[str, str, dict[str, Any]] | None:
    """'draft' or a revision sha (or a prefix of at least 6) -> (the full choice, label, document)."""
    if choice == "draft":
        return "draft", _("working draft (version %(version)s)") % {"version": strategy.version}, strategy.draft
    found = strategy.revisions.filter(revision__startswith=choice).first() if re.fullmatch(r"[0-9a-f]{6,64}",
                                                                                           choice) else None
    if found is None:
        return None
    return found.revision, _("revision %(revision)s") % {"revision": found.revision[:12]}, found.document


@require_GET
def revisions(request, slug):
    strategy = _strategy_or_404(slug)
    revision_rows = list(strategy.revisions.select_related("author").annotate(session_count=Count("sessions")))
    session = _preview_session(request.GET.get("session"), strategy)
    context: dict[str, Any] = {"strategy": strategy, "revisions": revision_rows, "session": session,
                               "sessions": Session.objects.order_by("name", "id").only("pk", "name"),
                               "can_edit": _can_edit(request.user, strategy),
                               "can_copy": request.user.has_perm(EDIT_STRATEGY),
                               "draft_revision": strategy_revision(strategy.draft),
                               **_apply_context(request, strategy)}
    default_a = revision_rows[1].revision if len(revision_rows) > 1 else "draft"
    default_b = revision_rows[0].revision if revision_rows else "draft"
    a_choice, b_choice = request.GET.get("a") or default_a, request.GET.get("b") or default_b
    context.update(a=a_choice, b=b_choice)
    status = 200
    if "a" in request.GET or "b" in request.GET:
        a, b = _side(strategy, a_choice), _side(strategy, b_choice)
        if a is None or b is None:
            context["diff_error"] = _("Choose two revisions of this strategy (or its draft) to compare.")
            status = 404
        else:
            (a_key, a_label, a_document), (b_key, b_label, b_document) = a, b
            context.update(a=a_key, b=b_key)
            context["diff"] = {
                "a": a_label, "b": b_label, "same": a_document == b_document,
                "document": _diff(_document_lines(a_document), _document_lines(b_document), a_label, b_label),
                "request": _diff(_request_lines(strategy, a_document, session),
                                 _request_lines(strategy, b_document, session), a_label, b_label),
            }
    return render(request, "strategies/revisions.html", context, status=status)


@require_POST
def apply(request, slug):
    """Apply a revision (default: the latest) to the chosen sessions, each in its own transaction; a session that
    cannot run it (409) keeps its selection and the refusal is shown beside it."""
    strategy = _strategy_or_404(slug)
    sessions = _editable_sessions(request.user)
    results: list[dict[str, Any]] = []
    status = 200
    try:
        require(request.user, EDIT_SESSION, "apply strategies to sessions")
        form = _form(forms.ApplyForm, request, sessions=sessions)
        revision = form.cleaned_data["revision"] or None
        for pk in form.cleaned_data["sessions"]:
            target = session_for_edit(request.user, pk)
            try:
                applied = strategy_apply(session=target, strategy=strategy, revision=revision)
                results.append({"session": target, "ok": True, "revision": applied.applied_revision.revision})
            except REFUSALS as error:
                status = 409 if error.status == 409 else max(status, error.status)
                results.append({"session": target, "ok": False, "error": error.to_json(),
                                "meaning": _meaning(error.code)})
    except Invalid as error:
        status = 400
        results.append({"session": None, "ok": False, "error": ServiceError("INPUT_INVALID", str(error)).to_json()})
    except REFUSALS as error:
        if error.status == 403:
            return render(request, "strategies/refused.html", {"refusal": error.to_json()}, status=403)
        status = error.status
        results.append({"session": None, "ok": False, "error": error.to_json()})
    context = _apply_context(request, strategy, results)
    if request.htmx:
        return render(request, "strategies/apply.html#apply", context, status=status)
    return render(request, "strategies/apply.html", {**context, "page": True}, status=status)


# ---------------------------------------------------------------------------------------------- resource import

KINDS = [("preset", gettext_lazy("Chat-completion preset (JSON, or settings.json)")),
         ("character", gettext_lazy("Character card (JSON or PNG)")),
         ("worldbook", gettext_lazy("World book (JSON, or a card that embeds one)")),
         ("persona", gettext_lazy("Persona (JSON, or settings.json)"))]


@require_GET
def resource_list(request):
    """Every imported SillyTavern resource with its export back to the same format (web.md screen 6); admins also
    find the import page and each resource's admin page."""
    with_avatar = ExpressionWrapper(Q(avatar__isnull=False), output_field=BooleanField())
    sections = [
        ("preset", _("Presets"), Preset.objects.select_related("owner").annotate(items=Count("entries")),
         _("prompts")),
        ("character", _("Character cards"),
         Character.objects.select_related("owner").defer("avatar").annotate(has_avatar=with_avatar), None),
        ("worldbook", _("World books"), WorldBook.objects.select_related("owner").annotate(items=Count("entries")),
         _("entries")),
        ("persona", _("Personas"), Persona.objects.select_related("owner"), None),
    ]
    manage = request.user.has_perm(MANAGE_RESOURCES)
    return render(request, "resources/list.html", {
        "sections": [{"kind": kind, "title": title, "rows": list(rows), "items_label": items_label,
                      "admin_change": f"admin:strategies_app_{kind}_change"}
                     for kind, title, rows, items_label in sections],
        "manage": manage, "admin": request.user.is_staff})


def resource_import(request):
    try:
        require(request.user, MANAGE_RESOURCES, "import resources")
    except ServiceError as error:
        return render(request, "resources/import.html", {"error": error.to_json(), "kinds": KINDS},
                      status=error.status)
    context = {"kinds": KINDS, "kind": request.POST.get("kind", "preset"), "allowed": True}
    status = 200
    if request.method == "POST":
        try:
            context["report"] = _import(request)
        except REFUSALS as error:
            context["error"], status = error.to_json(), error.status
    return render(request, "resources/import.html", context, status=status)


def _import(request) -> dict:
    kind, upload = request.POST.get("kind"), request.FILES.get("file")
    if kind not in services.IMPORTERS:
        raise ServiceError("INPUT_INVALID", "kind: expected one of " + ", ".join(services.IMPORTERS),
                           detail={"path": "kind"})
    if upload is None:
        raise ServiceError("INPUT_INVALID", "file: expected a file upload", detail={"path": "file"})
    if upload.size > MAX_BODY_BYTES:
        raise too_large("file", upload.size)
    name = (upload.name or "").rsplit(".", 1)[0] or None
    return services.IMPORTERS[kind](user=request.user, data=file_content(upload.read(), kind=kind), name=name,
                                    dry_run=flag(request.POST.get("dry_run"))).to_json()
