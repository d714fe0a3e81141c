"""Generated benchmark material: chat text, placement layouts and blocks, assembly requests. Fixed seeds, so every run is comparable."""

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


# Assembly requests (engine.md §1) ----------------------------------------------------------------------------------

# The prompt_order of SillyTavern's default chat-completion preset (for character 100001); enhanceDefinitions is
# defined but switched off there, as in the shipped preset.
_DEFAULT_ORDER = ("main", "worldInfoBefore", "personaDescription", "charDescription", "charPersonality", "scenario",
                  "enhanceDefinitions", "nsfw", "worldInfoAfter", "dialogueExamples", "chatHistory", "jailbreak")
_DEFAULT_MARKERS = {
    "worldInfoBefore": "World Info (before)", "personaDescription": "Persona Description",
    "charDescription": "Char Description", "charPersonality": "Char Personality", "scenario": "Scenario",
    "worldInfoAfter": "World Info (after)", "dialogueExamples": "Chat Examples", "chatHistory": "Chat History",
}
# Our own texts: the shipped preset's wording is not copied; nsfw and jailbreak get text (the shipped ones are empty,
# real users fill them) so they cost what a filled preset costs.
_DEFAULT_TEXTS = {
    "main": ("Main Prompt", "Continue the story as {{char}}, talking with {{user}}. Stay in character, write one reply "
                            "of two or three paragraphs, and never speak for {{user}}."),
    "nsfw": ("Auxiliary Prompt", "Mature themes are allowed when the story calls for them; keep them tasteful."),
    "enhanceDefinitions": ("Enhance Definitions", "Use what you know about {{char}} to fill gaps in the card, keeping "
                                                  "the card's facts first."),
    "jailbreak": ("Post-History Instructions", "[Reply as {{char}} only. Keep the established tone and facts.]"),
}
# The 10-prompt preset: the default's markers plus main and jailbreak (nsfw and enhanceDefinitions left out).
_SMALL_PRESET = ("main", "worldInfoBefore", "personaDescription", "charDescription", "charPersonality", "scenario",
                 "worldInfoAfter", "dialogueExamples", "chatHistory", "jailbreak")
DEFAULT_PRESET_PROMPTS = len(_DEFAULT_ORDER)


def default_preset(prompt_count: int = DEFAULT_PRESET_PROMPTS, seed: int = 11) -> dict:
    """A preset shaped like SillyTavern's default, with `prompt_count` prompt definitions.

    10 is the default without nsfw and enhanceDefinitions; 12 is the default; more adds custom prompts before the
    examples marker, every fourth of them in-chat (injection_position 1, depths 0..4) so depth insertion grows too.
    """
    if prompt_count < len(_SMALL_PRESET):
        raise ValueError(f"default_preset: prompt_count must be at least {len(_SMALL_PRESET)}, got {prompt_count}")
    rng = random.Random(seed)
    order = list(_SMALL_PRESET if prompt_count < DEFAULT_PRESET_PROMPTS else _DEFAULT_ORDER)
    prompts = []
    for identifier in order:
        if identifier in _DEFAULT_MARKERS:
            prompts.append({"identifier": identifier, "name": _DEFAULT_MARKERS[identifier], "system_prompt": True,
                            "marker": True})
        else:
            name, content = _DEFAULT_TEXTS[identifier]
            prompts.append({"identifier": identifier, "name": name, "system_prompt": True, "role": "system",
                            "content": content})
    extra = max(0, prompt_count - len(order))
    custom_ids = []
    for i in range(extra):
        identifier = f"custom-{i:03d}"
        prompt = {"identifier": identifier, "name": f"Custom {i}", "role": ("system", "user")[i % 3 == 2],
                  "content": chat_text(rng, 40, 200)}
        if i % 4 == 3:
            prompt.update(injection_position=1, injection_depth=(i // 4) % 5, injection_order=100 + i % 7)
        prompts.append(prompt)
        custom_ids.append(identifier)
    at = order.index("dialogueExamples")
    order[at:at] = custom_ids
    enabled = [{"identifier": identifier, "enabled": identifier != "enhanceDefinitions"} for identifier in order]
    # A context window that holds every size we generate: SillyTavern's own budget (builtin-st) must not trim the
    # history, or the larger rows would time a smaller request.
    return {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": enabled}],
            "openai_max_context": 10_000_000, "openai_max_tokens": 300}


WORLD_POSITIONS = ("before", "after", "at_depth")
AT_DEPTH_DEPTHS = 5  # at_depth entries cycle through depths 0..4


def worldbook_entries(count: int, seed: int = 5) -> list[dict]:
    """`count` enabled entries, positions cycling before / after / at_depth (depths 0..4), mixed `order`."""
    rng = random.Random(seed)
    entries = []
    for i in range(count):
        position = WORLD_POSITIONS[i % len(WORLD_POSITIONS)]
        entry = {"uid": i, "comment": f"Lore {i}", "content": chat_text(rng, 40, 200), "position": position,
                 "order": rng.randint(0, 200), "role": "system"}
        if position == "at_depth":
            entry["depth"] = (i // len(WORLD_POSITIONS)) % AT_DEPTH_DEPTHS
        entries.append(entry)
    return entries


def chat_history(count: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    return [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "content": chat_text(rng)}
            for i in range(count)]


def character_card(seed: int = 17) -> dict:
    rng = random.Random(seed)
    examples = "\n".join(f"<START>\n{{{{user}}}}: {chat_text(rng, 30, 80)}\n{{{{char}}}}: {chat_text(rng, 80, 240)}"
                         for _ in range(2))
    return {"name": "Seraphina", "description": chat_text(rng, 600, 1000), "personality": chat_text(rng, 100, 200),
            "scenario": chat_text(rng, 150, 300), "mes_example": examples}


def persona(seed: int = 19) -> dict:
    return {"name": "Dana", "description": chat_text(random.Random(seed), 100, 250)}


def assemble_request(strategy: str, *, history: int, worldbook: int,
                     prompts: int = DEFAULT_PRESET_PROMPTS) -> dict:
    """A request like a chat turn: the default-shaped preset, a card, a persona, every world book entry active
    (`activation: all`, the host chose them), `history` messages and one new user input."""
    return {
        "strategy": strategy,
        "resources": {
            "preset": default_preset(prompts),
            "character": character_card(),
            "persona": persona(),
            "worldbook": {"entries": worldbook_entries(worldbook), "activation": "all"},
        },
        "conversation": {"history": chat_history(history),
                         "input": [{"id": "now", "role": "user", "content": "And what waits past the north gate?"}]},
        "host": {"core_available": True},
        "names": {"user": "Dana", "char": "Seraphina"},
        "tokenizer": "o200k_base",
    }
