"""SillyTavern's vocabularies: its names and numbers for roles, positions, logic and generation types, the built-in
prompts and the utility prompts' defaults (sillytavern.md §2, §7, §8), and the readers of their spellings."""

from __future__ import annotations

from typing import Any, Literal

from assembly.reading import invalid, join_path, read_named, read_texts

GENERATION_TYPES = ("normal", "continue", "impersonate", "swipe", "regenerate", "quiet")

WorldPosition = Literal[
    "before", "after", "before_example_messages", "after_example_messages",
    "before_author_note", "after_author_note", "at_depth", "outlet",
]
# Canonical names in SillyTavern's numeric order 0..7 (sillytavern.md §7.1).
WORLD_POSITION_BY_NUMBER: dict[int, str] = {
    0: "before", 1: "after", 2: "before_author_note", 3: "after_author_note",
    4: "at_depth", 5: "before_example_messages", 6: "after_example_messages", 7: "outlet",
}
WORLD_POSITIONS: tuple[str, ...] = (
    "before", "after", "before_example_messages", "after_example_messages",
    "before_author_note", "after_author_note", "at_depth", "outlet",
)
# Our canonical names -> the placement primitive's names (engine.md §2, seed 000).
PLACEMENT_POSITION_BY_WORLD_POSITION: dict[str, str] = {
    "before": "before_character", "after": "after_character",
    "before_example_messages": "before_examples", "after_example_messages": "after_examples",
    "before_author_note": "author_note_top", "after_author_note": "author_note_bottom",
    "at_depth": "at_depth", "outlet": "outlet",
}
WORLD_POSITION_NUMBER = {name: number for number, name in WORLD_POSITION_BY_NUMBER.items()}
WORLD_POSITION_ALIASES: dict[str, str] = {
    **{name: name for name in WORLD_POSITIONS},
    **{seed: ours for ours, seed in PLACEMENT_POSITION_BY_WORLD_POSITION.items()},
    # SillyTavern's own key names (world_info_position) and the card book's two names.
    "ANTop": "before_author_note", "ANBottom": "after_author_note", "atDepth": "at_depth",
    "EMTop": "before_example_messages", "EMBottom": "after_example_messages",
    "before_char": "before", "after_char": "after",
}

SelectiveLogic = Literal["and_any", "not_all", "not_any", "and_all"]
SELECTIVE_LOGIC_BY_NUMBER: dict[int, str] = {0: "and_any", 1: "not_all", 2: "not_any", 3: "and_all"}

PersonaPosition = Literal["in_prompt", "after_char", "top_an", "bottom_an", "at_depth", "none"]
PERSONA_POSITION_BY_NUMBER: dict[int, str] = {
    0: "in_prompt", 1: "after_char", 2: "top_an", 3: "bottom_an", 4: "at_depth", 9: "none",
}
PERSONA_POSITION_ALIASES = {
    **{name: name for name in PERSONA_POSITION_BY_NUMBER.values()},
    "before_author_note": "top_an", "after_author_note": "bottom_an",
}

# Author's note and extension prompts: SillyTavern's extension_prompt_types (sillytavern.md §2.5, §8.1).
ExtensionPosition = Literal["in_chat", "before_main", "after_main", "none"]
EXTENSION_POSITION_BY_NUMBER: dict[int, str] = {-1: "none", 0: "after_main", 1: "in_chat", 2: "before_main"}
EXTENSION_POSITION_ALIASES = {
    **{name: name for name in EXTENSION_POSITION_BY_NUMBER.values()},
    "in_prompt": "after_main", "before_prompt": "before_main",
}

PROMPT_ORDER_CHARACTER_ID = 100001  # chat completion's global strategy (sillytavern.md §2.2)

# SillyTavern's built-in prompt definitions; it re-adds any a preset lacks (sillytavern.md §2.2–2.3).
BUILTIN_PROMPTS: tuple[dict[str, Any], ...] = (
    {"identifier": "main", "name": "Main Prompt", "system_prompt": True, "role": "system",
     "content": "Write {{char}}'s next reply in a fictional chat between {{charIfNotGroup}} and {{user}}."},
    {"identifier": "nsfw", "name": "Auxiliary Prompt", "system_prompt": True, "role": "system", "content": ""},
    {"identifier": "dialogueExamples", "name": "Chat Examples", "system_prompt": True, "marker": True},
    {"identifier": "jailbreak", "name": "Post-History Instructions", "system_prompt": True, "role": "system",
     "content": ""},
    {"identifier": "chatHistory", "name": "Chat History", "system_prompt": True, "marker": True},
    {"identifier": "worldInfoAfter", "name": "World Info (after)", "system_prompt": True, "marker": True},
    {"identifier": "worldInfoBefore", "name": "World Info (before)", "system_prompt": True, "marker": True},
    {"identifier": "enhanceDefinitions", "name": "Enhance Definitions", "system_prompt": True, "role": "system",
     "marker": False,
     "content": "If you have more knowledge of {{char}}, add to the character's lore and personality to enhance "
                "them but keep the Character Sheet's definitions absolute."},
    {"identifier": "charDescription", "name": "Char Description", "system_prompt": True, "marker": True},
    {"identifier": "charPersonality", "name": "Char Personality", "system_prompt": True, "marker": True},
    {"identifier": "scenario", "name": "Scenario", "system_prompt": True, "marker": True},
    {"identifier": "personaDescription", "name": "Persona Description", "system_prompt": True, "marker": True},
)
# promptManagerDefaultPromptOrder: used when a preset has no order for character 100001.
DEFAULT_PROMPT_ORDER: tuple[tuple[str, bool], ...] = (
    ("main", True), ("worldInfoBefore", True), ("personaDescription", True), ("charDescription", True),
    ("charPersonality", True), ("scenario", True), ("enhanceDefinitions", False), ("nsfw", True),
    ("worldInfoAfter", True), ("dialogueExamples", True), ("chatHistory", True), ("jailbreak", True),
)

# SillyTavern's "utility prompts" and format templates, with the values of its shipped Default preset.
UTILITY_PROMPT_DEFAULTS: dict[str, str] = {
    "impersonation_prompt": "[Write your next reply from the point of view of {{user}}, using the chat history so "
                            "far as a guideline for the writing style of {{user}}. Don't write as {{char}} or system. "
                            "Don't describe actions of {{char}}.]",
    "new_chat_prompt": "[Start a new Chat]",
    "new_group_chat_prompt": "[Start a new group chat. Group members: {{group}}]",
    "new_example_chat_prompt": "[Example Chat]",
    "continue_nudge_prompt": "[Continue your last message without repeating its original content.]",
    "group_nudge_prompt": "[Write the next reply only as {{char}}.]",
    "wi_format": "{0}",
    "scenario_format": "{{scenario}}",
    "personality_format": "{{personality}}",
    "send_if_empty": "",
}


CHARACTER_STRATEGY_BY_NUMBER = {0: "evenly", 1: "character_first", 2: "global_first"}


def read_generation_types(value: Any, path: str) -> tuple[str, ...]:
    types = read_texts(value, path)
    for index, kind in enumerate(types):
        if kind not in GENERATION_TYPES:
            raise invalid(join_path(path, index), "a generation type: " + ", ".join(GENERATION_TYPES), kind)
    return types


def world_position(value: Any, path: str = "position") -> str:
    """Any accepted spelling of a world book position -> its canonical name (engine.md §1)."""
    return read_named(value, path, "before", names=WORLD_POSITION_ALIASES, numbers=WORLD_POSITION_BY_NUMBER,
                      digit_strings=True, expected=_WORLD_POSITION_EXPECTED)


_WORLD_POSITION_EXPECTED = ("a world book position: " + ", ".join(WORLD_POSITIONS) + ", the seed-000 names "
                            "(before_character, ...), or SillyTavern's numbers 0..7")
