"""SillyTavern text macros as the preview evaluates them (reference A.12 "Macro rendering").

Two kinds of `{{...}}` exist in prompt text. Slot macros (`{{chatHistory}}`, `{{worldInfoBefore}}`, ...) split a
prompt into pieces and are handled by the sources; resource macros (`{{description}}`, `{{persona}}`, ...) pull another
block's text in and claim it. This module expands what is left: names, variables, dice, comments and `{{trim}}`.

Under builtin-st (the `st` placement with a preset) every text goes through SillyTavern's own engines instead
(`MacroContext.st`, assembly.sillytavern.macro_environment); the rules below are the other placements'.

Evaluation is deterministic so a preview is reproducible: `{{random::a::b}}` takes the first choice, `{{roll NdM}}`
takes the middle face of each die. Anything unknown is reported as `UNSUPPORTED_MACRO`; placement `st` keeps it in
the text as written, the other placements render it as empty text (as dsh-prompt-assembler does).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from assembly.sillytavern.js_numbers import js_number, js_string

SLOT_MACROS = ("chatHistory", "history", "input", "worldInfoBefore", "worldInfoAfter", "worldInfo")
SLOT_MACRO_RE = re.compile(r"\{\{\s*(chatHistory|history|input|worldInfoBefore|worldInfoAfter|worldInfo)\s*\}\}")

# Resource macros: name -> (source, field). They claim the target block (reference A.9 "Macro expansion").
RESOURCE_MACROS: dict[str, tuple[str, str]] = {
    "description": ("character", "description"),
    "charDescription": ("character", "description"),
    "personality": ("character", "personality"),
    "charPersonality": ("character", "personality"),
    "scenario": ("character", "scenario"),
    "mesexamples": ("character", "examples"),
    "persona": ("persona", "persona"),
}
RESOURCE_MACRO_RE = re.compile(
    r"\{\{\s*(description|charDescription|personality|charPersonality|scenario|mesexamples|persona)\s*\}\}"
)

_MACRO_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_TRIM_RE = re.compile(r"\{\{\s*trim\s*\}\}")
_ROLL_RE = re.compile(r"^roll[ :]\s*(\d*)d(\d+)\s*([+-]\s*\d+)?\s*$", re.IGNORECASE)


@dataclass
class MacroContext:
    """What text macros may read. `variables` is per request: `setvar` in one prompt is seen by later prompts."""

    user: str = "User"
    char: str = ""
    last_user_message: str = ""
    last_char_message: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    drop_unknown: bool = False  # outside placement st an unknown macro renders as empty text (still reported)
    read_chat: bool = False  # a macro read the last messages: text made with it depends on the conversation
    # SillyTavern's own macro engine for this generation (assembly.sillytavern.macro_environment), under builtin-st:
    # every text goes through it, with the variables of the whole generation
    st: Any = None


@dataclass(frozen=True)
class MacroResult:
    text: str
    unsupported: tuple[str, ...] = ()


def dice_total(count: str, faces: str, bonus: str) -> str | None:
    """`count` dice of `faces` faces plus `bonus` (their digits as written), each die on its middle face (random() ==
    0.5 in the reference preview, so a preview never changes between runs); None for dice without faces. Past 15
    digits the numbers are the JavaScript engines' doubles: rounded, Infinity past 1.8e308, never a total of
    thousands of digits."""
    if max(len(count), len(faces), len(bonus)) <= 15:
        whole_faces = int(faces)
        return str(int(count) * (whole_faces // 2 + 1) + int(bonus)) if whole_faces > 0 else None
    doubles = [js_number(text) for text in (count, faces, bonus)]
    if not doubles[1] > 0:
        return None
    middle = doubles[1] / 2 if math.isinf(doubles[1]) else float(math.floor(doubles[1] / 2))
    return js_string(doubles[0] * (middle + 1) + doubles[2])


def _roll(spec: re.Match[str]) -> str:
    bonus = (spec.group(3) or "0").replace(" ", "")
    total = dice_total(spec.group(1) or "1", spec.group(2), bonus)
    return total if total is not None else js_string(js_number(bonus))


def holds_macro(text: str) -> bool:
    """Whether `text` holds `{{`. Found through a one-character search: CPython finds one character with memchr,
    while a two-character needle walks the text some twenty times slower (a long card or chat text is searched
    many times per request)."""
    brace = text.find("{")
    while brace >= 0:
        if text.startswith("{", brace + 1):
            return True
        brace = text.find("{", brace + 2)
    return False


def expand_text_macros(text: str, ctx: MacroContext) -> MacroResult:
    """Expand the supported text macros of `text`; unknown ones are kept verbatim and listed."""
    if ctx.st is not None:
        return MacroResult(ctx.st.evaluate(text)) if text else MacroResult(text)
    if not holds_macro(text):
        return MacroResult(text)
    unsupported: list[str] = []

    def replace(match: re.Match[str]) -> str:
        raw = match.group(1)
        name = raw.strip()
        low = name.lower()
        if low == "user":
            return ctx.user
        if low == "char":
            return ctx.char
        if low == "lastusermessage":
            ctx.read_chat = True
            return ctx.last_user_message
        if low == "lastcharmessage":
            ctx.read_chat = True
            return ctx.last_char_message
        if name.startswith("//"):
            return ""
        if low.startswith("outlet::"):
            return match.group(0)  # filled by the placement primitive after assembly
        if low.startswith("random::") or low.startswith("random:"):
            choices = name.split("::")[1:] if "::" in name else name.split(":", 1)[1].split(",")
            return choices[0] if choices else ""
        if low.startswith("setvar::"):
            parts = name.split("::")
            if len(parts) >= 3:
                ctx.variables[parts[1]] = "::".join(parts[2:])
                return ""
        if low.startswith("getvar::"):
            parts = name.split("::")
            if len(parts) == 2:
                return ctx.variables.get(parts[1], "")
        roll = _ROLL_RE.match(name)
        if roll:
            return _roll(roll)
        if low == "trim":
            return match.group(0)  # handled after all other macros, see below
        unsupported.append(name)
        return "" if ctx.drop_unknown else match.group(0)

    # Only up to the last "}}": past it no macro can close, and a lazy scan from each "{{" there would be quadratic.
    end = text.rfind("}}") + 2
    expanded = _MACRO_RE.sub(replace, text[:end]) + text[end:] if end >= 2 else text
    return MacroResult(_without_trims(expanded), tuple(dict.fromkeys(unsupported)))


def _without_trims(text: str) -> str:
    """Each {{trim}} removed with the whitespace around it (split, then stripped: no pattern rescans a run)."""
    pieces = _TRIM_RE.split(text) if holds_macro(text) else [text]
    if len(pieces) == 1:
        return text
    inner = [p.strip() for p in pieces[1:-1]]
    return "".join([pieces[0].rstrip(), *inner, pieces[-1].lstrip()])

