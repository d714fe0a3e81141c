"""SillyTavern's `substituteParams` as the text-completion path calls it: the legacy macro engine
(assembly.sillytavern.macros_legacy, the one chat completion uses) with the names and, when given, `{{original}}`."""

from __future__ import annotations

from assembly.sillytavern.macro_environment import MacroEnvironment


def substitute_params(text: str, user: str, char: str, original: str | None = None, *,
                      macros: MacroEnvironment | None = None) -> str:
    """`text` with macros substituted; `original`, when given, fills the first `{{original}}` (later ones empty).
    `macros`: the generation's macro environment (its engine and variables, macro_environment.text_environment);
    None: the legacy engine on its own."""
    if not text:
        return text
    env = macros if macros is not None else MacroEnvironment(user=user, char=char, engine="legacy")
    return env.evaluate(text, original=original)
