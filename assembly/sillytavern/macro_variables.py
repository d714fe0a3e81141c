"""SillyTavern's macro variables (`scripts/variables.js`): chat-local ones (kept in `chat_metadata.variables`) and
global ones (kept in the settings' `variables.global`), read and changed the way the variable macros change them.

A request carries the values as they stand before the generation (`macro_variables: {"local": {...}, "global":
{...}}`); the macros of one generation read and change one `MacroVariables`, and the result shows both states.
Values are JSON values as SillyTavern stores them: a string as written, a number after `addvar` / `incvar`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from assembly.errors import AssemblyError
from assembly.sillytavern.js_numbers import js_number, js_string

# The longest text macros may make, a variable's value or one text's expansion: SillyTavern's own bound is the
# browser's longest string (some 500 million characters, which no request survives). Past ours the request is
# refused before the doubling a nested {{setvar}} can do runs the process out of memory.
MAX_MACRO_TEXT_CHARS = 2 * 1024 * 1024


def macro_text_too_large(macro: str) -> AssemblyError:
    return AssemblyError("ASSEMBLY_TOO_LARGE", f"{{{{{macro}}}}}: expected a text of at most {MAX_MACRO_TEXT_CHARS} "
                         "characters from the macros", status=413,
                         detail={"macro": macro, "limit": MAX_MACRO_TEXT_CHARS})


VariableValue = str | int | float | bool | None | list[Any] | dict[str, Any]
_SCOPES = ("local", "global")


@dataclass
class MacroVariables:
    """The chat-local and the global variables of one generation, changed in place as macros run."""

    local: dict[str, Any] = field(default_factory=dict)
    global_: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_request(cls, value: dict[str, dict[str, Any]] | None) -> MacroVariables:
        value = value or {}
        return cls(dict(value.get("local") or {}), dict(value.get("global") or {}))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {"local": dict(self.local), "global": dict(self.global_)}

    def scope(self, is_global: bool) -> dict[str, Any]:
        return self.global_ if is_global else self.local

    # variables.js getLocalVariable / getGlobalVariable (without an index)
    def get(self, name: str, *, is_global: bool = False) -> Any:
        return js_variable_value(self.scope(is_global).get(name))

    def set(self, name: str, value: Any, *, is_global: bool = False, macro: str = "setvar") -> Any:
        if isinstance(value, str) and len(value) > MAX_MACRO_TEXT_CHARS:
            raise macro_text_too_large(macro.replace("var", "globalvar") if is_global else macro)
        self.scope(is_global)[name] = value
        return value

    def add(self, name: str, value: str, *, is_global: bool = False) -> Any:
        """addLocalVariable: appended to a JSON array, added as numbers, else joined as text."""
        current = self.get(name, is_global=is_global)
        if current == "" or current == 0 or current is None:
            current = 0  # `getLocalVariable(name) || 0`
        try:
            parsed = json.loads(current) if isinstance(current, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            parsed.append(value)
            self.set(name, json.dumps(parsed, ensure_ascii=False, separators=(",", ":")), is_global=is_global,
                     macro="addvar")
            return parsed
        increment = js_number(value)
        base = js_number(current)
        if math.isnan(increment) or math.isnan(base):
            text = (js_string(current) if current not in (0, "", None) else "") + js_string(value)
            self.set(name, text, is_global=is_global, macro="addvar")
            return text
        total = base + increment
        if math.isnan(total):
            return ""
        number = int(total) if total.is_integer() and abs(total) < 2**53 else total
        self.set(name, number, is_global=is_global)
        return number

    def has(self, name: str, *, is_global: bool = False) -> bool:
        return name in self.scope(is_global)

    def delete(self, name: str, *, is_global: bool = False) -> None:
        self.scope(is_global).pop(name, None)


def js_variable_value(value: Any) -> Any:
    """What `getLocalVariable` returns for a stored value: a number when the value reads as one, else the value
    (or '' for a missing one); objects and arrays as their JSON."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if value is None or value == "" or value is False:
        return "" if value is None or value == "" else value
    number = js_number(value)
    if math.isnan(number):
        return value or ""
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def parse_macro_variables(value: Any, path: str = "macro_variables") -> dict[str, dict[str, Any]]:
    """The request's `macro_variables`, checked: an object with `local` and `global` objects of JSON values.
    Raises ValueError naming the field."""
    if value is None:
        return {"local": {}, "global": {}}
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object with 'local' and 'global'")
    for key in value:
        if key not in _SCOPES:
            raise ValueError(f"{path}.{key}: expected 'local' or 'global'")
    out: dict[str, dict[str, Any]] = {}
    for scope in _SCOPES:
        values = value.get(scope)
        values = {} if values is None else values
        if not isinstance(values, dict):
            raise ValueError(f"{path}.{scope}: expected an object of variable values")
        for name, item in values.items():
            if not name:
                raise ValueError(f"{path}.{scope}: a variable name cannot be empty")
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"{path}.{scope}.{name}: expected a finite number")
        out[scope] = dict(values)
    return out
