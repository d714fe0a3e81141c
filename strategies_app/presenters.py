"""Strategy pages' view data: an assembly result and a draft turned into the editor's rows (rules, resource
positions with their locks in words, layout blocks, the preview), the strategy list's rows and the revision diff.
Pure functions over the engine's typed `AssemblyResult` and the draft: the reads are in `selectors`, the engine run
in `session_previews`, which rows are locked in `assembly.edits`.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from typing import Any

from django.urls import reverse
from django.utils import translation
from django.utils.translation import get_language, gettext_lazy, ngettext, pgettext_lazy
from django.utils.translation import gettext as _

from assembly import edits
from assembly.catalogue import CONTEXT_CONTROL_KINDS, CONTEXT_CONTROLS, POSITION_CATALOGUE, name_in_language
from assembly.logical import HOST_KINDS
from assembly.positions import position_rows as engine_position_rows
from assembly.results import AssemblyResult, NodeView, PositionRow
from assembly.strategy import TEXT_RULE_KINDS, strategy_backend
from strategies_app.edit_effects import EditEffect, module_reason, position_reason
from strategies_app.models import Strategy
from studio.history_window import CollapsedRun, Segment, history_window, notable_messages, run_words
from studio.wording import LockWords, excerpt, known_meaning, node_name

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



def rule_display(draft: dict[str, Any], rule_id: str | None) -> str:
    """A module's name as the editor lists it (its own name, else its kind's label), for notices about it."""
    rule = next((r for r in draft["rules"] if r["id"] == rule_id), None)
    if rule is None:
        return rule_id or "-"
    return str(rule["name"] or KIND_LABELS.get(rule["kind"], rule["kind"]))

def _chinese() -> bool:
    return (get_language() or "").lower().startswith("zh")


PLACEMENT_MODES = {
    "native-slots": gettext_lazy("preset slots first"), "native-roles": gettext_lazy("roles first"),
    "st": pgettext_lazy("strategy placement", "SillyTavern order"), "modules": gettext_lazy("module order"),
}


def placement_choices(placements) -> list[tuple[str, str]]:
    """The placement modes in words (drop-downs show the words only)."""
    return [(value, PLACEMENT_MODES.get(value, value)) for value in placements]


COPY_SUFFIX = " (copy)"  # what services.strategy_copy appends


def strategy_name(document_or_name: dict[str, Any] | str) -> str:
    """A strategy's name in the page's language: a built-in's bilingual name in one language, its copies too."""
    name = document_or_name["name"] if isinstance(document_or_name, dict) else document_or_name
    shown = name_in_language(name, "zh" if _chinese() else "en")
    if shown != name and shown.endswith(COPY_SUFFIX):
        shown = shown[: -len(COPY_SUFFIX)] + _(" (copy)")
    return shown


def strategy_names(name: str) -> dict[str, str]:
    """A strategy's name in each language of the studio (a built-in's bilingual name split; others the same)."""
    with translation.override("en"):
        english = strategy_name(name)
    with translation.override("zh-hans"):
        chinese = strategy_name(name)
    return {"en": english, "zh-hans": chinese}


def named(row: dict[str, Any]) -> dict[str, Any]:
    """An answer's strategy (`{"name", ...}`) with `name` in the request's language and `names` in every one."""
    return {**row, "name": strategy_name(row["name"]), "names": strategy_names(row["name"])}


def _placed_tokens(result: AssemblyResult | None) -> dict[str, int]:
    """Node id -> its tokens, for the nodes in the request."""
    if result is None:
        return {}
    return {node.id: node.tokens for node in result.nodes if node.request_index is not None}


def window_line(result: AssemblyResult | None) -> dict[str, Any] | None:
    """The header's request total against the context window and the reply reserve, and over the window the
    eviction plan in one line."""
    if result is None:
        return None
    tokens = result.tokens
    window, reserve = tokens.context_window, tokens.reply_reserve or 0
    over = max(0, tokens.request_total + reserve - window) if window else 0
    plan = ""
    if over:
        budget = result.budget
        items = getattr(budget, "eviction_plan", None) or []
        if items:
            by_module: dict[str, list[int]] = defaultdict(list)
            for item in items:
                by_module[item.module].append(item.tokens)
            plan = _("Eviction plan: drop %(items)s.") % {"items": ", ".join(
                ngettext("%(n)s %(module)s item (%(tokens)s tokens)", "%(n)s %(module)s items (%(tokens)s tokens)",
                         len(found)) % {"n": len(found), "module": KIND_LABELS.get(module, module),
                                        "tokens": sum(found)} for module, found in by_module.items())}
        else:
            plan = _("No budget is set, so nothing is dropped: set one in the full preview to see the eviction "
                     "plan (oldest history first, then world book entries).")
    return {"total": tokens.request_total, "window": window, "reserve": reserve, "over": over, "plan": plan}


def strategy_rows(strategies, user, using: dict[int, list[Any]], can_edit) -> list[dict[str, Any]]:
    """The strategy list's rows (`listed_strategies`, with their `session_count`); `using`: strategy pk -> the first
    sessions applying it; `can_edit(user, strategy)`."""
    return [{"strategy": s, "backend": strategy_backend(s.draft), "given_backend": s.draft.get("backend"),
             "placement": s.draft.get("placement"),
             "placement_words": PLACEMENT_MODES.get(s.draft.get("placement"), s.draft.get("placement")), "sessions": (named := using.get(s.pk, [])),
             "more_sessions": s.session_count - len(named), "can_edit": can_edit(user, s),
             "mine": s.owner_id == user.pk} for s in strategies]


def rule_rows(strategy: Strategy, result: AssemblyResult | None,
              kept: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The editor's module list: every rule but the runtime-context switches, with its labels, URLs, placement
    control and the text a refused edit keeps (`kept`)."""
    draft = strategy.draft
    controls = {c.rule_id: c for c in result.placement_controls} if result is not None else {}
    movable = [rule for rule in draft["rules"] if rule["kind"] not in CONTEXT_CONTROL_KINDS]
    placed = _placed_tokens(result)
    tokens: dict[str, int] = defaultdict(int)
    for node in result.nodes if result is not None else []:
        if node.id in placed:
            tokens[node.rule_id] += node.tokens
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
                      "control": control, "control_words": CONTROL_WORDS.get(control.control, "") if control else "",
                      "tokens": tokens.get(rule["id"], 0),
                      "no_effect": module_reason(result, rule["id"]) if result is not None else "",
                      "first": index == 0, "last": index == len(movable) - 1})
    return rules


def context_rule_rows(draft: dict[str, Any], result: AssemblyResult | None = None) -> list[dict[str, Any]]:
    """The runtime-context switches, explicit rules or not; an explicit one with the placement control the engine
    reports for its rule (the library lists every rule's control, these too)."""
    controls = {c.rule_id: c for c in result.placement_controls} if result is not None else {}
    context_rules = []
    for kind in CONTEXT_CONTROL_KINDS:
        rule = next((r for r in draft["rules"] if r["kind"] == kind), None)
        control = controls.get(rule["id"]) if rule is not None else None
        context_rules.append({"kind": kind, "label": CONTROL_LABELS[kind], "explicit": rule is not None,
                              "enabled": rule is None or rule["enabled"], "sections": CONTEXT_CONTROLS[kind],
                              "placement": control,
                              "placement_words": CONTROL_WORDS.get(control.control, "") if control else ""})
    return context_rules


def priority_rows(priority: list[str]) -> list[dict[str, Any]]:
    return [{"id": stage, "label": STAGE_LABELS.get(stage, stage), "first": i == 0, "last": i == len(priority) - 1}
            for i, stage in enumerate(priority)]


def _hold_words(holds: dict[str, list[tuple[str, NodeView]]], words: LockWords) -> dict[str, list[str]]:
    """The macro holds of `edits.macro_holds` in words, each holder once: the engine counts a held row as no output
    of its own; the editor shows it held, with the holder."""
    held: dict[str, list[str]] = defaultdict(list)
    for key, holders in holds.items():
        for reason, node in holders:
            text = words.child(reason, node)
            if text not in held[key]:
                held[key].append(text)
    return held


def editor_positions(draft: dict[str, Any], result: AssemblyResult | None, words: LockWords) -> list[dict[str, Any]]:
    """The editor's resource rows: the engine's `positions` with each lock in words, macro holds counted as held,
    and a partly held row split into its held part and its free part. Which rows are locked is `assembly.edits`'
    decision (the same one a write checks)."""
    rows = result.positions if result is not None else engine_position_rows(draft, [], [])
    nodes = {node.id: node for node in result.nodes} if result is not None else {}
    engine_holds = edits.macro_holds(result.nodes) if result is not None else {}
    locked_keys = edits.locked_rows(draft, result)
    holds = _hold_words(engine_holds, words)
    stored = {f"{s['sourceId']}#{s['positionId']}": s for s in (draft.get("layout") or {}).get("positions") or []}
    catalogue = {category["id"]: category for category in POSITION_CATALOGUE}
    rule_on: dict[str, bool] = {}
    for rule in draft["rules"]:
        rule_on.setdefault(rule["kind"], rule["enabled"])
    chinese = _chinese()
    placed = _placed_tokens(result)
    shown = []
    for index, row in enumerate(rows):
        key = row.key
        own = [nodes[node_id] for node_id in row.node_ids if node_id in nodes]
        reasons = list(dict.fromkeys(words.node(node) for node in own if node.locked))
        reasons += [text for text in holds.get(key, []) if text not in reasons]
        held = edits.row_held(row, nodes, engine_holds)
        setting = stored.get(key) or {}
        anchor = setting.get("anchor")
        category = catalogue.get(key, {})
        shown.append({
            "key": key, "name": (row.name_zh if chinese else row.name_en),
            "help": category.get("help_zh" if chinese else "help_en", ""),
            "switch": setting.get("enabled", True), "module_on": rule_on.get(row.source_id, False),
            "placement": row.placement, "anchor": anchor, "anchor_value": _anchor_value(anchor),
            "anchor_label": _anchor_label(anchor, rows, chinese), "missing": row.missing,
            "configurable": row.configurable, "empty": row.empty and not holds.get(key),
            "locked": key in locked_keys, "partly": bool(reasons) and not held,
            "reasons": reasons, "split": row.split,
            "outputs": [node_name(node.name) for node in own if held or not node.locked],
            "held_outputs": [node_name(node.name) for node in own if node.locked],
            "decisions": row.decisions, "first": index == 0, "last": index == len(rows) - 1,
            "held_id": key + HELD_SUFFIX,
            **dict(zip(("way_out", "source_frees"), _way_out(own, [reason for reason, _node in engine_holds.get(key, ())]),
                       strict=True)),
            "tokens": sum(placed.get(node_id, 0) for node_id in row.node_ids),
            # a row with output in the request can be moved: ask why not only of the others (position_reason
            # walks every node of the request, once per row)
            "no_effect": position_reason(result, key) if result is not None and key not in locked_keys and (
                row.empty or not any(node_id in placed for node_id in row.node_ids)) else "",
            "placement_words": PLACEMENT_WORDS.get(row.placement, row.placement),
        })
    return shown


WAY_OUT = {
    "slot": gettext_lazy("To free it: disable that marker in the preset, remove it from the preset, or switch the "
                         "slot source to “manual” so the strategy places it."),
    "macro": gettext_lazy("To free it: remove the macro from the prompt that pulls it in, or disable that prompt in "
                          "the preset."),
    "override": gettext_lazy("To free it: leave this card field empty, so the preset prompt it overrides keeps its "
                             "own text."),
    "depth": gettext_lazy("To free it: give the entry a position instead of a depth in its world book or card."),
    "host": gettext_lazy("The host fixes its place; nothing in the strategy frees it."),
}


def _hold_kind(reason: str) -> str | None:
    """The kind of hold a lock reason is (a `WAY_OUT` key): a card field that overrides a preset prompt
    ({{original}}) is freed in the card, any other macro in the prompt that pulls it in."""
    if reason.startswith("reference"):
        return "slot"
    if reason == "macro:original":
        return "override"
    if reason.startswith("macro"):
        return "macro"
    return "depth" if reason == "depth" else "host" if reason in ("runtime", "native-depth-boundary") else None


def _way_out(nodes: list[NodeView], hold_reasons: list[str]) -> tuple[list[str], bool]:
    """How to free a locked row, one sentence per kind of hold (its own locked nodes', then the macro holds' on it),
    and whether switching the slot source does it."""
    kinds = []
    for kind in [_hold_kind(node.lock_reason or "") for node in nodes if node.locked] + [
            _hold_kind(reason) or "macro" for reason in hold_reasons]:
        if kind and kind not in kinds:
            kinds.append(kind)
    return [str(WAY_OUT[kind]) for kind in kinds], "slot" in kinds


def _anchor_value(anchor: Any) -> str:
    if anchor == "end":
        return "end"
    if isinstance(anchor, dict):
        return f"{anchor['side']}:{anchor['sourceId']}#{anchor['positionId']}"
    return ""


def _anchor_label(anchor: Any, rows: list[PositionRow], chinese: bool) -> str:
    if anchor == "end":
        return _("at the end")
    if not isinstance(anchor, dict):
        return ""
    key = f"{anchor['sourceId']}#{anchor['positionId']}"
    row = next((r for r in rows if r.key == key), None)
    name = (row.name_zh if chinese else row.name_en) if row else key
    return (_("before “%(row)s”") if anchor["side"] == "before" else _("after “%(row)s”")) % {"row": name}


CHANGE_WORDS = {"added": gettext_lazy("added"), "removed": gettext_lazy("removed"), "moved": gettext_lazy("moved"),
                "role": gettext_lazy("role changed"), "delivery": gettext_lazy("delivery changed"),
                "history_status": gettext_lazy("history status changed"), "content": gettext_lazy("content changed")}
PLACEMENT_WORDS = {"source": gettext_lazy("where its module puts it"), "list": gettext_lazy("placed by hand")}


def preview_window_items(result: AssemblyResult, segments: list[Segment],
                         changes: dict[int, list[str]] | None = None) -> list[dict[str, Any]]:
    """The live preview's list items: a shown message, or a collapsed run of plain history (`collapsed` true)."""
    changes = changes or {}
    names = {node.id: node.name for node in result.nodes}
    messages = result.request.messages
    items: list[dict[str, Any]] = []
    for segment in segments:
        if isinstance(segment, CollapsedRun):
            items.append({"collapsed": True, "first": segment.first, "last": segment.last, "count": segment.count,
                          "tokens": segment.tokens, "range": segment.range, "words": run_words(segment)})
            continue
        index = segment.index
        message = messages[index]
        items.append({
            "index": index, "role": message.role, "delivery": message.delivery, "region": message.region,
            "history_status": message.history_status, "enters_history": message.enters_history,
            "tokens": message.tokens, "parts": [names.get(part, part) for part in message.parts],
            "excerpt": excerpt(message.content, EXCERPT_CHARS, as_written=True),
            "changes": changes.get(index, []),
            "change_words": ", ".join(str(CHANGE_WORDS[c]) for c in changes.get(index, [])),
        })
    return items


def preview_view(result: AssemblyResult | None, effect: EditEffect | None = None) -> dict[str, Any] | None:
    """The live preview's messages, long runs of plain history folded (quality.md, Performance), every message the last write
    changed shown; after a write, each changed message with its changes (`effect`)."""
    if result is None:
        return None
    changes = effect.changes if effect is not None else {}
    messages = result.request.messages
    segments = history_window(messages, notable_messages(result) | set(changes))
    messages_shown = preview_window_items(result, segments, changes)
    diagnostics = []
    for found in result.diagnostics:
        details = found.details
        diagnostics.append({"code": found.code, "meaning": known_meaning(found.code),
                            "about": details.get("name") or details.get("id") or details.get("slotId") or "",
                            "detail": json.dumps(details, ensure_ascii=False)})
    return {"messages": messages_shown, "message_count": len(messages), "diagnostics": diagnostics,
            "tokens": result.tokens,
            "backend": result.backend, "placement": result.placement,
            "contexts": result.runtime_context_controls}


BINDING_WORDS = {
    "free": gettext_lazy("free: moves anywhere"),
    "slot": gettext_lazy("follows its preset slot; detach it to move it"),
    "runtime": gettext_lazy("fixed by the chat or the host"),
}


def _group_words(module: str, group: str | None) -> str:
    """A block's group for people: the position's catalogue name ("世界书（角色定义后）"), else the group itself
    (a prompt identifier, data); nothing when it only repeats the module."""
    if not group or group == module:
        return ""
    category = next((c for c in POSITION_CATALOGUE if c["module"] == module and c["position"] == group), None)
    if category is None:
        return group
    return category["name_zh"] if _chinese() else category["name_en"]


def block_context(draft: dict[str, Any], result: AssemblyResult | None, words: LockWords | None = None
                  ) -> dict[str, Any]:
    """The request's layout blocks (reference A.11) in request order, and the stored moves (`layout.overrides`),
    with a label each (a slot's block names the slot that holds it, through `words`); a stored move whose block is
    not in this preview says so."""
    if result is None:
        blocks = []
    else:
        nodes = {node.id: node for node in result.nodes}

        def name_of(node_id: str) -> str:  # in words only for the few a label shows, not 5,000 history nodes
            node = nodes.get(node_id)
            return (node_name(node.name) or node_id) if node is not None else node_id

        placed = _placed_tokens(result)
        blocks = []
        for index, block in enumerate(result.layout.blocks):
            rule_id, module, group, _slot, depth, role, _region = block.key
            members = block.node_ids
            if module == "history":
                label = ngettext("the chat history: %(n)s message", "the chat history: %(n)s messages",
                                 len(members)) % {"n": len(members)}
            elif module == "input":
                label = _("the user's input")
            else:
                shown = [name_of(i) for i in members[:3]]
                label = ", ".join(shown) + (f" +{len(members) - 3}" if len(members) > 3 else "")
            blocks.append({"id": block.id, "index": index, "label": label, "module": module, "rule": rule_id,
                           "group": group, "group_words": _group_words(module, group), "role": role,
                           "depth": depth, "region": block.region,
                           "binding": block.binding, "binding_words": (
                               _("%(held)s; detach it to move it") % {"held": words.slot(block.slot_id)}
                               if words is not None and block.binding == "slot" and block.slot_id
                               else BINDING_WORDS[block.binding]),
                           "movable": block.movable, "overridable": block.overridable,
                           "detached": bool(block.original_slot_id),
                           "tokens": sum(placed.get(node_id, 0) for node_id in members)})
    labels = {b["id"]: f"#{b['index']} {b['label']}" for b in blocks}
    overrides = [{**o, "target_label": labels.get(o["target"]), "anchor_label": labels.get(o["anchor"])}
                 for o in (draft.get("layout") or {}).get("overrides") or []]
    moved = {o["target"]: o for o in overrides}
    for block in blocks:
        block["override"] = moved.get(block["id"])
    # the standard backend only approximates a depth (reference A.14.1): such an item is a free block there
    depth_moves = any(block["depth"] is not None and block["movable"] for block in blocks)
    return {"blocks": blocks, "overrides": overrides, "depth_moves": depth_moves}



def document_lines(document: dict[str, Any]) -> list[str]:
    return json.dumps(document, indent=2, ensure_ascii=False).splitlines()


def request_lines(result: AssemblyResult | None, refusal: dict[str, Any] | None) -> list[str]:
    """An assembled request as diffable lines (one header line per message, then its content), or the engine's
    refusal."""
    if refusal is not None:
        return [f"REFUSED {refusal['code']} ({refusal['status']}): {refusal['error']}"]
    lines = []
    for index, message in enumerate(result.request.messages):
        lines.append(f"#{index} {message.role} · {message.delivery} · {message.history_status} · "
                     f"{message.tokens} tokens")
        lines.extend("    " + line for line in message.content.splitlines() or [""])
    return lines


def line_diff(a: list[str], b: list[str], a_name: str, b_name: str) -> list[dict[str, str]]:
    lines = []
    for line in difflib.unified_diff(a, b, a_name, b_name, lineterm="", n=2):
        kind = ("meta" if line.startswith(("---", "+++", "@@")) else "added" if line.startswith("+")
                else "removed" if line.startswith("-") else "same")
        lines.append({"kind": kind, "text": line})
    return lines




# ---------------------------------------------------------------------------------------------- regex scripts

REGEX_PLACEMENTS = {1: gettext_lazy("User input"), 2: gettext_lazy("AI output"), 3: gettext_lazy("Slash commands"),
                    5: gettext_lazy("World info"), 6: gettext_lazy("Reasoning")}


def regex_script_row(script) -> dict[str, Any]:
    """One global regex script for the resources page: what it finds, what it writes, where and when it runs."""
    when = [_("prompt only")] if script.prompt_only else []
    when += [_("display only")] if script.markdown_only else []
    return {"script": script, "pk": script.pk, "name": script.name or _("(unnamed)"), "find": script.find_regex,
            "replace": script.replace_string, "enabled": not script.disabled,
            "placements": ", ".join(str(REGEX_PLACEMENTS.get(p, p)) for p in script.placement) or "—",
            "when": ", ".join(when)}
