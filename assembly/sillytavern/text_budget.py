"""SillyTavern's "None / Estimated" token count for text completion (`st-estimate`): ceil(UTF-8 bytes / 3.35),
0 for an empty text; whole-prompt checks add the token padding."""

from __future__ import annotations

import math

ST_ESTIMATE = "st-estimate"


def estimate_tokens(text: str, padding: int = 0) -> int:
    return estimate_bytes(len(text.encode("utf-8")), padding)


def estimate_bytes(byte_count: int, padding: int = 0) -> int:
    """SillyTavern's estimate of a text of `byte_count` UTF-8 bytes."""
    return math.ceil(byte_count / 3.35) + padding if byte_count else padding


def fill_chat(items: list[str], injected: list[int], count: int, budget: int) -> tuple[dict[int, str], int, str]:
    """`Generate()`'s context fill: the injected messages first (`injected`: their places, counted from the
    newest; a place past the chat is skipped), then the others newest first; each counted alone, kept while the
    running `count` stays under `budget`, the first that reaches it stopping the fill. Returns the kept messages by
    place, the oldest place kept (0 when none) and the kept texts joined in the order they were taken."""
    kept: dict[int, str] = {}
    oldest = 0
    order = [i for i in injected if i < len(items)]
    first = set(order)
    order += [i for i in range(len(items)) if i not in first]
    for index in order:
        count += estimate_tokens(items[index])
        if count >= budget:
            break
        kept[index] = items[index]
        oldest = max(oldest, index)
    return kept, oldest, "".join(kept.values())  # (a dict keeps the order they were taken in)


def fitting_examples(examples: list[str], count: int, budget: int) -> int:
    """How many example items fit, added one by one to `count` while it stays under `budget`."""
    fitting = 0
    for example in examples:
        count += estimate_tokens(example)
        if count >= budget:
            break
        fitting += 1
    return fitting
