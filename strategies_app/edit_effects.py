"""What an editor write did to the chosen session's request (web.md screen 2): the compare view's alignment (through the
sessions port: strategies_app does not import preview_app) of the request
before the write against the request after it, one sentence, and when nothing changed the reason in the designer's
terms, read from the engine's own facts (placement controls, the rows' output, the nodes' position decisions).
Also the rows the engine knows a move cannot change (muted before the drag)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _

from assembly.edits import locked_rows
from assembly.results import AssemblyResult
from strategies_app.session_previews import session_previews
from studio.wording import DECISION_WORDS, engine_word, list_words

# The writes that answer with an effect, by the list or form they come from.
EFFECT_KINDS = ("modules", "positions", "blocks", "priority", "rule", "layout", "control", "settings")


@dataclass(frozen=True)
class EditEffect:
    changed: int  # request messages added, removed, moved or changed
    sentence: str
    changes: dict[int, list[str]] = field(default_factory=dict)  # message index after the write -> its changes
    removed: list[str] = field(default_factory=list)  # the removed messages, in words


def _count_words(counts: dict[str, int]) -> str:
    words = {
        "added": lambda n: ngettext("%(n)s added", "%(n)s added", n),
        "removed": lambda n: ngettext("%(n)s removed", "%(n)s removed", n),
        "moved": lambda n: ngettext("%(n)s moved", "%(n)s moved", n),
        "role": lambda n: ngettext("%(n)s with a new role", "%(n)s with a new role", n),
        "delivery": lambda n: ngettext("%(n)s with a new delivery", "%(n)s with a new delivery", n),
        "history_status": lambda n: ngettext("%(n)s with a new history status", "%(n)s with a new history status", n),
        "content": lambda n: ngettext("%(n)s with new content", "%(n)s with new content", n),
    }
    return list_words((words[kind](n) % {"n": n} for kind, n in counts.items() if n), clauses=True)


def module_reason(result: AssemblyResult, rule_id: str | None) -> str:
    """Why moving a module cannot change this request ("" when it can): from the engine's placement controls."""
    controls = {c.rule_id: c for c in result.placement_controls}
    control = controls.get(rule_id or "")
    if control is None:
        return ""
    if control.control == "empty":
        return _("This row has no output in this session.")
    if control.control == "native":
        return _("The host places the conversation itself; the module order does not move it.")
    if control.control == "preset" and not control.independent:
        if not any(c.independent for c in controls.values()):
            return _("In %(placement)s the preset's slots place preset content; the module order only places "
                     "independent modules, and this session has none.") % {"placement": engine_word("placement", result.placement)}
        return _("In %(placement)s the preset's slots place all of this module's output; the module order only "
                 "places independent output.") % {"placement": engine_word("placement", result.placement)}
    return ""


def position_reason(result: AssemblyResult, key: str | None) -> str:
    """Why moving a resource-position row cannot change this request ("" when it can)."""
    row = next((r for r in result.positions if r.key == key), None)
    if row is None:
        return ""
    placed = {node.id for node in result.nodes if node.request_index is not None}
    if row.empty or not placed & set(row.node_ids):
        return _("This row has no output in this session.")
    return ""


def _position_after(before: AssemblyResult, after: AssemblyResult, key: str | None) -> str:
    old = [r.key for r in before.positions]
    new = [r.key for r in after.positions]
    if key not in old or key not in new:
        return ""
    low, high = sorted((old.index(key), new.index(key)))
    between = [r for r in before.positions[low:high + 1] if r.key != key]
    placed = {node.id for node in before.nodes if node.request_index is not None}
    if between and all(not placed & set(r.node_ids) for r in between):
        chinese = (get_language() or "").lower().startswith("zh")
        names = list_words(f"“{r.name_zh if chinese else r.name_en}”" for r in between)
        return _("The row is placed by hand now, but the rows it passed (%(rows)s) have no output in this session, "
                 "so the messages keep their order.") % {"rows": names}
    decisions = sorted({node.position_decision for node in after.nodes
                        if node.id in set(next(r for r in after.positions if r.key == key).node_ids)})
    if decisions:
        return _("The engine places this row's output as before (%(decision)s), so the request keeps its "
                 "order.") % {"decision": list_words(DECISION_WORDS.get(code, code) for code in decisions)}
    return ""


def no_effect_reason(kind: str, before: AssemblyResult, after: AssemblyResult, moved: str | None) -> str:
    if kind == "modules":
        reason = module_reason(before, moved)
        if not reason:
            reason = _("Every message of this module keeps its place: the modules it passed have no output "
                       "between its old and new place in this session.")
        return reason
    if kind == "positions":
        return position_reason(before, moved) or _position_after(before, after, moved) or _(
            "The engine placed every message where it was.")
    if kind == "priority":
        return _("No text in this session is wanted by two placements, so the order of the stages decides "
                 "nothing here.")
    if kind == "rule" and moved:
        control = next((c for c in before.placement_controls if c.rule_id == moved), None)
        if control is not None and control.owned:
            return ngettext("This module's output in this session is held by a preset slot (%(n)s item), and the "
                            "slot still places it.",
                            "This module's output in this session is held by preset slots (%(n)s items), and the "
                            "slots still place it.", control.owned) % {"n": control.owned}
    if kind == "blocks":
        return _("The block already sat there in this session's request.")
    if kind == "preset":
        return _("The prompts that changed send nothing different in this session's request: switched off, out "
                 "of the prompt order, or not read by the session's strategy.")
    return _("This setting decides nothing in this session's request.")


def edit_effect(kind: str, before: AssemblyResult | None, after: AssemblyResult | None,
                moved: str | None, refusal: dict | None = None) -> EditEffect | None:
    """The effect of one write; None when either run is missing (no session, or the engine refused the one before).
    `refusal`: the engine's refusal of the draft after the write, which is its effect then."""
    if before is not None and after is None and refusal is not None:
        return EditEffect(0, _("Saved, but the engine now refuses this draft on this session (%(code)s): the preview "
                               "says why.") % {"code": refusal.get("code")})
    if before is None or after is None:
        return None
    alignment = session_previews().align(before.request.messages, after.request.messages)
    changed_rows = [row for row in alignment.rows if row.changes]
    changed = len(changed_rows)
    if not changed:
        return EditEffect(0, _("Nothing changed in the request.") + " " +
                          no_effect_reason(kind, before, after, moved))
    counts = _count_words(alignment.counts)
    sentence = ngettext("%(n)s message changed in the request: %(counts)s.",
                        "%(n)s messages changed in the request: %(counts)s.", changed) % {
        "n": changed, "counts": counts}
    changes = {row.b_index: row.changes for row in changed_rows if row.b_index is not None}
    removed = [f"#{row.a_index} {engine_word('role', row.a.role)}" for row in changed_rows if row.b_index is None and row.a is not None]
    return EditEffect(changed, sentence, changes, removed)


# ---------------------------------------------------------------------------------------------- wide edits


@dataclass(frozen=True)
class WideEdit:
    """An edit that changes more than the row it was made on (the slot source, the placement mode), stated before it
    is applied: each item one computed change; `fields` re-post the same edit with the confirmation."""

    items: list[str]
    fields: list[tuple[str, str]]
    action: str


def _row_names(result: AssemblyResult | None, keys: set[str]) -> str:
    chinese = (get_language() or "").lower().startswith("zh")
    rows = [r for r in (result.positions if result is not None else []) if r.key in keys]
    names = [r.name_zh if chinese else r.name_en for r in rows] or sorted(keys)
    return list_words(f"“{name}”" for name in names)


def wide_edit_items(before_draft: dict, before: AssemblyResult | None, before_refusal: dict | None,
                    after_draft: dict, after: AssemblyResult | None, after_refusal: dict | None) -> list[str]:
    """What applying `after_draft` instead of `before_draft` changes, in words, computed from both drafts and both
    engine runs: the placement mode, the rows freed or locked, and the request's messages."""
    items = []
    old_mode, new_mode = before_draft.get("placement"), after_draft.get("placement")
    if old_mode != new_mode:
        items.append(_("The placement changes from “%(old)s” to “%(new)s”.") % {
            "old": engine_word("placement", old_mode), "new": engine_word("placement", new_mode)})
    old_locked, new_locked = locked_rows(before_draft, before), locked_rows(after_draft, after)
    freed, held = set(old_locked) - set(new_locked), set(new_locked) - set(old_locked)
    if freed:
        items.append(ngettext("%(n)s row is freed from its slot: %(rows)s.",
                              "%(n)s rows are freed from their slots: %(rows)s.", len(freed)) % {
            "n": len(freed), "rows": _row_names(before, freed)})
    if held:
        items.append(ngettext("%(n)s row becomes held by a slot: %(rows)s.",
                              "%(n)s rows become held by slots: %(rows)s.", len(held)) % {
            "n": len(held), "rows": _row_names(after, held)})
    if after_refusal is not None and before_refusal is None:
        items.append(_("The engine would refuse the new draft on this session (%(code)s).") % {
            "code": after_refusal.get("code")})
    effect = edit_effect("layout", before, after, None)
    if effect is not None and effect.changed:
        items.append(effect.sentence + (" " + _("Removed:") + " " + list_words(effect.removed)
                                        if effect.removed else ""))
    elif effect is not None:
        items.append(_("The request of this session stays as it is."))
    return items
