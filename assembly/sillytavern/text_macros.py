"""SillyTavern's `substituteParams` as the text-completion path calls it: the shared macro pass
(assembly.macros) with the legacy engine's `{{original}}` (the first one only) and `{{trim}}` (newlines only)."""

from __future__ import annotations

import re

from assembly.macros import MacroContext, expand_text_macros

_ORIGINAL_RE = re.compile(r"\{\{original\}\}", re.IGNORECASE)
_LEGACY_RE = re.compile(r"\{\{(noop|newline)\}\}", re.IGNORECASE)
_TRIM_RE = re.compile(r"\{\{trim\}\}", re.IGNORECASE)


def _strip_newlines(text: str, *, end: bool) -> str:
    """The run of newlines (`\n` or `\r\n`) at one end of `text` removed, as `(?:\r?\n)*` takes it."""
    while True:
        if end and text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
        elif not end and text.startswith(("\n", "\r\n")):
            text = text[1:] if text.startswith("\n") else text[2:]
        else:
            return text


def _trimmed(text: str) -> str:
    """Each `{{trim}}` removed with the newlines around it (without a pattern that rescans newline runs)."""
    pieces = _TRIM_RE.split(text)
    if len(pieces) == 1:
        return text
    last = len(pieces) - 1
    return "".join(_strip_newlines(_strip_newlines(p, end=False) if i else p, end=True) if i < last
                   else _strip_newlines(p, end=False) for i, p in enumerate(pieces))


def substitute_params(text: str, user: str, char: str, original: str | None = None) -> str:
    """`text` with macros substituted; `original`, when given, fills the first `{{original}}` (later ones empty)."""
    if "{{" not in text:
        return text
    if original is not None:
        first = [True]

        def fill(_match: re.Match[str]) -> str:
            if first[0]:
                first[0] = False
                return original
            return ""

        text = _ORIGINAL_RE.sub(fill, text)
    text = _LEGACY_RE.sub(lambda m: "" if m.group(1).lower() == "noop" else "\n", text)
    text = _trimmed(text)
    return expand_text_macros(text, MacroContext(user=user, char=char)).text
