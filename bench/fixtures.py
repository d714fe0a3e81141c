"""Generated benchmark material: chat text, placement layouts and blocks. Fixed seeds, so every run is comparable."""

from __future__ import annotations

import random

_ENGLISH = ("the", "gate", "guard", "copper", "key", "warrant", "north", "tower", "river", "merchant", "said", "quietly",
            "because", "tomorrow", "never", "lantern", "archive", "refund", "policy", "seven", "days", "order", "city",
            "Seraphina", "forest", "remember", "question", "answer", "between", "through", "although", "history")
_CHINESE = ("城门", "守卫", "铜钥匙", "手令", "禁区", "退款", "期限", "订单", "历史", "政策", "天气", "森林", "记得",
            "问题", "回答", "今天", "明天", "因为", "所以", "世界")
_PUNCTUATION = (".", ",", "!", "?", "。", "，", "：", "…", " -", "\n")


def chat_text(rng: random.Random, min_chars: int = 40, max_chars: int = 400) -> str:
    """A chat-like message: English and Chinese words, numbers, punctuation, roughly min..max characters long."""
    target = rng.randint(min_chars, max_chars)
    parts: list[str] = []
    length = 0
    while length < target:
        roll = rng.random()
        if roll < 0.6:
            word = rng.choice(_ENGLISH)
        elif roll < 0.85:
            word = rng.choice(_CHINESE)
        elif roll < 0.92:
            word = str(rng.randint(0, 99_999))
        else:
            word = rng.choice(_PUNCTUATION)
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)


def chat_corpus(count: int, seed: int = 2024) -> list[str]:
    rng = random.Random(seed)
    return [chat_text(rng) for _ in range(count)]


# Fixed messages before the history: character card, two example messages, the author note, the outlet host.
CHARACTER, EXAMPLES_START, EXAMPLES_END, AUTHOR_NOTE, OUTLET_HOST = 0, 1, 3, 3, 4
FIXED_MESSAGES = 5


def placement_case(size: int, seed: int = 7) -> tuple[list[dict], dict, list[dict]]:
    """`size` messages (history fills all but the five fixed ones) and `size` blocks over all eight positions."""
    if size < FIXED_MESSAGES + 1:
        raise ValueError(f"placement_case: size must be at least {FIXED_MESSAGES + 1}, got {size}")
    rng = random.Random(seed)
    messages = [
        {"role": "system", "content": "You are Seraphina, the guardian of the forest."},
        {"role": "user", "content": "Example: who guards the gate?"},
        {"role": "assistant", "content": "Example: I do, traveller."},
        {"role": "system", "content": "[Author's note: keep the tone calm.]"},
        {"role": "system", "content": "World state:\n{{outlet::state}}"},
    ]
    history_len = size - FIXED_MESSAGES
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": chat_text(rng, 20, 120)}
                 for i in range(history_len)]
    layout = {
        "character": {"start": CHARACTER, "end": CHARACTER + 1},
        "examples": {"start": EXAMPLES_START, "end": EXAMPLES_END},
        "conversation": {"message_indices": list(range(FIXED_MESSAGES, size)), "empty_index": FIXED_MESSAGES},
        "author_note": AUTHOR_NOTE,
        "outlets": {"state": OUTLET_HOST},
    }
    blocks = []
    for i in range(size):
        kind = i % 10
        block = {"id": f"b{i:06d}", "order": i % 5, "content": f"lore {i}: " + chat_text(rng, 20, 80)}
        if kind < 5:
            # Half the blocks go into the history, some deeper than the history is long.
            block.update(position="at_depth", depth=(i * 7) % (history_len + 3), role="system")
        elif kind in (5, 6):
            block.update(position=("before_character", "after_character")[kind - 5], role="system")
        elif kind == 7:
            block.update(position=("before_examples", "after_examples")[(i // 10) % 2], role="system")
        elif kind == 8:
            block.update(position=("author_note_top", "author_note_bottom")[(i // 10) % 2])
        else:
            block.update(position="outlet", outlet_name="state")
        blocks.append(block)
    return messages, layout, blocks
