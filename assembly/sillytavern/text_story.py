"""The story string: SillyTavern's `renderStoryString` (Handlebars 4 without escaping, a subset: `{{#if}}`,
`{{#unless}}`, `{{else}}`, comments, values; unknown names go through the macros) and its instruct wrapping."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from assembly.caches import TEMPLATES
from assembly.sillytavern.text_macros import substitute_params

_TAG_RE = re.compile(r"\{\{\{?([^{}]*)\}\}\}?")  # one path per "{{" (a body has no braces): linear
_MAX_TEMPLATE = 200_000
_OUTLET_RE = re.compile(r"\{\{outlet::(.+?)\}\}", re.IGNORECASE)


_KEPT_TEMPLATE = 8_192  # a template up to this length is parsed once per process (assembly.caches.TEMPLATES)


def _parsed(template: str) -> tuple[tuple[str, str], ...]:
    """`_tokens(template)`, as an immutable tuple: Generate() renders the same default story string every time."""
    if len(template) > _KEPT_TEMPLATE:
        return tuple(_tokens(template))
    return TEMPLATES.computed(template, lambda: tuple(_tokens(template)))


def _tokens(template: str) -> list[tuple[str, str]]:
    """(kind, value) pieces: ("text", s) and ("open" / "close" / "else" / "var" / "comment", name), with
    Handlebars' standalone-line rule: a block tag or comment alone on its line takes that line's whitespace and
    newline with it; `~` strips the whitespace on its side."""
    pieces: list[tuple[str, str]] = []
    pos = 0
    for match in _TAG_RE.finditer(template[:_MAX_TEMPLATE]):
        pieces.append(("text", template[pos:match.start()]))
        body = match.group(1).strip()
        tilde_left, tilde_right = body.startswith("~"), body.endswith("~") and len(body) > 1
        body = body.strip("~").strip()
        sigil = body[:1] if body[:1] in ("#", "/", "^", "!") else ""
        body = body[len(sigil):].strip()
        if sigil == "!":
            kind, value = "comment", ""
        elif sigil == "#":
            kind, value = "open", body
        elif sigil == "/":
            kind, value = "close", body
        elif sigil == "^" or body == "else":
            kind, value = "else", ""
        else:
            kind, value = "var", body
        pieces.append((kind, value))
        if tilde_left:
            pieces[-2] = ("text", pieces[-2][1].rstrip())
        if tilde_right:
            pieces.append(("strip", ""))
        pos = match.end()
    pieces.append(("text", template[pos:]))
    return _standalone(_merge_strip(pieces))


def _merge_strip(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    strip = False
    for kind, value in pieces:
        if kind == "strip":
            strip = True
            continue
        if kind == "text" and strip:
            value = value.lstrip()
        strip = False
        out.append((kind, value))
    return out


def _standalone(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    for i, (kind, _value) in enumerate(pieces):
        if kind not in ("open", "close", "else", "comment"):
            continue
        before = pieces[i - 1][1] if i > 0 else ""
        after = pieces[i + 1][1] if i + 1 < len(pieces) else ""
        line_start = before.rfind("\n")
        head = before[line_start + 1:]
        if head.strip(" \t") or (line_start < 0 and i > 1):
            continue
        newline = re.match(r"[ \t]*(\r?\n|$)", after)
        if newline is None or (not newline.group(1) and i + 2 < len(pieces)):
            continue
        pieces[i - 1] = ("text", before[:line_start + 1]) if i > 0 else pieces[i - 1]
        pieces[i + 1] = ("text", after[newline.end():])
    return pieces


def _truthy(value: Any) -> bool:
    return bool(value) and value != []


def _render(pieces: Sequence[tuple[str, str]], params: dict[str, Any], user: str, char: str, used: set[str],
            macros: Any = None) -> str:
    out: list[str] = []
    stack: list[bool] = []  # per open block: whether its current branch renders

    def active() -> bool:
        return all(stack)

    for kind, value in pieces:
        if kind == "text":
            if active():
                out.append(value)
        elif kind == "open":
            helper, _, arg = value.partition(" ")
            truth = _truthy(params.get(arg.strip()))
            stack.append(truth if helper != "unless" else not truth)
        elif kind == "else":
            if stack:
                stack[-1] = not stack[-1]
        elif kind == "close":
            if stack:
                stack.pop()
        elif kind == "var" and active():
            name = value.strip()
            if name == "trim":
                out.append("{{trim}}")
            elif params.get(name) is not None:
                out.append(str(params[name]))
                used.add(name)
            else:  # helperMissing: the name as a macro
                out.append(substitute_params("{{" + name + "}}", user, char, macros=macros))
    return "".join(out)


def render_story_string(template: str, params: dict[str, Any], *, user: str, char: str, in_prompt: bool,
                        instruct_on: bool, wrap: bool, suffix: str, outlets: dict[str, str] | None = None,
                        used: set[str] | None = None, substitute: Callable[[str], str] | None = None,
                        macros: Any = None) -> str:
    """`renderStoryString`: rendered, world-info outlets filled, one macro pass, leading newlines removed, a closing newline added when the
    story string stays at the top (unless instruct mode wraps it itself: wrap off or a story-string suffix).
    `used`, if given, gets the names of the parameters the template put in; `substitute`, if given, is the
    generation's `substituteParams` for the macro pass."""
    output = _render(_parsed(template), params, user, char, used if used is not None else set(), macros)
    if "{{" in output:  # `{{outlet::name}}`: the world-info outlet's text, empty without one
        output = _OUTLET_RE.sub(lambda m: (outlets or {}).get(m.group(1).strip(), ""), output)
    output = substitute(output) if substitute is not None else substitute_params(output, user, char, macros=macros)
    output = output.lstrip("\n")
    if output and not output.endswith("\n") and in_prompt and not (instruct_on and (not wrap or suffix)):
        output += "\n"
    return output


def wrap_story_string(story: str, instruct: dict[str, Any], *, user: str, char: str, macros: Any = None) -> str:
    """`formatInstructModeStoryString`: the story-string prefix (its `{{name}}` is System) and suffix around it."""
    if not story:
        return story
    prefix = substitute_params(instruct["story_string_prefix"], user, char, macros=macros)
    prefix = re.sub(r"\{\{name\}\}", "System", prefix, flags=re.IGNORECASE)
    suffix = substitute_params(instruct["story_string_suffix"], user, char, macros=macros)
    separator = "\n" if instruct["wrap"] and prefix else ""
    return prefix + separator + story + suffix
