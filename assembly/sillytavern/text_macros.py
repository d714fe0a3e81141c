"""SillyTavern's `substituteParams` as the text-completion path calls it: the legacy macro engine
(assembly.sillytavern.macros_legacy, the one chat completion uses) with the names and, when given, `{{original}}`."""

from __future__ import annotations

from assembly.sillytavern.macro_environment import MacroEnvironment


def substitute_params(text: str, user: str, char: str, original: str | None = None) -> str:
    """`text` with macros substituted; `original`, when given, fills the first `{{original}}` (later ones empty)."""
    if not text:
        return text
    return MacroEnvironment(user=user, char=char, engine="legacy").evaluate(text, original=original)
