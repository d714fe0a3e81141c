"""SillyTavern's `substituteParams` as the text-completion path calls it: the shared macro pass
(assembly.macros) with the legacy engine's `{{original}}` (the first one only) and `{{trim}}` (newlines only)."""

from __future__ import annotations

import re

from assembly.macros import MacroContext, expand_text_macros

_ORIGINAL_RE = re.compile(r"\{\{original\}\}", re.IGNORECASE)
_LEGACY_RE = re.compile(r"\{\{(noop|newline)\}\}", re.IGNORECASE)
_TRIM_RE = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.IGNORECASE)


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
    text = _TRIM_RE.sub("", text)
    return expand_text_macros(text, MacroContext(user=user, char=char)).text
