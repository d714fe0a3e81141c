"""The preview's "Macro variables" panel (engine.md §10): each chat-local and global variable of the generation,
its value before and after the generation's macros ran, the changed ones marked, and which macro engine ran.

Read from one result's `macro_variables` (engine.md §10: `{engine, before, after}`); nothing is stored. Values are
shown as JSON, as the chat file keeps them (the text "9" that `setvar` writes and the number 9 that `incvar` writes
are told apart). Words are computed here and translate."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext

from assembly.results import AssemblyResult

SCOPES = ("local", "global")
_MISSING = object()


# SillyTavern's names of its macro engines (User Settings, "Macro engine"), by the engine's codes
MACRO_ENGINE_WORDS = {"legacy": gettext_lazy("legacy"), "v2": gettext_lazy("Macros 2.0 (experimental)")}


def macro_engine_word(engine: str) -> str:
    return str(MACRO_ENGINE_WORDS.get(engine, MACRO_ENGINE_WORDS["legacy"]))


def _shown(value: Any) -> str | None:
    return None if value is _MISSING else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class VariableRow:
    name: str
    scope: str  # local or global
    before: str | None  # the value as JSON; None: not set before
    after: str | None  # None: not set after (flushed)
    state: str  # unchanged, changed, set, removed

    @property
    def changed(self) -> bool:
        return self.state != "unchanged"

    @property
    def scope_word(self) -> str:
        return _("global") if self.scope == "global" else _("this chat")

    @property
    def state_word(self) -> str:
        return {"changed": _("changed"), "set": _("set by this generation"),
                "removed": pgettext("macro variable", "removed"), "unchanged": _("unchanged")}[self.state]


@dataclass(frozen=True)
class MacroVariablesPanel:
    engine: str
    rows: list[VariableRow] = field(default_factory=list)

    @property
    def engine_word(self) -> str:
        return macro_engine_word(self.engine)

    @property
    def changed(self) -> int:
        return sum(row.changed for row in self.rows)

    @property
    def changed_rows(self) -> list[VariableRow]:
        return [row for row in self.rows if row.changed]

    @property
    def summary(self) -> str:
        count = len(self.rows)
        if not count:
            return _("Macro engine: %(engine)s. No variable is set before or after this generation.") % {
                "engine": self.engine_word}
        return ngettext("Macro engine: %(engine)s. %(changed)s of %(count)s variable changed in this generation.",
                        "Macro engine: %(engine)s. %(changed)s of %(count)s variables changed in this generation.",
                        count) % {"engine": self.engine_word, "changed": self.changed, "count": count}


def _state(before: Any, after: Any) -> str:
    if before is _MISSING:
        return "unchanged" if after is _MISSING else "set"
    if after is _MISSING:
        return "removed"
    # JSON equality with its types: 9 and "9" differ, 1 and 1.0 do not (JavaScript has one number)
    same = type(before) is type(after) or (isinstance(before, (int, float)) and isinstance(after, (int, float))
                                          and not isinstance(before, bool) and not isinstance(after, bool))
    return "unchanged" if same and before == after else "changed"


def macro_variables_panel(result: AssemblyResult) -> MacroVariablesPanel | None:
    """The panel of a result whose request used macro variables (the engine reports them then), else None."""
    view = result.macro_variables
    if view is None:
        return None
    rows = []
    for scope in SCOPES:
        before = view.before.get(scope) or {}
        after = view.after.get(scope) or {}
        for name in [*before, *(n for n in after if n not in before)]:
            old, new = before.get(name, _MISSING), after.get(name, _MISSING)
            rows.append(VariableRow(name=name, scope=scope, before=_shown(old), after=_shown(new),
                                    state=_state(old, new)))
    return MacroVariablesPanel(engine=view.engine, rows=rows)
