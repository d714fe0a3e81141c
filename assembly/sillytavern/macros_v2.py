"""SillyTavern 1.18's Macros 2.0 (`macros/engine`), the `v2` macro engine.

Not modelled on its own yet: a `v2` request goes through the legacy engine's rules (assembly.sillytavern.
macros_legacy), which give Macros 2.0's answer wherever the two agree (plain names, card fields, the variable
family without nesting, comments).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assembly.sillytavern.macros_legacy import LegacyCall, evaluate_legacy


def evaluate_v2(text: str, env: Any, *, original: str | None, card_fields: bool,
                extra: dict[str, Callable[[], Any]]) -> str:
    return evaluate_legacy(text, LegacyCall(env, original, card_fields, extra))
