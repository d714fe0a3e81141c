"""The one strict reader of untrusted JSON: values read by path, refused loudly with the path and what was expected.

A value of the wrong type is an `ImportInvalid` naming its JSON path, never a silent default. `Reader` reads an
object field by field in several spellings (snake_case, camelCase, aliases) and keeps what it did not use. The
JavaScript string helpers are here too: SillyTavern's rules trim and sort like JavaScript, not like Python.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from assembly.errors import CodedError

MAX_IMPORT_BYTES = 5 * 1024 * 1024  # uploads (quality.md "Bad input")
MAX_JSON_DEPTH = 64  # nested lists/objects; deeper JSON breaks rendering and copying far from where it came in


class ImportInvalid(CodedError, ValueError):
    """An importer refused its input: `path` is the JSON path of the offending value ("" for the whole input)."""

    code = "IMPORT_INVALID"

    def __init__(self, path: str, expected: str, *, got: Any = None, has_got: bool = False, status: int = 400):
        where = path or "the input"
        message = f"{where}: expected {expected}"
        if has_got:
            message += f", got {describe(got)}"
        super().__init__(self.code, message, status=status, detail={"path": path, "expected": expected})
        self.path = path
        self.expected = expected


def describe(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}.get(
        type(value), type(value).__name__
    )
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return f"{kind} of {len(value)} item(s)"
    if type(value) is int and value.bit_length() > 128:
        return "a very large integer"  # repr() of a huge int is slow, and refused past 4300 digits
    text = repr(value)
    return f"{kind} {text[:60]}{'...' if len(text) > 60 else ''}"


def invalid(path: str, expected: str, value: Any, *, status: int = 400) -> ImportInvalid:
    return ImportInvalid(path, expected, got=value, has_got=True, status=status)


# -------------------------------------------------------------------------------------------------- unsafe input


@dataclass(frozen=True)
class UnsafeValue:
    """Where a decoded JSON value breaks the input rules (`path`) and what was expected there."""

    path: str
    expected: str


_SURROGATE = re.compile("[\ud800-\udfff]")


def unsafe_text(text: str, *, nul: bool = True) -> str | None:
    """What is wrong with a string a store or an encoder would choke on (NUL, a lone surrogate), or None. `nul=False`
    lets NUL pass (valid JSON text; only a store like PostgreSQL refuses it)."""
    if nul and "\x00" in text:
        return "text without NUL characters (\\u0000)"
    surrogate = _SURROGATE.search(text)
    if surrogate:
        return f"text without lone surrogates (\\u{ord(surrogate.group()):04x}; send the character itself)"
    return None


def find_unsafe(value: Any, path: str = "", *, max_depth: int = MAX_JSON_DEPTH, nul: bool = True
                ) -> UnsafeValue | None:
    """The first place in decoded JSON with a NUL (unless `nul=False`) or lone surrogate in a string or key, a NaN
    or infinite number, or lists/objects nested deeper than `max_depth`; None when the value is safe. Iterative, so
    depth is no risk."""
    # Nearly every input is safe: one pass without paths answers that; only a refusal walks again to name the place.
    strings: list[Any] = []
    if gather_strings(value, 0, max_depth, strings):
        try:
            safe = texts_are_safe(strings, nul=nul)
        except TypeError:  # a key that is not a string: the walk below decides
            safe = False
        if safe:
            return None
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = unsafe_text(item, nul=nul)
            if problem:
                return UnsafeValue(where or "the input", problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return UnsafeValue(where or "the input", "a finite number (not NaN or Infinity)")
        elif isinstance(item, (dict, list)):
            if depth >= max_depth:
                return UnsafeValue(where or "the input", f"JSON nested at most {max_depth} levels deep")
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in reversed(list(children)):
                if isinstance(key, str) and unsafe_text(key, nul=nul):
                    # The path is echoed in the error: spell the bad key with escapes, never the raw characters.
                    return UnsafeValue(join_path(where, ascii(key)[1:-1]), unsafe_text(key, nul=nul) or "")
                stack.append((child, join_path(where, key), depth + 1))
    return None


def texts_are_safe(texts: list[str], *, nul: bool = True) -> bool:
    """No string of `texts` has a lone surrogate (nor NUL, unless `nul=False`): what `find_unsafe` asks of each.
    Many texts are checked a few hundred at a time: one text of a whole long chat (and its encoding) was fresh memory
    the size of the chat, twice, and faulting it in cost more than the check."""
    if len(texts) > _TEXTS_AT_ONCE:
        return all(texts_are_safe(texts[start:start + _TEXTS_AT_ONCE], nul=nul)
                   for start in range(0, len(texts), _TEXTS_AT_ONCE))
    text = "".join(texts)
    if nul and "\x00" in text:
        return False
    if text.isascii():
        return True
    try:  # strict UTF-16 refuses exactly the surrogate code points, at copying speed (a regex search took 5 times as long)
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return False
    return True


_TEXTS_AT_ONCE = 256


def gather_strings(item: Any, depth: int, max_depth: int, strings: list[Any]) -> bool:
    """Every string and every key in `item` appended to `strings` (a key that is not a string too: joining them
    then fails, and the caller walks again); False at a non-finite number or too deep a nesting.
    Recursive: the depth is bounded by `max_depth`."""
    if isinstance(item, dict):
        if depth >= max_depth:
            return False
        strings += item
        children: Any = item.values()
    elif isinstance(item, list):
        if depth >= max_depth:
            return False
        children = item
    elif isinstance(item, str):
        strings.append(item)
        return True
    elif isinstance(item, float):
        return math.isfinite(item)
    else:
        return True
    append = strings.append
    for child in children:
        kind = type(child)  # JSON's own types by identity first; a subclass of one is looked at below
        if kind is str:
            append(child)
        elif kind is dict and depth + 1 < max_depth:  # an object (a message, a prompt): its leaves without a call
            strings += child
            for value in child.values():
                kind = type(value)
                if kind is str:
                    append(value)
                elif kind is not int and kind is not bool and value is not None and not gather_strings(
                        value, depth + 2, max_depth, strings):
                    return False
        elif kind is dict or kind is list:
            if not gather_strings(child, depth + 1, max_depth, strings):
                return False
        elif kind is float:
            if not math.isfinite(child):
                return False
        elif kind is int or kind is bool or child is None:
            continue
        elif isinstance(child, str):
            append(child)
        elif isinstance(child, (dict, list, float)) and not gather_strings(child, depth + 1, max_depth, strings):
            return False
    return True


# -------------------------------------------------------------------------------------------------- values

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")  # SillyTavern's numbers 0, 1, 2 in this order


class Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = Missing()
REQUIRED: Any = object()


def join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def spellings(name: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    """A field's spellings in the order they are read: its name, the name in camelCase, the aliases."""
    if not aliases and "_" not in name:
        return (name,)
    camel = camel_case(name) if "_" in name else name
    if not aliases:
        return (name,) if camel == name else (name, camel)
    return tuple(dict.fromkeys((name, camel, *aliases)))


_ATOMS = frozenset((str, int, float, bool, type(None)))


class Reader:
    """A JSON object read field by field. It remembers what it used so the rest can be kept, and it refuses two
    spellings of one field with different values (nothing is picked silently)."""

    __slots__ = ("data", "path", "used", "fallback")

    def __init__(self, data: dict[str, Any], path: str, fallback: Reader | None = None, used: Iterable[str] = ()):
        self.data = data
        self.path = path
        self.used: set[str] = set(used)  # the keys read (a reader of a known shape passes those it reads at once)
        self.fallback = fallback

    def get(self, name: str, *aliases: str) -> tuple[Any, str]:
        """The field's value and its path: the first spelling given with a value (MISSING when none is given; None
        when one is given as null). A second spelling given with another value than the first is refused."""
        return self.read(spellings(name, aliases) if aliases or "_" in name else (name,))

    def read(self, keys: tuple[str, ...]) -> tuple[Any, str]:
        """`get` with the field's spellings spelled out (`spellings(name, aliases)`, the name first): readers of
        many objects keep them as module constants."""
        data, path = self.data, self.path
        if len(keys) == 1:  # one spelling: the name itself (most fields)
            key = keys[0]
            if key in data:
                value = data[key]
                self.used.add(key)
                if value is not None or self.fallback is None:
                    return value, f"{path}.{key}" if path else key
            elif self.fallback is None:
                return MISSING, f"{path}.{key}" if path else key
        first_key, first_value, hit_key, hit = None, None, None, MISSING
        for key in keys:
            if key not in data:
                continue
            value = data[key]
            self.used.add(key)
            if first_key is None:
                first_key, first_value = key, value
            elif value is not None and first_value is not None and value != first_value:
                raise invalid(join_path(path, key), f"the same value as '{first_key}' (both are given)", value)
            if hit is MISSING and value is not None:
                hit_key, hit = key, value
        if hit is not MISSING:
            return hit, f"{path}.{hit_key}" if path else hit_key
        if self.fallback is not None:
            value, where = self.fallback.read(keys)
            if value is not MISSING:
                return value, where
        if first_key is not None:
            return None, join_path(path, first_key)
        return MISSING, join_path(path, keys[0])

    def value(self, keys: tuple[str, ...], key: str | None) -> tuple[Any, str]:
        """`read(keys)` for an object whose shape its reader worked out: `key` is the field's one spelling in it (and
        none in the fallback), taken at once (the reader counts it as used); None reads the field by `keys`."""
        if key is None:
            return self.read(keys)
        return self.data[key], f"{self.path}.{key}" if self.path else key

    def leftovers(self, *skip: str) -> dict[str, Any]:
        """The fields not read, as copies (a string, number, boolean or null is its own copy)."""
        if self.data.keys() <= self.used:  # every field was read (the usual object): nothing to walk
            return {}
        return {k: v if type(v) in _ATOMS else copy.deepcopy(v) for k, v in self.data.items()
                if k not in self.used and k not in skip}

    def reject_leftovers(self, expected: Iterable[str]) -> None:
        for key in self.data:
            if key not in self.used:
                raise ImportInvalid(join_path(self.path, str(key)), f"one of the fields {', '.join(expected)}")


def field_keys(keys: tuple[str, ...], fallback_keys: tuple[str, ...], field_of: Mapping[str, str]
               ) -> dict[str, str | None]:
    """Each field an object gives (`field_of`: spelling -> field) with the one key that holds it, or None where a
    `Reader` must decide: a field spelled twice, or given in the fallback object too."""
    fields: dict[str, str | None] = {}
    for key in keys:
        name = field_of.get(key)
        if name is not None:
            fields[name] = None if name in fields else key
    for key in fallback_keys:
        name = field_of.get(key)
        if name is not None:
            fields[name] = None
    return fields


def rename_fields(raw: Mapping[Any, Any], spellings: Mapping[str, str], *, unknown: Callable[[Any], Exception] | None,
                  twice: Callable[[str, Any, Any], Exception]) -> dict[str, Any]:
    """An object's values under their field names, read in the object's key order; `spellings` maps each accepted
    spelling to its field. Stricter than `Reader`: a second spelling of a field raises `twice(field, first_key, key)`
    even with an equal value, and a key outside `spellings` raises `unknown(key)` (None keeps it under its own name)."""
    fields: dict[str, Any] = {}
    spelled: dict[Any, Any] = {}
    for key, value in raw.items():
        name = spellings.get(key)
        if name is None:
            if unknown is not None:
                raise unknown(key)
            name = key
        if name in spelled:
            raise twice(name, spelled[name], key)
        spelled[name] = key
        fields[name] = value
    return fields


def read_object(value: Any, path: str, expected: str = "a JSON object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(path, expected, value)
    for key in value:
        if not isinstance(key, str):
            raise invalid(path, "an object with string keys", key)
    return value


def read_text(value: Any, path: str, default: Any = "") -> Any:
    if value is MISSING or value is None:
        if default is REQUIRED:
            raise ImportInvalid(path, "a string (required)")
        return default
    if not isinstance(value, str):
        raise invalid(path, "a string", value)
    return value


def read_flag(value: Any, path: str, default: Any) -> Any:
    if value is MISSING or value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(path, "true or false", value)
    return value


def whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)  # JSON written by JavaScript may say 4.0
    return None


def read_integer(value: Any, path: str, default: Any, *, minimum: int | None = None, maximum: int | None = None,
             nullable: bool = False) -> Any:
    if value is MISSING:
        return default
    if value is None:
        return None if nullable else default
    number = whole_number(value)
    bounds = ""
    if minimum is not None and maximum is not None:
        bounds = f" from {minimum} to {maximum}"
    elif minimum is not None:
        bounds = f" >= {minimum}"
    if number is None or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise invalid(path, f"an integer{bounds}", value)
    return number


def read_texts(value: Any, path: str) -> tuple[str, ...]:
    if value is MISSING or value is None:
        return ()
    if not isinstance(value, list):
        raise invalid(path, "a list of strings", value)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise invalid(join_path(path, index), "a string", item)
    return tuple(value)


def read_role(value: Any, path: str, default: str = "system") -> str:
    if value is MISSING or value is None:
        return default
    if isinstance(value, str) and value in ROLES:
        return value
    number = whole_number(value)
    if number is not None and 0 <= number < len(ROLES):
        return ROLES[number]
    raise invalid(path, "a role: system, user or assistant (or 0, 1, 2)", value)


DIGITS = re.compile(r"\s*-?[0-9]{1,6}\s*")


def read_named(value: Any, path: str, default: str, *, names: dict[str, str], numbers: dict[int, str],
           expected: str, digit_strings: bool = False) -> str:
    if value is MISSING or value is None:
        return default
    if isinstance(value, str):
        if value in names:
            return names[value]
        if value.lower() in names:
            return names[value.lower()]
        if digit_strings and DIGITS.fullmatch(value) and int(value) in numbers:
            return numbers[int(value)]
    number = whole_number(value)
    if number is not None and number in numbers:
        return numbers[number]
    raise invalid(path, expected, value)


def guarded(read: Callable[[], Any]) -> Any:
    """Run an importer so that it can only fail with ImportInvalid (a model refusing a value becomes one too)."""
    try:
        return read()
    except ImportInvalid:
        raise
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ImportInvalid(where, first["msg"]) from None
    except RecursionError:
        raise ImportInvalid("", "JSON nested less deeply") from None


# -------------------------------------------------------------------------------------------------- JavaScript strings

# JavaScript's String.prototype.trim() whitespace (Python's str.strip() also strips \x1c-\x1f and \x85).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
                "\u2028\u2029\u202f\u205f\u3000\ufeff"


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def js_length(text: str) -> int:
    """JavaScript `String.length`: UTF-16 code units (a character outside the BMP counts 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_cut(text: str, limit: int) -> str:
    """The longest prefix of at most `limit` UTF-16 units that does not split a surrogate pair."""
    if js_length(text) <= limit:
        return text
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            return text[:index]
    return text


def utf16_key(text: str) -> bytes:
    # JavaScript sorts strings by UTF-16 code units; big-endian UTF-16 bytes compare the same way.
    return text.encode("utf-16-be", "surrogatepass")
