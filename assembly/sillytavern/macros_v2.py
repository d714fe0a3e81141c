"""SillyTavern 1.18's Macros 2.0 (`macros/engine`), the `v2` macro engine, one text at a time.

Unlike the legacy engine, Macros 2.0 parses the text: `{{name::arg::arg}}` (or `{{name arg}}`), macros nested in
arguments (evaluated first, left to right), scoped macros whose content runs to a closing `{{/name}}` (the
content is trimmed and dedented unless the opening tag has the `#` flag), `{{if cond}}...{{else}}...{{/if}}`
(only the branch taken is evaluated), variable shorthands (`{{.local}}`, `{{$global}}` with `= += -= ++ -- ?? ??=
|| == != > >= < <=`), whitespace inside the braces, and `\\{` / `\\}` escapes for literal braces. A macro it does
not know, or one given arguments it does not take, stays as written (its nested macros still run).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assembly.macros import holds_macro
from assembly.sillytavern.js_numbers import js_number, js_string
from assembly.sillytavern.macro_clock import v2_legacy_spelling, v2_macro
from assembly.sillytavern.macro_variables import MAX_MACRO_TEXT_CHARS, macro_text_too_large
from assembly.sillytavern.macros_legacy import roll
from assembly.sillytavern.relative_time import time_diff

_TOKENS = (
    (re.compile(r"<USER>", re.I), "user"), (re.compile(r"<BOT>", re.I), "char"), (re.compile(r"<CHAR>", re.I), "char"),
    (re.compile(r"<CHARIFNOTGROUP>", re.I), "group"), (re.compile(r"<GROUP>", re.I), "group"),
)
_NAME = re.compile(r"[A-Za-z_][\w-]*")
_VARIABLE = re.compile(r"([A-Za-z_]\w*(?:-\w+)*)\s*(\?\?=|\+\+|--|\+=|-=|\?\?|\|\||==|!=|>=|<=|=|>|<)?\s*(.*)",
                       re.DOTALL)
_FALSY = ("", "false", "0", "off", "no", "null", "undefined", "nan")
_MAX_DEPTH = 64
_OPEN, _CLOSE = "\x00{", "\x00}"  # escaped braces while the text is parsed


@dataclass
class _Text:
    text: str


@dataclass
class _Tag:
    raw: str  # the whole tag as written, braces included
    inner: list[Any]  # what is between the braces, parsed (text and nested tags)
    scope: list[Any] | None = None  # a scoped macro's content up to its closing tag
    closing_raw: str = ""
    head: tuple[str, str, str] | None = None
    level: int = 0  # how deep the parse that made it was (past _MAX_DEPTH a tag's inner text stays text)


@dataclass
class _Call:
    env: Any
    original: str | None
    card_fields: bool
    extra: dict[str, Callable[[], Any]]
    fields: Any = None
    original_used: bool = False
    depth: int = 0
    known: dict[str, Callable[..., Any]] = field(default_factory=dict)
    effects: int = 0  # bumped by each macro that changes what another reads (variables, {{original}}, outlets)
    memo: dict[tuple[str, int, int], tuple[int, str]] = field(default_factory=dict)  # see _memo_key


# parsing ------------------------------------------------------------------------------------------------------------


def _split_tags(text: str) -> list[Any]:
    """Text and tags, tags matched brace for brace (an unclosed `{{` is text): one scan pairs every `{{` with its
    `}}`, then the pairs become a tree (nested deeper than _MAX_DEPTH stays text)."""
    pairs = _pairs(text)
    opens = sorted(pairs)
    return _tree(text, 0, len(text), opens, pairs, 0)


def _pairs(text: str) -> dict[int, int]:
    """Each `{{` that closes: its position -> the end past its `}}` (in "{{{", the last two braces open)."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    i, n = 0, len(text)
    while i < n - 1:
        if text[i] == "{" and text[i + 1] == "{" and text[i + 2:i + 3] != "{":
            stack.append(i)
            i += 2
        elif text[i] == "}" and text[i + 1] == "}" and stack:
            pairs[stack.pop()] = i + 2
            i += 2
        else:
            i += 1
    return pairs


def _tree(text: str, lo: int, hi: int, opens: list[int], pairs: dict[int, int], depth: int) -> list[Any]:
    out: list[Any] = []
    start = lo
    index = bisect_left(opens, lo)
    while index < len(opens) and opens[index] < hi:
        at = opens[index]
        end = pairs[at]
        if end > hi:  # closes past this span: not a tag of it
            index += 1
            continue
        if at > start:
            out.append(_Text(text[start:at]))
        inner = _tree(text, at + 2, end - 2, opens, pairs, depth + 1) if depth < _MAX_DEPTH else \
            [_Text(text[at + 2:end - 2])]
        out.append(_Tag(text[at:end], inner, level=depth))
        start = end
        index = bisect_left(opens, end, index + 1)
    if start < hi:
        out.append(_Text(text[start:hi]))
    return out


def _head(tag: _Tag) -> tuple[str, str, str]:
    """(flags, name, rest) of a tag, read from its text as written (once per tag)."""
    if tag.head is None:
        tag.head = _read_head(tag)
    return tag.head


def _read_head(tag: _Tag) -> tuple[str, str, str]:
    inner = tag.raw[2:-2]
    body = inner.strip()
    flags = ""
    while body[:1] in ("#", "!", "?", "~", ">") and body[1:2] not in ("", " ", "="):
        flags += body[0]
        body = body[1:].lstrip()
    if body.startswith("//"):
        return flags, "//", body[2:]
    if body.startswith("/"):
        return flags + "/", body[1:].strip(), ""
    if body[:1] in (".", "$"):
        return flags, body[:1], body[1:]
    match = _NAME.match(body)
    if match is None:
        return flags, "", body
    return flags, match.group(0), body[match.end():]


def _scopes(parts: list[Any], depth: int = 0) -> list[Any]:
    """Pair each opening tag with its closing `{{/name}}` at the same level: the parts between become its scope.
    `if`, `trim` and comments nest (an inner opening takes the next closing first); any other opening takes the
    first closing of its name after it. One pass finds the pairs; each scope is paired again within itself."""
    close_of: dict[int, int] = {}
    stacks: dict[str, list[int]] = {}
    pending: dict[str, int] = {}
    for j, part in enumerate(parts):
        if not isinstance(part, _Tag):
            continue
        flags, name, _rest = _head(part)
        low = name.lower()
        if not name or low in (".", "$"):
            continue
        if "/" in flags:
            if low in _NESTING_SCOPES:
                stack = stacks.get(low)
                if stack:
                    close_of[stack.pop()] = j
            elif low in pending:
                close_of[pending.pop(low)] = j
        elif low in _NESTING_SCOPES:
            stacks.setdefault(low, []).append(j)
        else:
            pending.setdefault(low, j)
    if not close_of or depth > _MAX_DEPTH:  # scopes nested past the bound stay as written
        return parts
    out: list[Any] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        close = close_of.get(i)
        if close is not None:
            part.scope = _scopes(parts[i + 1:close], depth + 1)
            part.closing_raw = parts[close].raw
            out.append(part)
            i = close + 1
            continue
        out.append(part)
        i += 1
    return out


_NESTING_SCOPES = ("if", "trim", "//", "comment")


# evaluation -----------------------------------------------------------------------------------------------------


def _dedent(text: str) -> str:
    text = text.strip()
    lines = text.split("\n")
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines[1:] if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([lines[0], *[line[cut:] for line in lines[1:]]]) if cut else text


def _truthy(value: str) -> bool:
    return value.strip().lower() not in _FALSY


def _number(value: Any) -> float:
    return js_number(value) if not isinstance(value, str) or value.strip() else math.nan


def _render(parts: list[Any], call: _Call) -> str:
    pieces, size = [], 0
    for part in parts:
        piece = part.text if isinstance(part, _Text) else _evaluate_tag(part, call)
        size += len(piece)
        if size > MAX_MACRO_TEXT_CHARS:  # counted as it grows: the text itself is never made
            raise macro_text_too_large(_head(part)[1] if isinstance(part, _Tag) else "text")
        pieces.append(piece)
    return "".join(pieces)


def _args(rest: str, tag: _Tag, call: _Call) -> list[str] | None:
    """The tag's arguments, each with its nested macros evaluated; None for none."""
    if not rest.strip():
        return []
    if rest.startswith("::"):
        pieces = _split_args(tag, rest)
        return [_render(_scopes(_split_tags(p)), call) for p in pieces]
    if rest[:1].isspace():
        return [_render(_scopes(_split_tags(rest.strip())), call)]
    if rest.startswith(":"):
        return [_render(_scopes(_split_tags(rest[1:])), call)]
    return None


def _split_args(tag: _Tag, rest: str) -> list[str]:
    """`::arg::arg` split at the top level (a nested tag's own `::` stays in it)."""
    pieces, current, depth, i = [], [], 0, 2
    while i < len(rest):
        pair = rest[i:i + 2]
        if pair == "{{":
            depth += 1
            current.append(pair)
            i += 2
        elif pair == "}}":
            depth -= 1
            current.append(pair)
            i += 2
        elif pair == "::" and depth == 0:
            pieces.append("".join(current))
            current = []
            i += 2
        else:
            current.append(rest[i])
            i += 1
    pieces.append("".join(current))
    return pieces


def _keep(tag: _Tag, call: _Call) -> str:
    """A tag left as written: its nested macros run, the rest stays."""
    _flags, name, _rest = _head(tag)
    if name and name not in (".", "$"):
        call.env.unsupported.append(name)
    inner = _render(tag.inner, call)
    head = "{{" + inner + "}}"
    if tag.scope is not None:
        return head + _render(tag.scope, call) + tag.closing_raw
    return head


def _evaluate_tag(tag: _Tag, call: _Call) -> str:
    if call.depth > _MAX_DEPTH:
        return tag.raw
    key = _memo_key(tag, call)
    known = call.memo.get(key) if key is not None else None
    if known is not None and known[0] == call.effects:
        return known[1]
    stamp = call.effects
    call.depth += 1
    try:
        value = _evaluate(tag, call)
    finally:
        call.depth -= 1
    if key is not None and call.effects == stamp:  # it changed nothing: the same tag reads the same until something does
        call.memo[key] = (stamp, value)
    return value


def _memo_key(tag: _Tag, call: _Call) -> tuple[str, int, int] | None:
    """What a tag's value depends on besides the state `effects` tracks. A macro left as written has its nested
    macros run twice (once for its arguments, once for the text kept), so nesting doubles the work at each level:
    the second reading of a tag that changed nothing is the first one. The depths count only near their bounds
    (a tag holds at most one nested level per two of its braces); a scoped tag is not reused."""
    if tag.scope is not None:
        return None
    reach = tag.raw.count("{")
    return (tag.raw, call.depth if call.depth + reach > _MAX_DEPTH else -1,
            tag.level if tag.level + reach >= _MAX_DEPTH else -1)


def _scope_text(tag: _Tag, flags: str, call: _Call, parts: list[Any] | None = None) -> str:
    text = _render(tag.scope if parts is None else parts, call)
    return text if "#" in flags else _dedent(text)


def _evaluate(tag: _Tag, call: _Call) -> str:
    flags, name, rest = _head(tag)
    if "/" in flags or not name:
        return _keep(tag, call)
    low = name.lower()
    if name == "//" or low == "comment":
        return ""
    if name in (".", "$"):
        return _variable(name == "$", rest, call)
    if low == "if":
        return _if(tag, flags, rest, call)
    if low == "else":
        return ""  # an {{else}} no {{if}} took
    args = _args(rest, tag, call)
    if args is None:
        return _keep(tag, call)
    if tag.scope is not None:
        args.append(_scope_text(tag, flags, call))
    if low == "trim" and not args:
        return "{{trim}}"  # the legacy {{trim}}: it takes the newlines around it once the text is done
    handler = _MACROS.get(low) or v2_macro(call.env.clock, low)  # the time macros, given a clock
    if handler is not None:
        value = handler(call, args)
        if value is not None:
            return value if isinstance(value, str) else js_string(value)
        return _keep(tag, call) if tag.scope is None else "{{" + _render(tag.inner, call) + "}}"
    value = _environment_value(call, name, low)
    if value is not None and not args:
        return value
    return _keep(tag, call)


def _branches(parts: list[Any]) -> tuple[list[Any], list[Any] | None]:
    for index, part in enumerate(parts):
        if isinstance(part, _Tag) and part.scope is None:
            flags, name, rest = _head(part)
            if name.lower() == "else" and not flags and not rest.strip():
                return parts[:index], parts[index + 1:]
    return parts, None


def _if(tag: _Tag, flags: str, rest: str, call: _Call) -> str:
    condition = rest.strip()
    if tag.scope is None or not condition or rest.lstrip().startswith("::") or not rest[:1].isspace():
        return _keep(tag, call)
    negate = condition.startswith("!")
    if negate:
        condition = condition[1:].strip()
    if condition[:1] in (".", "$"):
        value = _variable(condition[0] == "$", condition[1:], call)
    elif _NAME.fullmatch(condition) and (condition.lower() in _MACROS or
                                         _environment_value(call, condition, condition.lower()) is not None):
        value = _evaluate(_Tag("{{" + condition + "}}", [_Text(condition)]), call)
    else:
        value = _render(_scopes(_split_tags(condition)), call)
    chosen = _truthy(value) != negate
    then, otherwise = _branches(tag.scope)
    if chosen:
        return _scope_text(tag, flags, call, then)
    return _scope_text(tag, flags, call, otherwise) if otherwise is not None else ""


def _variable(is_global: bool, text: str, call: _Call) -> str:
    match = _VARIABLE.fullmatch(text.strip())
    variables = call.env.variables
    if match is None:
        return "{{" + ("$" if is_global else ".") + text + "}}"
    call.env.touched = True
    name, op, operand = match.groups()
    if op in ("=", "+=", "-=", "++", "--", "??="):  # the operators that write
        call.effects += 1
    operand = _render(_scopes(_split_tags(operand.strip())), call) if operand else ""
    current = variables.get(name, is_global=is_global)
    if op is None:
        return js_string(current) if not operand else "{{" + ("$" if is_global else ".") + text + "}}"
    if op == "=":
        variables.set(name, operand, is_global=is_global)
        return ""
    if op == "+=":
        variables.add(name, operand, is_global=is_global)
        return ""
    if op == "-=":
        number = _number(operand)
        variables.add(name, js_string(-number) if not math.isnan(number) else "-" + operand, is_global=is_global)
        return ""
    if op in ("++", "--"):
        return js_string(variables.add(name, "1" if op == "++" else "-1", is_global=is_global))
    if op == "??":
        return js_string(current) if variables.has(name, is_global=is_global) and js_string(current) != "" \
            else operand
    if op == "??=":
        if not variables.has(name, is_global=is_global) or js_string(current) == "":
            variables.set(name, operand, is_global=is_global)
            return operand
        return js_string(current)
    if op == "||":
        return js_string(current) if _truthy(js_string(current)) else operand
    return "true" if _compare(js_string(current), op, operand) else "false"


def _compare(left: str, op: str, right: str) -> bool:
    a, b = _number(left), _number(right)
    numeric = not math.isnan(a) and not math.isnan(b)
    x, y = (a, b) if numeric else (left, right)
    return {"==": x == y, "!=": x != y, ">": x > y, ">=": x >= y, "<": x < y, "<=": x <= y}[op]


# macros ---------------------------------------------------------------------------------------------------------


def _fields(call: _Call) -> Any:
    if call.fields is None:
        call.fields = call.env.card_fields()
    return call.fields


_FIELD_MACROS = {
    "description": "description", "chardescription": "description", "personality": "personality",
    "charpersonality": "personality", "scenario": "scenario", "charscenario": "scenario", "persona": "persona",
    "mesexamples": "mesExamples", "mesexamplesraw": "mesExamplesRaw", "charprompt": "system",
    "charinstruction": "jailbreak", "chardepthprompt": "charDepthPrompt",
    "charversion": "version", "char_version": "version", "creatornotes": "creatorNotes",
    "greeting": "greeting", "charfirstmessage": "greeting",
}


def _environment_value(call: _Call, name: str, low: str) -> str | None:
    env = call.env
    if low == "original":
        if call.original is None:
            return None
        if call.original_used:
            return ""
        call.original_used = True
        call.effects += 1
        return call.original
    if low in ("user",):
        return env.user
    if low in ("char", "group", "charifnotgroup", "groupnotmuted"):
        return env.char
    if low == "notchar":
        return env.user
    if low in _FIELD_MACROS:
        if not call.card_fields:
            return ""  # a card field read inside a card field: empty
        fields, key = _fields(call), _FIELD_MACROS[low]
        if key not in fields.done:  # its first read runs the field's own macros
            call.effects += 1
        return fields.get(key) or ""
    if low == "model":
        return env.model
    if low in ("lastmessage", "lastusermessage", "lastcharmessage", "lastmessageid"):
        return env.chat_value({"lastmessage": "lastMessage", "lastusermessage": "lastUserMessage",
                               "lastcharmessage": "lastCharMessage", "lastmessageid": "lastMessageId"}[low])
    if low in ("firstincludedmessageid", "firstdisplayedmessageid"):
        return ""
    if low == "maxprompt":
        return js_string(env.max_prompt)
    if low == "input":
        return env.send_box
    extra = call.extra.get(name)
    if extra is not None:
        return js_string(extra())
    for key, value in env.registered.items():
        if key.lower() == low:
            return js_string(value(env))
    return None


def _one(fn: Callable[[_Call, str], Any]) -> Callable[[_Call, list[str]], Any]:
    return lambda call, args: fn(call, args[0]) if len(args) == 1 else None


def _two(fn: Callable[[_Call, str, str], Any]) -> Callable[[_Call, list[str]], Any]:
    return lambda call, args: fn(call, args[0], args[1]) if len(args) == 2 else None


def _var(call: _Call, changes: bool = False) -> Any:
    call.env.touched = True
    call.effects += changes
    return call.env.variables


def _set(is_global: bool) -> Callable[[_Call, list[str]], Any]:
    return _two(lambda call, name, value: (_var(call, True).set(name.strip(), value, is_global=is_global), "")[1])


def _add(is_global: bool) -> Callable[[_Call, list[str]], Any]:
    return _two(lambda call, name, value: (_var(call, True).add(name.strip(), value, is_global=is_global), "")[1])


def _step(is_global: bool, by: str) -> Callable[[_Call, list[str]], Any]:
    return _one(lambda call, name: _var(call, True).add(name.strip(), by, is_global=is_global))


def _get(is_global: bool) -> Callable[[_Call, list[str]], Any]:
    return _one(lambda call, name: _var(call).get(name.strip(), is_global=is_global))


def _has(is_global: bool) -> Callable[[_Call, list[str]], Any]:
    return _one(lambda call, name: "true" if _var(call).has(name.strip(), is_global=is_global) else "false")


def _delete(is_global: bool) -> Callable[[_Call, list[str]], Any]:
    return _one(lambda call, name: (_var(call, True).delete(name.strip(), is_global=is_global), "")[1])


def _count(text: str) -> int | None:
    number = js_number(text) if text.strip() else math.nan
    return int(number) if not math.isnan(number) and number >= 0 and number == int(number) else None


def _repeat(char: str) -> Callable[[_Call, list[str]], Any]:
    def run(call: _Call, args: list[str]) -> Any:
        if not args:
            return char
        if len(args) == 1:
            count = _count(args[0])
            if count is not None and count > MAX_MACRO_TEXT_CHARS:
                raise macro_text_too_large("newline" if char == "\n" else "space")
            return char * count if count is not None else None
        return None
    return run


def _outlet(call: _Call, name: str) -> str:
    call.effects += 1  # the outlets read are counted
    return call.env.outlet(name) if name.strip() else ""


def _trim(call: _Call, args: list[str]) -> Any:
    if not args:
        return None  # {{trim}} without content: the legacy rule, applied after the pass
    return args[-1].strip() if len(args) == 1 else None


_MACROS: dict[str, Callable[[_Call, list[str]], Any]] = {
    "setvar": _set(False), "addvar": _add(False), "incvar": _step(False, "1"), "decvar": _step(False, "-1"),
    "getvar": _get(False), "hasvar": _has(False), "varexists": _has(False), "deletevar": _delete(False),
    "flushvar": _delete(False),
    "setglobalvar": _set(True), "addglobalvar": _add(True), "incglobalvar": _step(True, "1"),
    "decglobalvar": _step(True, "-1"), "getglobalvar": _get(True), "hasglobalvar": _has(True),
    "globalvarexists": _has(True), "deleteglobalvar": _delete(True), "flushglobalvar": _delete(True),
    "newline": _repeat("\n"), "space": _repeat(" "),
    "noop": lambda call, args: "" if not args else None,
    "trim": _trim,
    "reverse": _one(lambda call, text: text[::-1]),
    "banned": lambda call, args: "",
    "outlet": _one(lambda call, name: _outlet(call, name)),
    "timediff": _two(lambda call, a, b: time_diff(a, b)),
    "roll": _one(lambda call, formula: roll(formula)),
    "random": lambda call, args: (args[0].split(",")[0].strip() if len(args) == 1 else args[0]) if args else None,
    "pick": lambda call, args: (args[0].split(",")[0].strip() if len(args) == 1 else args[0]) if args else None,
}
_TRIM_MARK = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.I)


def _unclosed_tail(text: str) -> str:
    """What follows the first `{{name` that no `}}` closes, when macros follow it; "" otherwise. Macros 2.0 reads
    such an opening as a macro running to the end of the text, the macros after it as its arguments, then, finding
    no closing braces, the same text again as plain text with its macros: the macros in it run twice."""
    if text.count("{{") < 2:
        return ""
    pairs = _pairs(text)
    at = text.find("{{")
    while at != -1:
        if at not in pairs and text[at + 2:at + 3] != "{":
            if _NAME.match(text, at + 2) is None:
                return ""
            tail = text[at + 2:]
            return tail if "{{" in tail else ""
        at = text.find("{{", at + 1)
    return ""


def evaluate_v2(text: str, env: Any, *, original: str | None, card_fields: bool,
                extra: dict[str, Callable[[], Any]]) -> str:
    """`text` through Macros 2.0 with the generation's environment."""
    if not text:
        return ""
    for pattern, name in _TOKENS:
        if "<" in text:
            text = pattern.sub(lambda _m, name=name: getattr(env, name), text)
    if "\\" not in text and not holds_macro(text):
        return text
    text = v2_legacy_spelling(text) if env.clock is not None else text  # {{time_UTC+2}}: {{time::UTC+2}}
    text = text.replace("\\{\\{", _OPEN * 2).replace("\\}\\}", _CLOSE * 2)
    call = _Call(env, original, card_fields, extra)
    out = _render(_scopes(_split_tags(text)), call)
    tail = _unclosed_tail(text)
    if tail:  # SillyTavern's parser reads the macros after a `{{name` that never closes once more (st-macros)
        _render(_scopes(_split_tags(tail)), call)  # their effects stay; the text keeps the first reading
    out = _TRIM_MARK.sub("", out)
    return out.replace(_OPEN, "{").replace(_CLOSE, "}")
