"""Typed context fragments (engine.md §3, seed 003).

A fragment is one self-describing piece of model input: metadata fixed once (id, role, owning source, trust,
lifetime, a hard size bound, a description for humans) plus a synchronous `format(input)` that produces the value for
one request, either text or a JSON object. `define_context_fragments` validates the declarations up front and returns
a builder; each request then only supplies the changing input.

Sizes are JSON characters: `len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))`. For a string value
this is its JSON-encoded length, quotes and escapes included ("ab" counts 4; an empty string counts 2). Bounds are
hard: a value over its `max_chars`, or a total over `max_input_chars`, raises; nothing is ever truncated.

Builder:
- `plan(input=None, max_input_chars=None)` -> `FragmentPlan`: the effective `max_input_chars` and the fragments'
  metadata in declaration order. It never calls `format` (planning has no side effects); `input` is accepted so that
  `plan` and `build` take the same arguments.
- `fragments(input)` -> `list[ContextFragment]`: every fragment formatted and measured, each checked against its own
  `max_chars` (the total bound belongs to `build`, which may override it).
- `build(input, max_input_chars=None)` -> `FragmentBuild`: the expanded fragments, the total checked against
  `max_input_chars` (the override, when given, replaces the declared bound for this call), and one message per
  non-empty fragment (a string value is sent as is; a dict value as compact JSON text). A fragment is empty when its
  value is the empty string; `{}` is sent as "{}". `total_chars` sums every fragment's size, empty ones included.

A dict value is kept as the decoded form of exactly the JSON that is measured and sent, so the expanded fragment is
an independent snapshot (tuples become lists; non-string keys become their JSON strings, and keys that collide that
way are an error).

Error codes (`FragmentError.code`; `status` 413 for the two size codes, 400 otherwise; `fragment_id` and `field`
name the culprit; the message says what was expected):
- FRAGMENT_INVALID_CONFIGS: `configs` is not a list of fragment configs.
- FRAGMENT_INVALID_CONFIG: a config is not a mapping.
- FRAGMENT_UNKNOWN_FIELD / FRAGMENT_MISSING_FIELD: a field outside the declaration / a required field absent.
- FRAGMENT_CONFLICTING_FIELD: both spellings of one field (`source_id` and `sourceId`) given.
- FRAGMENT_INVALID_ID (pattern `^[a-z][a-zA-Z0-9:._-]*$`), FRAGMENT_DUPLICATE_ID.
- FRAGMENT_INVALID_ROLE (system|user), FRAGMENT_INVALID_SOURCE_ID (non-empty string),
  FRAGMENT_INVALID_TRUST (system|operator|user|tool), FRAGMENT_INVALID_LIFETIME (turn|session|static),
  FRAGMENT_INVALID_MAX_CHARS (integer 1..2**53-1, bool rejected), FRAGMENT_INVALID_DESCRIPTION (string or absent),
  FRAGMENT_INVALID_FORMAT (not callable).
- FRAGMENT_TRUST_ROLE: trust user or tool with role system (user and tool content never becomes a system message).
- FRAGMENT_ASYNC_FORMAT: `format` is a coroutine function, or returned an awaitable (a coroutine is closed unawaited).
- FRAGMENT_INVALID_MAX_INPUT_CHARS: the builder's bound or a per-call override is not an integer 1..2**53-1.
- FRAGMENT_FORMAT_FAILED: `format` raised (the original exception is the `__cause__`).
- FRAGMENT_INVALID_VALUE: `format` returned something other than a string or a JSON-serializable dict.
- FRAGMENT_TOO_LARGE: one value over its `max_chars`.
- FRAGMENT_INPUT_TOO_LARGE: the total over `max_input_chars`.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assembly.errors import CodedError
from assembly.reading import rename_fields

MAX_SAFE_INTEGER = 2**53 - 1

FragmentRole = Literal["system", "user"]
FragmentTrust = Literal["system", "operator", "user", "tool"]
FragmentLifetime = Literal["turn", "session", "static"]

ROLES = ("system", "user")
TRUSTS = ("system", "operator", "user", "tool")
LIFETIMES = ("turn", "session", "static")
# Content written by the end user or returned by a tool must never speak with the system's voice.
UNTRUSTED_FOR_SYSTEM = ("user", "tool")

_ID_PATTERN = re.compile(r"[a-z][a-zA-Z0-9:._-]*")

# Canonical field name -> accepted spellings (snake_case first, then the seed's camelCase).
_FIELD_SPELLINGS = {
    "id": ("id",),
    "role": ("role",),
    "source_id": ("source_id", "sourceId"),
    "trust": ("trust",),
    "lifetime": ("lifetime",),
    "max_chars": ("max_chars", "maxChars"),
    "description": ("description",),
    "format": ("format",),
}
_REQUIRED_FIELDS = ("id", "role", "source_id", "trust", "lifetime", "max_chars", "format")
_SPELLING_TO_FIELD = {spelling: field for field, spellings in _FIELD_SPELLINGS.items() for spelling in spellings}


class FragmentError(CodedError):
    """A fragment declaration, value or size bound is wrong; `code` is stable, the message names the fragment."""

    def __init__(self, code: str, message: str, *, fragment_id: str | None = None, field: str | None = None,
                 status: int = 400, **detail: Any):
        super().__init__(code, message, status=status, detail={"fragment_id": fragment_id, "field": field, **detail})
        self.fragment_id = fragment_id
        self.field = field


class FragmentSpec(BaseModel):
    """A fragment's declared metadata (everything but `format`)."""

    model_config = ConfigDict(frozen=True)

    id: str
    role: FragmentRole
    source_id: str
    trust: FragmentTrust
    lifetime: FragmentLifetime
    max_chars: int
    description: str | None = None


class ContextFragment(FragmentSpec):
    """A fragment formatted for one input: its value and the value's size in JSON characters."""

    value: str | dict[str, Any]
    chars: int


class FragmentMessage(BaseModel):
    """One message of the built input; it keeps the fragment's provenance and trust (never its description)."""

    model_config = ConfigDict(frozen=True)

    role: FragmentRole
    content: str
    fragment_id: str
    source_id: str
    trust: FragmentTrust


class FragmentPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_input_chars: int
    fragments: list[FragmentSpec]


class FragmentBuild(BaseModel):
    model_config = ConfigDict(frozen=True)

    messages: list[FragmentMessage]
    fragments: list[ContextFragment]
    max_input_chars: int
    total_chars: int


@dataclass(frozen=True)
class _Declaration:
    spec: FragmentSpec
    format: Callable[[Any], Any]


def json_chars(value: Any) -> int:
    """Size of a value in JSON characters (compact separators, non-ASCII kept as is)."""
    return len(_compact_json(value))


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _is_safe_positive_int(value: Any) -> bool:
    return type(value) is int and 1 <= value <= MAX_SAFE_INTEGER


def _label(fragment_id: Any, index: int) -> str:
    if isinstance(fragment_id, str) and fragment_id:
        return f"fragment {fragment_id!r}"
    return f"fragment #{index}"


def _check_max_input_chars(value: Any, where: str) -> int:
    if not _is_safe_positive_int(value):
        raise FragmentError(
            "FRAGMENT_INVALID_MAX_INPUT_CHARS",
            f"{where}: max_input_chars must be an integer from 1 to {MAX_SAFE_INTEGER}, got {value!r}",
            field="max_input_chars",
        )
    return value


def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    # An object whose __call__ is `async def` (plain functions' __call__ is a wrapper and answers False).
    call = type(fn).__call__
    return inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)


def _read_fields(config: Mapping[str, Any], index: int) -> dict[str, Any]:
    raw_id = config.get("id")
    known_id = raw_id if isinstance(raw_id, str) else None
    label = _label(raw_id, index)

    def unknown(key: Any) -> FragmentError:
        return FragmentError("FRAGMENT_UNKNOWN_FIELD",
                             f"{label}: unknown field {key!r}; expected one of {', '.join(_SPELLING_TO_FIELD)}",
                             fragment_id=known_id, field=str(key))

    def twice(field: str, _first: Any, _key: Any) -> FragmentError:
        return FragmentError(
            "FRAGMENT_CONFLICTING_FIELD",
            f"{label}: field {field} is given twice ({' and '.join(_FIELD_SPELLINGS[field])}); give one spelling",
            fragment_id=known_id, field=field)

    fields = rename_fields(config, _SPELLING_TO_FIELD, unknown=unknown, twice=twice)
    for field in _REQUIRED_FIELDS:
        if field not in fields:
            raise FragmentError("FRAGMENT_MISSING_FIELD", f"{label}: required field {field} is missing",
                                fragment_id=known_id, field=field)
    return fields


def _declare(config: Any, index: int, seen_ids: set[str]) -> _Declaration:
    if not isinstance(config, Mapping):
        raise FragmentError("FRAGMENT_INVALID_CONFIG",
                            f"fragment #{index}: expected a mapping of fragment fields, got {type(config).__name__}")
    fields = _read_fields(config, index)

    fragment_id = fields["id"]
    if not isinstance(fragment_id, str) or not _ID_PATTERN.fullmatch(fragment_id):
        raise FragmentError("FRAGMENT_INVALID_ID",
                            f"fragment #{index}: id must match ^[a-z][a-zA-Z0-9:._-]*$, got {fragment_id!r}",
                            field="id")
    if fragment_id in seen_ids:
        raise FragmentError("FRAGMENT_DUPLICATE_ID", f"fragment {fragment_id!r}: id is already used by another fragment",
                            fragment_id=fragment_id, field="id")
    label = f"fragment {fragment_id!r}"

    def invalid(code: str, field: str, expected: str) -> FragmentError:
        return FragmentError(code, f"{label}: {field} must be {expected}, got {fields[field]!r}",
                             fragment_id=fragment_id, field=field)

    if fields["role"] not in ROLES:
        raise invalid("FRAGMENT_INVALID_ROLE", "role", "one of system, user")
    if not isinstance(fields["source_id"], str) or not fields["source_id"]:
        raise invalid("FRAGMENT_INVALID_SOURCE_ID", "source_id", "a non-empty string")
    if fields["trust"] not in TRUSTS:
        raise invalid("FRAGMENT_INVALID_TRUST", "trust", "one of " + ", ".join(TRUSTS))
    if fields["lifetime"] not in LIFETIMES:
        raise invalid("FRAGMENT_INVALID_LIFETIME", "lifetime", "one of " + ", ".join(LIFETIMES))
    if not _is_safe_positive_int(fields["max_chars"]):
        raise invalid("FRAGMENT_INVALID_MAX_CHARS", "max_chars", f"an integer from 1 to {MAX_SAFE_INTEGER}")
    description = fields.get("description")
    if description is not None and not isinstance(description, str):
        raise invalid("FRAGMENT_INVALID_DESCRIPTION", "description", "a string")
    fmt = fields["format"]
    if not callable(fmt):
        raise invalid("FRAGMENT_INVALID_FORMAT", "format", "a function input -> str | dict")
    if _is_async_callable(fmt):
        raise FragmentError("FRAGMENT_ASYNC_FORMAT",
                            f"{label}: format must be synchronous, got an async function {fmt!r}",
                            fragment_id=fragment_id, field="format")
    if fields["trust"] in UNTRUSTED_FOR_SYSTEM and fields["role"] == "system":
        raise FragmentError(
            "FRAGMENT_TRUST_ROLE",
            f"{label}: content with trust {fields['trust']} cannot take role system; use role user",
            fragment_id=fragment_id, field="role")

    seen_ids.add(fragment_id)
    spec = FragmentSpec(id=fragment_id, role=fields["role"], source_id=fields["source_id"], trust=fields["trust"],
                        lifetime=fields["lifetime"], max_chars=fields["max_chars"], description=description)
    return _Declaration(spec=spec, format=fmt)


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("two keys encode to the same JSON key")
    return result


class ContextFragmentBuilder:
    """Validated fragment declarations bound to a default `max_input_chars`; see the module docstring."""

    def __init__(self, declarations: Sequence[_Declaration], max_input_chars: int):
        self._declarations = tuple(declarations)
        self.max_input_chars = max_input_chars

    @property
    def specs(self) -> tuple[FragmentSpec, ...]:
        return tuple(declaration.spec for declaration in self._declarations)

    def plan(self, input: Any = None, max_input_chars: int | None = None) -> FragmentPlan:
        limit = self._effective_limit(max_input_chars)
        return FragmentPlan(max_input_chars=limit, fragments=list(self.specs))

    def fragments(self, input: Any) -> list[ContextFragment]:
        return [self._expand(declaration, input)[0] for declaration in self._declarations]

    def build(self, input: Any, max_input_chars: int | None = None) -> FragmentBuild:
        limit = self._effective_limit(max_input_chars)
        expanded = [self._expand(declaration, input) for declaration in self._declarations]
        total = sum(fragment.chars for fragment, _ in expanded)
        if total > limit:
            sizes = ", ".join(f"{fragment.id}={fragment.chars}" for fragment, _ in expanded)
            raise FragmentError("FRAGMENT_INPUT_TOO_LARGE",
                                f"fragments total {total} JSON characters, over max_input_chars {limit} ({sizes})",
                                field="max_input_chars", status=413, total_chars=total, max_input_chars=limit)
        messages = [
            FragmentMessage(role=fragment.role, content=content, fragment_id=fragment.id,
                            source_id=fragment.source_id, trust=fragment.trust)
            for fragment, content in expanded
            if content != ""
        ]
        return FragmentBuild(messages=messages, fragments=[fragment for fragment, _ in expanded],
                             max_input_chars=limit, total_chars=total)

    def _effective_limit(self, override: int | None) -> int:
        if override is None:
            return self.max_input_chars
        return _check_max_input_chars(override, "build")

    def _expand(self, declaration: _Declaration, input: Any) -> tuple[ContextFragment, str]:
        """Format one fragment; returns it and the message content it would send."""
        spec = declaration.spec
        label = f"fragment {spec.id!r}"
        try:
            raw = declaration.format(input)
        except Exception as exc:  # any formatter failure is reported against its fragment
            raise FragmentError("FRAGMENT_FORMAT_FAILED", f"{label}: format raised {type(exc).__name__}: {exc}",
                                fragment_id=spec.id, field="format") from exc
        if inspect.isawaitable(raw):
            if inspect.iscoroutine(raw):
                raw.close()  # never awaited; closing it avoids the "never awaited" warning
            raise FragmentError("FRAGMENT_ASYNC_FORMAT",
                                f"{label}: format must return a value synchronously, got an awaitable "
                                f"{type(raw).__name__}", fragment_id=spec.id, field="format")

        if isinstance(raw, str):
            value: str | dict[str, Any] = str(raw)
            chars = json_chars(value)
            content = value
        elif isinstance(raw, dict):
            try:
                content = _compact_json(raw)
                value = json.loads(content, object_pairs_hook=_reject_duplicate_keys)
            except (TypeError, ValueError) as exc:
                raise FragmentError("FRAGMENT_INVALID_VALUE",
                                    f"{label}: format must return a string or a JSON-serializable dict; {exc}",
                                    fragment_id=spec.id, field="format") from exc
            chars = len(content)
        else:
            raise FragmentError("FRAGMENT_INVALID_VALUE",
                                f"{label}: format must return a string or a dict, got {type(raw).__name__}",
                                fragment_id=spec.id, field="format")

        if chars > spec.max_chars:
            raise FragmentError("FRAGMENT_TOO_LARGE",
                                f"{label}: value is {chars} JSON characters, over its max_chars {spec.max_chars}",
                                fragment_id=spec.id, field="max_chars", status=413, chars=chars,
                                max_chars=spec.max_chars)
        fragment = ContextFragment(**spec.model_dump(), value=value, chars=chars)
        return fragment, content


def define_context_fragments(configs: Sequence[Mapping[str, Any]], *, max_input_chars: int) -> ContextFragmentBuilder:
    """Validate fragment declarations once and return their builder (engine.md §3)."""
    if isinstance(configs, (str, bytes, Mapping)) or not isinstance(configs, Sequence):
        raise FragmentError("FRAGMENT_INVALID_CONFIGS",
                            f"define_context_fragments: configs must be a list of fragment configs, "
                            f"got {type(configs).__name__}")
    limit = _check_max_input_chars(max_input_chars, "define_context_fragments")
    seen_ids: set[str] = set()
    declarations = [_declare(config, index, seen_ids) for index, config in enumerate(configs)]
    return ContextFragmentBuilder(declarations, limit)
