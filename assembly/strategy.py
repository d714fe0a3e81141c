"""Assembly strategies: the stored document, its normalization and its revision (engine.md §4). The built-ins and
the position catalogue are in assembly.catalogue.

A strategy is a JSON document (reference A.2 format `dsh-tavern-request-assembly`, version 1) holding an ordered list
of rules (one row per module: which source, enabled, role, delivery, lifetime, depth, custom text), a placement mode,
an optional backend (`native` standard, `core` advanced; absent means `core`, the legacy reading) and an optional
resource layout policy (A.5: slot source, identity, fallback, block overrides, the manual position rows and the
priority list of automatic position stages).

`normalize_strategy(obj)` validates a document and returns a NEW plain JSON dict in the reference's field names. The
checks run in the reference's order and every failure is a `StrategyError` whose message starts with the reference's
text, followed by the field path and what was expected. Normalizing a normalized document returns an equal document.

Shape of a normalized strategy (keys in this order; `?` = present only when set):

    {"backend"?: "native" | "core",              # absent = core (legacy); never filled in, the revision keeps meaning
     "format": "dsh-tavern-request-assembly", "version": 1,
     "name": str,                                 # trimmed (JavaScript trim), 1..200 UTF-16 units
     "placement": "modules" | "st" | "native-roles" | "native-slots",
     "layout"?: {"version": 1, "source": "manual" | "preset-slots", "identity": "preserve" | "position",
                 "fallback": "source-order" | "error",
                 "overrides": [{"target": str, "anchor": str, "side": "before" | "after", "detach": bool}],
                 "priority": [str, ...],          # stage ids; always holds preset, resource, default; never "user"
                 "positions"?: [{"sourceId": str, "positionId": str, "enabled": bool, "placement": "source" | "list",
                                 "anchor"?: "end" | {"sourceId": str, "positionId": str,
                                                     "side": "before" | "after"}}]},
     "rules": [{"delivery"?: "context" | "pre-step", "inputMode"?: "text",
                "id": str, "kind": str, "enabled": bool, "role": "preserve" | "system" | "user" | "assistant",
                "lifetime": "request" | "snapshot", "depth": int | None, "text": str, "name": str}]}

Deliberate choices where the reference is loose (each keeps normalization idempotent):
- `null` means "absent" for every optional field (backend, layout, priority, positions, anchor, and the rule fields
  delivery, inputMode, role, lifetime, depth, text, name, enabled).
- Lengths are JavaScript string lengths (UTF-16 code units), so the same documents pass here and in the reference;
  cutting a rule name never splits a surrogate pair. Strings must be valid Unicode (no lone surrogates).
- Integers may arrive as integral floats (`2.0`, as JSON from JavaScript may) and come out as ints; booleans are
  never numbers. Rule `enabled` must be a boolean when given (the reference reads anything but `false` as true).
- Unknown fields are errors, not silently dropped; the top-level `id` is accepted and left out of the output, as in
  the reference (stores and the built-ins attach it). Layout `overrides` may be omitted (= no overrides).
- Both spellings are accepted on input: `inputMode` / `input_mode`, `sourceId` / `source_id`,
  `positionId` / `position_id`; giving both spellings of one field is an error.
- Custom text over the limit answers status 413 (oversize), every other normalization failure 400.

The revision (`strategy_revision`) is the sha256 hex digest of the UTF-8 bytes of
`json.dumps(normalize_strategy(doc), sort_keys=True, ensure_ascii=False, separators=(",", ":"))`: key order, the
attached `id`, defaults written out or left implicit never change it; any change of content does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from assembly.errors import AssemblyError
from assembly.reading import join_path, js_cut, js_length, js_trim, whole_number

FORMAT = "dsh-tavern-request-assembly"
FORMAT_VERSION = 1

# Module names (rule kinds) of engine.md §5. Any kind matching KIND_PATTERN is accepted by normalization; a kind that
# no source serves is the assembler's business (reference A.10: a diagnostic, the rule is skipped).
MODULE_KINDS = (
    "native-system",
    "preset",
    "persona",
    "character",
    "worldbook",
    "history",
    "input",
    "phi",
    "custom",
    "dsh.text",
    "dsh.runtime-context",
    "dsh.sandbox-policy",
    "dsh.approval-policy",
)
# Kinds whose rules carry their own text: their default role is `user` and `preserve` means `system` (A.2).
TEXT_RULE_KINDS = ("custom", "dsh.text")

BACKENDS = ("native", "core")
LEGACY_BACKEND = "core"
PLACEMENTS = ("modules", "st", "native-roles", "native-slots")
ROLES = ("preserve", "system", "user", "assistant")
LIFETIMES = ("request", "snapshot")
DELIVERIES = ("context", "pre-step")
INPUT_MODES = ("source", "text")

LAYOUT_SOURCES = ("manual", "preset-slots")
LAYOUT_IDENTITIES = ("preserve", "position")
LAYOUT_FALLBACKS = ("source-order", "error")
SIDES = ("before", "after")
POSITION_PLACEMENTS = ("source", "list")

# Priority stages (A.5, A.10.2). `user` (manual positions) always wins and is never stored in the list; the others run
# in list order. Kept as data: a further stage id matching KIND_PATTERN is accepted and kept in place.
PRIORITY_STAGES = ("user", "preset", "resource", "default")
REQUIRED_PRIORITY_STAGES = ("preset", "resource", "default")
DEFAULT_PRIORITY = ("preset", "resource", "default")
LEGACY_PRIORITY_STRINGS = ("user", "preset")

MAX_RULES = 128
MAX_NAME_CHARS = 200
MAX_RULE_NAME_CHARS = 200
MAX_TEXT_CHARS = 524_288
MAX_DEPTH = 10_000
MAX_OVERRIDES = 128
MAX_OVERRIDE_REF_CHARS = 4096
MAX_POSITIONS = 512
MIN_PRIORITY_ITEMS = 3
MAX_PRIORITY_ITEMS = 128

RULE_ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,80}")
KIND_PATTERN = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.:/-]{0,159}")  # also source, position and priority stage ids

# The reference's error texts (A.2, A.5); our messages start with them and then say which field and what was expected.
MSG_FORMAT = "Unsupported assembly preset format/version"
MSG_NAME = "Preset name is required (max 200 characters)"
MSG_RULES = "Expected at most 128 assembly rules"
MSG_BACKEND = "Invalid assembly backend"
MSG_RULE_ID = "Rule ids must be unique"
MSG_KIND = "Invalid or duplicate module"
MSG_DELIVERY = "Invalid native user delivery"
MSG_ROLE = "Invalid role"
MSG_LIFETIME = "Invalid lifetime"
MSG_DEPTH = "Invalid insertion depth"
MSG_TEXT = "Custom text exceeds limit"
MSG_INPUT_MODE = "Invalid rule inputMode"
MSG_LAYOUT = "Invalid resource layout policy"
MSG_OVERRIDE = "Invalid layout override"
MSG_PRIORITY = "Invalid position priority order"
MSG_POSITION = "Invalid resource position"
MSG_POSITION_ANCHOR = "Invalid position anchor"
MSG_POSITIONS = "Expected at most 512 resource positions"
# Ours (the reference has no such checks).
MSG_RULE = "Invalid assembly rule"
MSG_UNKNOWN_FIELD = "Unknown strategy field"
MSG_TEXT_FIELD = "Invalid text"

class StrategyError(AssemblyError):
    """A strategy failed validation, or an unknown built-in was asked for.

    `code` is `STRATEGY_INVALID` for every normalization failure and `STRATEGY_NOT_FOUND` for an unknown built-in;
    `status` is 400 (413 for oversize custom text, 404 for an unknown built-in); `path` names the field
    (`rules[3].depth`, `layout.positions[0].anchor`; "" for the document itself); `detail` repeats it as data.
    """

    def __init__(self, message: str, *, path: str = "", code: str = "STRATEGY_INVALID", status: int = 400,
                 detail: dict[str, Any] | None = None) -> None:
        super().__init__(code, message, status=status, detail={"path": path, **(detail or {})})
        self.path = path


# --- small readers -------------------------------------------------------------------------------------------------


def describe_value(value: Any) -> str:
    """A short JSON-flavoured description of a bad value for error messages (never the whole value)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"the string {shown!r}"
    if isinstance(value, int) and value.bit_length() > 128:
        return "a very large number"  # repr() of a huge int is slow, and refused past 4300 digits
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} items"
    return f"a {type(value).__name__}"


def _fail(headline: str, path: str, expected: str, value: Any = None, *, got: bool = True, status: int = 400,
          **detail: Any) -> StrategyError:
    where = path or "the strategy"
    tail = f", got {describe_value(value)}" if got else ""
    return StrategyError(f"{headline}: {where} must be {expected}{tail}", path=path, status=status,
                         detail={"expected": expected, **detail})


def _is_unicode_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not text, and it could not be hashed or stored
        return False
    return True


def _is_one(value: Any) -> bool:
    return whole_number(value) == 1


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _matches(pattern: re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def _read(obj: Mapping[str, Any], path: str, *spellings: str, headline: str = MSG_UNKNOWN_FIELD) -> tuple[bool, Any]:
    """(present, value) of a field that may be spelled several ways; null counts as absent."""
    given = [name for name in spellings if name in obj]
    if len(given) > 1:
        raise _fail(headline, join_path(path, spellings[0]),
                    f"given in one spelling only ({' and '.join(given)} were both given)", got=False)
    if not given or obj[given[0]] is None:
        return False, None
    return True, obj[given[0]]


def _reject_unknown(obj: Mapping[str, Any], path: str, allowed: Iterable[str], what: str) -> None:
    allowed = tuple(allowed)
    for key in obj:
        if key not in allowed:
            raise StrategyError(
                f"{MSG_UNKNOWN_FIELD}: {join_path(path, str(key))} is not a field of {what} "
                f"(expected one of {', '.join(allowed)})",
                path=join_path(path, str(key)), detail={"expected": list(allowed)})


# --- normalization -------------------------------------------------------------------------------------------------

_TOP_FIELDS = ("format", "version", "name", "rules", "backend", "placement", "layout", "id")
_RULE_FIELDS = ("id", "kind", "enabled", "role", "lifetime", "depth", "text", "name", "delivery", "inputMode",
                "input_mode")
_LAYOUT_FIELDS = ("version", "source", "identity", "fallback", "overrides", "priority", "positions")
_OVERRIDE_FIELDS = ("target", "anchor", "side", "detach")
_POSITION_FIELDS = ("sourceId", "source_id", "positionId", "position_id", "enabled", "placement", "anchor")
_ANCHOR_FIELDS = ("sourceId", "source_id", "positionId", "position_id", "side")


def normalize_strategy(obj: Any) -> dict[str, Any]:
    """Validate a strategy document (reference A.2) and return its normalized form as a new plain JSON dict.

    The input is never mutated and nothing of it is shared with the result. See the module docstring for the shape.
    """
    # 1. format and version
    if not isinstance(obj, Mapping):
        raise _fail(MSG_FORMAT, "", f"a JSON object with format {FORMAT!r} and version 1", obj)
    if obj.get("format") != FORMAT:
        raise _fail(MSG_FORMAT, "format", repr(FORMAT), obj.get("format"))
    if not _is_one(obj.get("version")):
        raise _fail(MSG_FORMAT, "version", "1", obj.get("version"))

    # 2. name: the untrimmed length counts, the trimmed text is kept
    name = obj.get("name")
    if not isinstance(name, str) or not js_trim(name) or js_length(name) > MAX_NAME_CHARS:
        raise _fail(MSG_NAME, "name", f"a non-blank string of at most {MAX_NAME_CHARS} characters", name)
    if not _is_unicode_text(name):
        raise _fail(MSG_NAME, "name", "valid Unicode text (no lone surrogates)", got=False)

    # 3. rules: a list of at most 128
    rules = obj.get("rules")
    if not _is_list(rules) or len(rules) > MAX_RULES:
        raise _fail(MSG_RULES, "rules", f"a list of at most {MAX_RULES} rules", rules)

    # 4. backend
    has_backend, backend = _read(obj, "", "backend")
    if has_backend and not (isinstance(backend, str) and backend in BACKENDS):
        raise _fail(MSG_BACKEND, "backend", "absent, 'native' or 'core'", backend)

    # 5. layout
    has_layout, raw_layout = _read(obj, "", "layout")
    layout = _normalize_layout(raw_layout, "layout") if has_layout else None

    # 6. rules, in order
    normalized_rules: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    for index, rule in enumerate(rules):
        normalized_rules.append(_normalize_rule(rule, f"rules[{index}]", seen_ids))

    _reject_unknown(obj, "", _TOP_FIELDS, "a strategy")

    # 7. output; a layout decides the placement
    # The reference coerces any unknown placement (older spellings included) to `modules`.
    placement = obj.get("placement")
    placement = placement if isinstance(placement, str) and placement in PLACEMENTS else "modules"
    if layout is not None:
        placement = _layout_placement(backend if has_backend else LEGACY_BACKEND, layout)
    result: dict[str, Any] = {}
    if has_backend:
        result["backend"] = backend
    result.update(format=FORMAT, version=FORMAT_VERSION, name=js_trim(name), placement=placement)
    if layout is not None:
        result["layout"] = layout
    result["rules"] = normalized_rules
    return result


def _layout_placement(backend: str, layout: dict[str, Any]) -> str:
    """The placement an explicit layout implies (A.2 step 7, newest version); it replaces the stored one."""
    if backend == "native":
        slots = layout["source"] == "preset-slots" and layout["identity"] == "position"
        return "native-slots" if slots else "native-roles"
    return "st" if layout["source"] == "preset-slots" else "modules"


def stated_placement(document: Any, normalized: Mapping[str, Any]) -> str:
    """The placement a strategy document asks for itself, coerced as A.2 step 7 coerces it, before a layout replaces
    it (a built-in id states its own). dsh still reads it in two places: SillyTavern's rules follow a document that
    states `st` (not one a preset-slots layout turned into `st`), and native mapping keeps its module-order check for
    a document that states no native placement (A.8 step 7). A stored, normalized document states what it runs."""
    if not isinstance(document, Mapping):
        return normalized["placement"]
    placement = document.get("placement")
    return placement if isinstance(placement, str) and placement in PLACEMENTS else "modules"


def _normalize_rule(rule: Any, path: str, seen_ids: set[str]) -> dict[str, Any]:
    if not isinstance(rule, Mapping):
        raise _fail(MSG_RULE, path, "an object with at least id and kind", rule)

    rule_id = rule.get("id")
    if not _matches(RULE_ID_PATTERN, rule_id):
        raise _fail(MSG_RULE_ID, join_path(path, "id"), "1 to 80 characters of a-z A-Z 0-9 _ -", rule_id)
    if rule_id in seen_ids:
        raise _fail(MSG_RULE_ID, join_path(path, "id"), f"unique, but {rule_id!r} is already used by an earlier rule",
                    got=False)
    seen_ids.add(rule_id)

    kind = rule.get("kind")
    if not _matches(KIND_PATTERN, kind):
        raise _fail(MSG_KIND, join_path(path, "kind"),
                    "a module name: 1 to 160 characters of a-z A-Z 0-9 _ . : / -, starting with a letter or digit",
                    kind)

    has_delivery, delivery = _read(rule, path, "delivery")
    if has_delivery and not (isinstance(delivery, str) and delivery in DELIVERIES):
        raise _fail(MSG_DELIVERY, join_path(path, "delivery"), "absent, 'context' or 'pre-step'", delivery)

    has_role, role = _read(rule, path, "role")
    if kind in TEXT_RULE_KINDS:
        role = "user" if not has_role else ("system" if role == "preserve" else role)
    elif not has_role:
        role = "preserve"
    if not (isinstance(role, str) and role in ROLES):
        raise _fail(MSG_ROLE, join_path(path, "role"), "one of preserve, system, user, assistant", role)

    has_lifetime, lifetime = _read(rule, path, "lifetime")
    lifetime = lifetime if has_lifetime else "request"
    if not (isinstance(lifetime, str) and lifetime in LIFETIMES):
        raise _fail(MSG_LIFETIME, join_path(path, "lifetime"), "'request' or 'snapshot'", lifetime)

    _, depth = _read(rule, path, "depth")
    if depth is not None and not (whole_number(depth) is not None and 0 <= depth <= MAX_DEPTH):
        raise _fail(MSG_DEPTH, join_path(path, "depth"), f"null or an integer from 0 to {MAX_DEPTH}", depth)

    has_text, text = _read(rule, path, "text")
    text = text if has_text else ""
    if not isinstance(text, str):
        raise _fail(MSG_TEXT, join_path(path, "text"), f"a string of at most {MAX_TEXT_CHARS} characters", text)
    if js_length(text) > MAX_TEXT_CHARS:
        raise _fail(MSG_TEXT, join_path(path, "text"), f"at most {MAX_TEXT_CHARS} characters long", got=False,
                    status=413, length=js_length(text), limit=MAX_TEXT_CHARS)
    if not _is_unicode_text(text):
        raise _fail(MSG_TEXT_FIELD, join_path(path, "text"), "valid Unicode text (no lone surrogates)", got=False)

    has_mode, input_mode = _read(rule, path, "inputMode", "input_mode", headline=MSG_INPUT_MODE)
    if has_mode and not (isinstance(input_mode, str) and input_mode in INPUT_MODES):
        raise _fail(MSG_INPUT_MODE, join_path(path, "inputMode"), "absent, 'source' or 'text'", input_mode)

    has_enabled, enabled = _read(rule, path, "enabled")
    if has_enabled and not isinstance(enabled, bool):
        raise _fail(MSG_RULE, join_path(path, "enabled"), "a boolean", enabled)

    has_name, rule_name = _read(rule, path, "name")
    if has_name and not isinstance(rule_name, str):
        raise _fail(MSG_RULE, join_path(path, "name"), "a string", rule_name)
    if has_name and not _is_unicode_text(rule_name):
        raise _fail(MSG_TEXT_FIELD, join_path(path, "name"), "valid Unicode text (no lone surrogates)", got=False)

    _reject_unknown(rule, path, _RULE_FIELDS, "a rule")

    out: dict[str, Any] = {}
    if has_delivery:
        out["delivery"] = delivery
    if input_mode == "text":
        out["inputMode"] = "text"
    out.update(id=rule_id, kind=kind, enabled=enabled is not False, role=role, lifetime=lifetime,
               depth=None if depth is None else int(depth), text=text,
               name=js_cut(rule_name, MAX_RULE_NAME_CHARS) if has_name else "")
    return out


def _normalize_layout(value: Any, path: str) -> dict[str, Any]:
    """`normalizeLayout` (A.5): the policy, its block overrides, the priority list and the manual position rows."""
    if not isinstance(value, Mapping):
        raise _fail(MSG_LAYOUT, path, "an object with version, source, identity, fallback and overrides", value)
    if not _is_one(value.get("version")):
        raise _fail(MSG_LAYOUT, join_path(path, "version"), "1", value.get("version"))
    for field, allowed in (("source", LAYOUT_SOURCES), ("identity", LAYOUT_IDENTITIES),
                           ("fallback", LAYOUT_FALLBACKS)):
        found = value.get(field)
        if not (isinstance(found, str) and found in allowed):
            raise _fail(MSG_LAYOUT, join_path(path, field), f"one of {', '.join(allowed)}", found)
    has_overrides, overrides = _read(value, path, "overrides")
    overrides = overrides if has_overrides else []
    if not _is_list(overrides) or len(overrides) > MAX_OVERRIDES:
        raise _fail(MSG_LAYOUT, join_path(path, "overrides"), f"a list of at most {MAX_OVERRIDES} overrides", overrides)

    normalized_overrides = []
    targets: set[str] = set()
    for index, override in enumerate(overrides):
        normalized_overrides.append(_normalize_override(override, f"{path}.overrides[{index}]", targets))

    has_priority, priority = _read(value, path, "priority")
    normalized_priority = normalize_priority(priority, join_path(path, "priority")) if has_priority else None

    has_positions, positions = _read(value, path, "positions")
    normalized_positions = normalize_positions(positions, join_path(path, "positions")) if has_positions else None

    _reject_unknown(value, path, _LAYOUT_FIELDS, "a layout")

    out: dict[str, Any] = {
        "version": 1,
        "source": value["source"],
        "identity": value["identity"],
        "fallback": value["fallback"],
        "overrides": normalized_overrides,
        "priority": normalized_priority if normalized_priority is not None else list(DEFAULT_PRIORITY),
    }
    if normalized_positions is not None:
        out["positions"] = normalized_positions
    return out


def _normalize_override(override: Any, path: str, targets: set[str]) -> dict[str, Any]:
    """A block override (A.5, A.11): move block `target` before or after block `anchor`; `detach` frees a slot."""
    if not isinstance(override, Mapping):
        raise _fail(MSG_OVERRIDE, path, "an object {target, anchor, side, detach}", override)
    for field in ("target", "anchor"):
        ref = override.get(field)
        if not isinstance(ref, str) or not 1 <= js_length(ref) <= MAX_OVERRIDE_REF_CHARS:
            raise _fail(MSG_OVERRIDE, join_path(path, field), f"a block id of 1 to {MAX_OVERRIDE_REF_CHARS} characters",
                        ref)
        if not _is_unicode_text(ref):
            raise _fail(MSG_OVERRIDE, join_path(path, field), "valid Unicode text (no lone surrogates)", got=False)
    target, anchor = override["target"], override["anchor"]
    if target == anchor:
        raise _fail(MSG_OVERRIDE, join_path(path, "anchor"), "a block other than the target itself", anchor)
    if target in targets:
        raise _fail(MSG_OVERRIDE, join_path(path, "target"), "unique among the overrides (one override per block)",
                    target)
    targets.add(target)
    side = override.get("side")
    if not (isinstance(side, str) and side in SIDES):
        raise _fail(MSG_OVERRIDE, join_path(path, "side"), "'before' or 'after'", side)
    detach = override.get("detach")
    if not isinstance(detach, bool):
        raise _fail(MSG_OVERRIDE, join_path(path, "detach"), "a boolean", detach)
    _reject_unknown(override, path, _OVERRIDE_FIELDS, "a layout override")
    return {"target": target, "anchor": anchor, "side": side, "detach": detach}


def normalize_priority(value: Any, path: str = "layout.priority") -> list[str] | None:
    """`normalizePriority` (A.5). None stays None (the caller applies DEFAULT_PRIORITY); the legacy strings
    'user' and 'preset' mean the default list; a list must hold preset, resource and default once each, 3..128
    stage ids in all, and loses its `user` entry (manual positions always win)."""
    if value is None:
        return None
    if isinstance(value, str) and value in LEGACY_PRIORITY_STRINGS:
        return list(DEFAULT_PRIORITY)
    if not _is_list(value) or not MIN_PRIORITY_ITEMS <= len(value) <= MAX_PRIORITY_ITEMS:
        raise _fail(MSG_PRIORITY, path, f"'user', 'preset' or a list of {MIN_PRIORITY_ITEMS} to "
                    f"{MAX_PRIORITY_ITEMS} stage ids", value)
    seen: set[str] = set()
    for index, stage in enumerate(value):
        if not _matches(KIND_PATTERN, stage):
            raise _fail(MSG_PRIORITY, f"{path}[{index}]", "a stage id (user, preset, resource, default, or a "
                        "registered stage id)", stage)
        if stage in seen:
            raise _fail(MSG_PRIORITY, f"{path}[{index}]", f"listed once, but {stage!r} repeats", got=False)
        seen.add(stage)
    missing = [stage for stage in REQUIRED_PRIORITY_STAGES if stage not in seen]
    if missing:
        raise _fail(MSG_PRIORITY, path, f"a list containing preset, resource and default (missing {', '.join(missing)})",
                    got=False)
    return [stage for stage in value if stage != "user"]


def normalize_positions(value: Any, path: str = "layout.positions") -> list[dict[str, Any]]:
    """`normalizePositions` (A.5): the resource position rows, each `sourceId#positionId` once."""
    if not _is_list(value) or len(value) > MAX_POSITIONS:
        raise _fail(MSG_POSITIONS, path, f"a list of at most {MAX_POSITIONS} position rows", value)
    rows: list[dict[str, Any]] = []
    keys: set[str] = set()
    for index, entry in enumerate(value):
        where = f"{path}[{index}]"
        if not isinstance(entry, Mapping):
            raise _fail(MSG_POSITION, where, "an object {sourceId, positionId, enabled, placement, anchor?}", entry)
        _, source_id = _read(entry, where, "sourceId", "source_id", headline=MSG_POSITION)
        if not _matches(KIND_PATTERN, source_id):
            raise _fail(MSG_POSITION, join_path(where, "sourceId"), "a source id (module name)", source_id)
        _, position_id = _read(entry, where, "positionId", "position_id", headline=MSG_POSITION)
        if not _matches(KIND_PATTERN, position_id):
            raise _fail(MSG_POSITION, join_path(where, "positionId"), "a position id", position_id)
        enabled = entry.get("enabled")
        if not isinstance(enabled, bool):
            raise _fail(MSG_POSITION, join_path(where, "enabled"), "a boolean", enabled)
        placement = entry.get("placement")
        if not (isinstance(placement, str) and placement in POSITION_PLACEMENTS):
            raise _fail(MSG_POSITION, join_path(where, "placement"), "'source' or 'list'", placement)
        key = position_key(source_id, position_id)
        if key in keys:
            raise _fail(MSG_POSITION, where, f"the only row for {key}", got=False)
        keys.add(key)
        row: dict[str, Any] = {"sourceId": source_id, "positionId": position_id, "enabled": enabled,
                               "placement": placement}
        has_anchor, anchor = _read(entry, where, "anchor")
        if has_anchor:
            row["anchor"] = _normalize_position_anchor(anchor, join_path(where, "anchor"), key)
        _reject_unknown(entry, where, _POSITION_FIELDS, "a position row")
        rows.append(row)
    return rows


def _normalize_position_anchor(anchor: Any, path: str, own_key: str) -> str | dict[str, Any]:
    if anchor == "end":
        return "end"
    expected = "'end' or an object {sourceId, positionId, side} naming another position"
    if not isinstance(anchor, Mapping):
        raise _fail(MSG_POSITION_ANCHOR, path, expected, anchor)
    _, source_id = _read(anchor, path, "sourceId", "source_id", headline=MSG_POSITION_ANCHOR)
    _, position_id = _read(anchor, path, "positionId", "position_id", headline=MSG_POSITION_ANCHOR)
    side = anchor.get("side")
    if not (_matches(KIND_PATTERN, source_id) and _matches(KIND_PATTERN, position_id)
            and isinstance(side, str) and side in SIDES):
        raise _fail(MSG_POSITION_ANCHOR, path, expected, anchor)
    if position_key(source_id, position_id) == own_key:
        raise _fail(MSG_POSITION_ANCHOR, path, f"another position than the row itself ({own_key})", got=False)
    _reject_unknown(anchor, path, _ANCHOR_FIELDS, "a position anchor")
    return {"sourceId": source_id, "positionId": position_id, "side": side}


# --- revision and strategy-level reads -----------------------------------------------------------------------------


def strategy_revision(strategy: Any) -> str:
    """The revision of a strategy: sha256 hex of its canonical JSON (UTF-8).

    The document is normalized first, so an attached `id` (built-ins, stores), key order or implicit defaults never
    change the revision; an invalid document raises StrategyError."""
    return normalized_strategy_revision(normalize_strategy(strategy))


def normalized_strategy_revision(normalized: Mapping[str, Any]) -> str:
    """`strategy_revision` of a document `normalize_strategy` returned, without normalizing it a second time
    (normalization is idempotent, so the answer is the same)."""
    return hashlib.sha256(_canonical_json(normalized).encode("utf-8")).hexdigest()


def _canonical_json(normalized: Mapping[str, Any]) -> str:
    return json.dumps(normalized, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def strategy_backend(strategy: Mapping[str, Any]) -> str:
    """The backend a normalized strategy runs on: its `backend`, or `core` when absent (legacy, A.6 `presetBackend`)."""
    return strategy.get("backend") or LEGACY_BACKEND


def position_key(source_id: str, position_id: str) -> str:
    return f"{source_id}#{position_id}"


def priority_order(strategy: Mapping[str, Any]) -> list[str]:
    """The automatic position stages in order: the layout's priority list, or the default one (A.5)."""
    layout = strategy.get("layout")
    priority = layout.get("priority") if isinstance(layout, Mapping) else None
    return list(priority) if _is_list(priority) else list(DEFAULT_PRIORITY)


