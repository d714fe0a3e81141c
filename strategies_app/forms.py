"""The strategy editor's forms: they read and type-check what a browser posts; the services and the engine's
normalization decide whether the values make a valid strategy.

Every edit form carries the draft `version` the page showed (optimistic concurrency). Checkboxes are posted as a
hidden `false` followed by the checkbox's `true`, so "unticked" is an explicit value and a form may change only the
fields it posts (`RuleForm.changes`).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from assembly.catalogue import CONTEXT_CONTROL_KINDS
from assembly.strategy import (
    BACKENDS,
    DELIVERIES,
    LAYOUT_FALLBACKS,
    LAYOUT_IDENTITIES,
    LAYOUT_SOURCES,
    LIFETIMES,
    MAX_DEPTH,
    PLACEMENTS,
    POSITION_PLACEMENTS,
    ROLES,
    SIDES,
    TEXT_RULE_KINDS,
)


def _choices(values) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


class FlagField(forms.BooleanField):
    """A switch posted as `false` (hidden) then `true` (checkbox): the last value wins."""

    def __init__(self, **kwargs):
        super().__init__(required=False, **kwargs)

    def to_python(self, value):
        return value in (True, "true", "on", "1")


class FlagInput(forms.CheckboxInput):
    def value_from_datadict(self, data, files, name):
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name)]
        return bool(values) and values[-1] in ("true", "on", "1", True)


class VersionedForm(forms.Form):
    version = forms.IntegerField(min_value=0, error_messages={
        "required": _("version: expected the integer version the edit started from"),
        "invalid": _("version: expected the integer version the edit started from")})


class RuleForm(VersionedForm):
    enabled = FlagField(widget=FlagInput)
    role = forms.ChoiceField(choices=_choices(ROLES), required=False, label=_("Role"))
    delivery = forms.ChoiceField(choices=[("", "")] + _choices(DELIVERIES), required=False, label=_("Delivery"))
    lifetime = forms.ChoiceField(choices=_choices(LIFETIMES), required=False, label=_("Lifetime"))
    depth = forms.IntegerField(min_value=0, max_value=MAX_DEPTH, required=False, label=_("Depth"))
    name = forms.CharField(required=False, strip=False, max_length=200, label=_("Name"))
    text = forms.CharField(required=False, strip=False, widget=forms.Textarea, label=_("Text"))

    def changes(self) -> dict[str, Any]:
        """Only the fields the browser posted: a switch form posts `enabled` alone, the full form everything."""
        posted = set(self.data)
        changes: dict[str, Any] = {}
        for field in ("enabled", "role", "lifetime", "name", "text", "depth"):
            if field in posted:
                changes[field] = self.cleaned_data[field]
        if "delivery" in posted:
            changes["delivery"] = self.cleaned_data["delivery"] or None
        return changes


class NewRuleForm(VersionedForm):
    kind = forms.ChoiceField(choices=_choices(TEXT_RULE_KINDS), label=_("Kind"))
    name = forms.CharField(required=False, max_length=200, label=_("Name"))
    text = forms.CharField(required=False, strip=False, widget=forms.Textarea, label=_("Text"))
    role = forms.ChoiceField(choices=_choices(("system", "user", "assistant")), required=False, label=_("Role"))


class ControlForm(VersionedForm):
    kind = forms.ChoiceField(choices=_choices(CONTEXT_CONTROL_KINDS))
    enabled = FlagField(widget=FlagInput)


class PositionForm(VersionedForm):
    key = forms.CharField(max_length=330)
    enabled = FlagField(widget=FlagInput)
    placement = forms.ChoiceField(choices=_choices(POSITION_PLACEMENTS), label=_("Placement"))
    anchor = forms.CharField(required=False, max_length=340, label=_("Anchor"))

    def clean_anchor(self) -> str | dict[str, str] | None:
        """'' (none), 'end', or '<side>:<source>#<position>' -> the stored anchor shape."""
        value = self.cleaned_data["anchor"]
        if not value:
            return None
        if value == "end":
            return "end"
        side, _sep, key = value.partition(":")
        source_id, hash_sign, position_id = key.partition("#")
        if side not in SIDES or not hash_sign or not source_id or not position_id:
            raise forms.ValidationError(_("anchor: expected nothing, 'end', or before/after another row"))
        return {"sourceId": source_id, "positionId": position_id, "side": side}


class LayoutForm(VersionedForm):
    source = forms.ChoiceField(choices=_choices(LAYOUT_SOURCES), label=_("Slot source"))
    identity = forms.ChoiceField(choices=_choices(LAYOUT_IDENTITIES), label=_("Identity"))
    fallback = forms.ChoiceField(choices=_choices(LAYOUT_FALLBACKS), label=_("Fallback"))


class BlockMoveForm(VersionedForm):
    target = forms.CharField(max_length=2000)
    anchor = forms.CharField(max_length=2000)
    side = forms.ChoiceField(choices=_choices(("before", "after")))
    detach = FlagField(widget=FlagInput)


class BlockResetForm(VersionedForm):
    target = forms.CharField(max_length=2000)


class SettingsForm(VersionedForm):
    name = forms.CharField(max_length=200, label=_("Name"))
    backend = forms.ChoiceField(choices=[("", "")] + _choices(BACKENDS), required=False, label=_("Backend"))
    placement = forms.ChoiceField(choices=_choices(PLACEMENTS), label=_("Placement"))


class RevisionForm(VersionedForm):
    note = forms.CharField(required=False, max_length=500, label=_("Revision note"))


class MoveForm(VersionedForm):
    """A new order (a drag: every id, plus the dragged one as `moved`), or one row one step (the move buttons)."""

    row = forms.CharField(required=False, max_length=340)
    direction = forms.ChoiceField(choices=_choices(("up", "down")), required=False)
    moved = forms.CharField(required=False, max_length=340)

    def order_for(self, current: list[str]) -> tuple[list[str], str | None]:
        """The posted order, or `current` with `row` stepped up or down; (order, the row that moved)."""
        if "order" in self.data:
            return list(self.data.getlist("order")), self.cleaned_data["moved"] or None
        row, direction = self.cleaned_data["row"], self.cleaned_data["direction"]
        if not row or not direction:
            raise forms.ValidationError(_("order: expected the new order, or a row and a direction"))
        if row not in current:
            return [*current, row], row  # refused by the service as an unknown id, with the fresh state
        index = current.index(row)
        target = index - 1 if direction == "up" else index + 1
        if not 0 <= target < len(current):
            return list(current), row
        order = list(current)
        order[index], order[target] = order[target], order[index]
        return order, row


class NameForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)


# The live preview's generation types (engine.md §1 `generation`), as the full preview names them.
GENERATIONS = ("normal", "continue", "impersonate", "swipe", "regenerate", "quiet")


def generation_choices() -> list[tuple[str, str]]:
    """SillyTavern's words for its generation types (the values stay the engine's codes); the full preview's
    drop-down and the editor's live preview show the same."""
    words = {"normal": _("Normal — the character's next reply"), "continue": _("Continue — extend the last reply"),
             "impersonate": _("Impersonate — write the user's next message"),
             "swipe": _("Swipe — another version of the last message"),
             "regenerate": _("Regenerate — the last reply again (delete it from the history first)"),
             "quiet": _("Quiet — a background prompt")}
    return [(value, words[value]) for value in GENERATIONS]
