"""SillyTavern's "None / Estimated" token count for text completion (`st-estimate`): ceil(UTF-8 bytes / 3.35),
0 for an empty text; whole-prompt checks add the token padding."""

from __future__ import annotations

import math

ST_ESTIMATE = "st-estimate"


def estimate_tokens(text: str, padding: int = 0) -> int:
    if not text:
        return padding
    return math.ceil(len(text.encode("utf-8")) / 3.35) + padding
