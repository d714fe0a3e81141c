"""Resources: the preset, character, persona, world book, author's note and extension prompts (engine.md §1, §5).

Every resource arrives either in the engine's simplified JSON (engine.md §1) or in SillyTavern's own file shapes: a
chat-completion preset, a character card V2/V3 (JSON, or PNG bytes with a `chara` / `ccv3` text chunk), a native world
book `{"entries": {"<uid>": {...}}}` or a card's embedded `character_book`. The importers read all of them into one set
of frozen pydantic models whose field names are the engine's (snake_case); camelCase spellings are accepted on input.

Reading is strict and loud: a value of the wrong type is an `ImportInvalid` naming its JSON path and what was
expected, never a silent default. Keys the models do not describe (sampler settings, card assets, entry bookkeeping)
are kept verbatim in `other_fields` so the exporters give back the file the user imported; `import(export(x)) == x`.
Where SillyTavern itself fills something in (the prompt order of a preset that has none for character 100001, the
built-in prompt definitions it re-adds, `role: null` meaning system), we do the same, as sillytavern.md describes.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import math
import re
import struct
import zlib
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

# -------------------------------------------------------------------------------------------------- errors

MAX_IMPORT_BYTES = 5 * 1024 * 1024  # uploads (quality.md "Bad input")


class ImportInvalid(ValueError):
    """An importer refused its input: `path` is the JSON path of the offending value ("" for the whole input)."""

    code = "IMPORT_INVALID"

    def __init__(self, path: str, expected: str, *, got: Any = None, has_got: bool = False, status: int = 400):
        where = path or "the input"
        message = f"{where}: expected {expected}"
        if has_got:
            message += f", got {_describe(got)}"
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.status = status
        self.message = message
        self.detail = {"path": path, "expected": expected}

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "status": self.status, "error": self.message, "detail": self.detail}


def _describe(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}.get(
        type(value), type(value).__name__
    )
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return f"{kind} of {len(value)} item(s)"
    text = repr(value)
    return f"{kind} {text[:60]}{'...' if len(text) > 60 else ''}"


def _invalid(path: str, expected: str, value: Any, *, status: int = 400) -> ImportInvalid:
    return ImportInvalid(path, expected, got=value, has_got=True, status=status)


# -------------------------------------------------------------------------------------------------- vocabularies

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")  # SillyTavern's numbers 0, 1, 2 in this order

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
_WORLD_POSITION_NUMBER = {name: number for number, name in WORLD_POSITION_BY_NUMBER.items()}
_WORLD_POSITION_ALIASES: dict[str, str] = {
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
_PERSONA_POSITION_ALIASES = {
    **{name: name for name in PERSONA_POSITION_BY_NUMBER.values()},
    "before_author_note": "top_an", "after_author_note": "bottom_an",
}

# Author's note and extension prompts: SillyTavern's extension_prompt_types (sillytavern.md §2.5, §8.1).
ExtensionPosition = Literal["in_chat", "before_main", "after_main", "none"]
EXTENSION_POSITION_BY_NUMBER: dict[int, str] = {-1: "none", 0: "after_main", 1: "in_chat", 2: "before_main"}
_EXTENSION_POSITION_ALIASES = {
    **{name: name for name in EXTENSION_POSITION_BY_NUMBER.values()},
    "in_prompt": "after_main", "before_prompt": "before_main",
}

PROMPT_ORDER_CHARACTER_ID = 100001  # chat completion's global strategy (sillytavern.md §2.2)

# SillyTavern's built-in prompt definitions; it re-adds any a preset lacks (sillytavern.md §2.2–2.3).
_BUILTIN_PROMPTS: tuple[dict[str, Any], ...] = (
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


# -------------------------------------------------------------------------------------------------- models


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Prompt(_Frozen):
    """One entry of a preset's `prompts` (sillytavern.md §2.1)."""

    identifier: str
    name: str = ""
    role: Role = "system"
    content: str = ""
    enabled: bool = True  # the prompt's own flag; SillyTavern decides by prompt_order (see Preset.ordered_prompts)
    marker: bool = False
    system_prompt: bool = False
    injection_position: Literal[0, 1] = 0  # 0 relative (its slot in the order), 1 in-chat at injection_depth
    injection_depth: int = 4
    injection_order: int = 100
    injection_trigger: tuple[str, ...] = ()  # generation types; empty = every type
    forbid_overrides: bool = False
    other_fields: dict[str, Any] = {}


class PromptOrderEntry(_Frozen):
    identifier: str
    enabled: bool


class PromptOrderList(_Frozen):
    """A prompt_order list for another character id (kept only to write it back on export)."""

    character_id: int | str
    order: tuple[PromptOrderEntry, ...] = ()


class Preset(_Frozen):
    """A chat-completion preset: prompt definitions, their resolved order, and the options SillyTavern applies."""

    prompts: tuple[Prompt, ...] = ()
    # The order for character 100001 (or SillyTavern's default order when the file has none for it); for a bare
    # prompt list (no prompt_order in the input), the list order with each prompt's own `enabled`.
    prompt_order: tuple[PromptOrderEntry, ...] = ()
    has_prompt_order: bool = False  # the input carried a `prompt_order` at all
    other_prompt_orders: tuple[PromptOrderList, ...] = ()
    has_utility_prompts: bool = False  # the input carried SillyTavern's utility prompts (any key of the set)
    names_behavior: Literal[-1, 0, 1, 2] = 0  # NONE, DEFAULT, COMPLETION, CONTENT
    squash_system_messages: bool = False
    send_if_empty: str = UTILITY_PROMPT_DEFAULTS["send_if_empty"]
    impersonation_prompt: str = UTILITY_PROMPT_DEFAULTS["impersonation_prompt"]
    new_chat_prompt: str = UTILITY_PROMPT_DEFAULTS["new_chat_prompt"]
    new_group_chat_prompt: str = UTILITY_PROMPT_DEFAULTS["new_group_chat_prompt"]
    new_example_chat_prompt: str = UTILITY_PROMPT_DEFAULTS["new_example_chat_prompt"]
    continue_nudge_prompt: str = UTILITY_PROMPT_DEFAULTS["continue_nudge_prompt"]
    group_nudge_prompt: str = UTILITY_PROMPT_DEFAULTS["group_nudge_prompt"]
    wi_format: str = UTILITY_PROMPT_DEFAULTS["wi_format"]
    scenario_format: str = UTILITY_PROMPT_DEFAULTS["scenario_format"]
    personality_format: str = UTILITY_PROMPT_DEFAULTS["personality_format"]
    continue_prefill: bool = False
    continue_postfix: str = " "
    assistant_prefill: str = ""
    assistant_impersonation: str = ""
    openai_max_context: int = 4095
    openai_max_tokens: int = 300
    other_fields: dict[str, Any] = {}

    @model_validator(mode="after")
    def _order_refers_to_prompts(self) -> Preset:
        identifiers = [p.identifier for p in self.prompts]
        if len(set(identifiers)) != len(identifiers):
            raise ValueError("prompt identifiers must be unique")
        known = set(identifiers)
        ordered = [e.identifier for e in self.prompt_order]
        if len(set(ordered)) != len(ordered) or not known.issuperset(ordered):
            raise ValueError("prompt_order must list defined prompt identifiers, each once")
        return self

    def prompt(self, identifier: str) -> Prompt | None:
        return next((p for p in self.prompts if p.identifier == identifier), None)

    def ordered_prompts(self) -> tuple[Prompt, ...]:
        """The prompts in prompt_order, each with `enabled` set to the order's flag (SillyTavern ignores the
        prompt's own flag). Prompts missing from the order are not part of the assembly, as in SillyTavern."""
        by_id = {p.identifier: p for p in self.prompts}
        return tuple(
            by_id[e.identifier] if by_id[e.identifier].enabled == e.enabled
            else by_id[e.identifier].model_copy(update={"enabled": e.enabled})
            for e in self.prompt_order
        )


class DepthPrompt(_Frozen):
    """The card's Character's Note (`data.extensions.depth_prompt`, sillytavern.md §8.2)."""

    prompt: str = ""
    depth: int = 4
    role: Role = "system"


class WorldBookEntry(_Frozen):
    """One world book entry (sillytavern.md §9.3), whatever format it came from."""

    uid: int | str
    comment: str = ""
    content: str = ""
    keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    selective: bool = True
    selective_logic: SelectiveLogic = "and_any"
    constant: bool = False
    enabled: bool = True  # SillyTavern's `disable` inverted; the card book's `enabled`
    position: WorldPosition = "before"
    depth: int | None = None  # None when the source gave none (SillyTavern then never injects an @D entry)
    role: Role = "system"  # SillyTavern stores 0/1/2, and null for system
    order: int = 100
    outlet_name: str = ""
    probability: int = 100
    use_probability: bool = True
    group: str = ""
    group_override: bool = False
    group_weight: int = 100
    use_group_scoring: bool | None = None
    prevent_recursion: bool = False
    exclude_recursion: bool = False
    delay_until_recursion: bool | int = False  # a boolean or a recursion level
    scan_depth: int | None = None  # the three overrides: None = use the book's setting
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    ignore_budget: bool = False
    sticky: int | None = None
    cooldown: int | None = None
    delay: int | None = None
    triggers: tuple[str, ...] = ()
    match_persona_description: bool = False
    match_character_description: bool = False
    match_character_personality: bool = False
    match_character_depth_prompt: bool = False
    match_scenario: bool = False
    match_creator_notes: bool = False
    character_filter: dict[str, Any] | None = None  # {"isExclude", "names", "tags"} as SillyTavern stores it
    display_index: int | None = None
    vectorized: bool = False
    automation_id: str = ""
    # where the entry was loaded from (sillytavern.md §7.2): a selected book, the character's own lore, the book bound
    # to the chat, or the persona's
    lore: Literal["global", "character", "chat", "persona"] = "global"
    other_fields: dict[str, Any] = {}

    @property
    def display_name(self) -> str:
        return self.comment or str(self.uid)


class WorldBook(_Frozen):
    """A world book and the scan settings that activate it (sillytavern.md §7.3–7.4).

    The settings' defaults are those of a fresh SillyTavern install (its shipped settings.json: recursive scanning
    and whole-word matching on; the code's own fallbacks have both off, sillytavern.md §11.22).
    """

    name: str | None = None
    entries: tuple[WorldBookEntry, ...] = ()
    activation: Literal["all", "keywords"] = "all"  # "all": every enabled entry is active (the host chose them)
    scan_depth: int = 2
    include_names: bool = True
    recursive: bool = True
    case_sensitive: bool = False
    match_whole_words: bool = True
    budget_percent: int = 25
    budget_cap: int = 0
    min_activations: int = 0
    min_activations_depth_max: int = 0
    max_recursion_steps: int = 0
    use_group_scoring: bool = False
    # how character lore and selected books share the candidate order (§7.2; SillyTavern's default character_first)
    character_strategy: Literal["evenly", "character_first", "global_first"] = "character_first"
    other_fields: dict[str, Any] = {}

    def entry(self, uid: int | str) -> WorldBookEntry | None:
        return next((e for e in self.entries if e.uid == uid), None)


class Character(_Frozen):
    """A character card's data (V2/V3; sillytavern.md §9.2). The avatar image is not kept."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    creator_notes: str = ""
    tags: tuple[str, ...] = ()
    alternate_greetings: tuple[str, ...] = ()
    group_only_greetings: tuple[str, ...] = ()
    creator: str = ""
    character_version: str = ""
    nickname: str | None = None
    character_book: WorldBook | None = None
    depth_prompt: DepthPrompt | None = None
    talkativeness: float = 0.5
    extensions: dict[str, Any] = {}  # the card's other `data.extensions` (world, fav, regex scripts, ...)
    other_fields: dict[str, Any] = {}  # other `data` keys (V3 assets, source, dates, ...)


class Persona(_Frozen):
    """The user's persona (sillytavern.md §8.3)."""

    name: str = "User"
    description: str = ""
    position: PersonaPosition = "in_prompt"
    depth: int = 2
    role: Role = "system"


class AuthorNote(_Frozen):
    """The chat's Author's Note (sillytavern.md §8.1)."""

    content: str = ""
    position: Literal["in_chat", "before_main", "after_main"] = "in_chat"
    depth: int = 4
    role: Role = "system"
    interval: int = 1  # inserted every `interval` user messages; 0 disables it
    allow_wi_scan: bool = False


class ExtensionPrompt(_Frozen):
    """Another extension's prompt (summaries, vectors, ...), keyed like SillyTavern's extension_prompts."""

    key: str
    content: str = ""
    position: ExtensionPosition = "in_chat"
    depth: int = 0
    role: Role = "system"
    scan: bool = False


class ChatLogMessage(_Frozen):
    role: Literal["user", "assistant", "system"]
    content: str
    name: str = ""


class ChatLog(_Frozen):
    """A SillyTavern chat file (`.jsonl`): who talked, the messages a prompt can see, and the chat's author's note."""

    user_name: str = ""
    character_name: str = ""
    messages: tuple[ChatLogMessage, ...] = ()
    hidden: int = 0  # messages hidden from the prompt (`is_system`), left out as SillyTavern leaves them out (§3)
    author_note: AuthorNote | None = None
    world_info: str = ""  # the name of the world book bound to the chat (chat lore, §7.2)


class Resources(_Frozen):
    preset: Preset | None = None
    character: Character | None = None
    persona: Persona | None = None
    worldbook: WorldBook | None = None
    author_note: AuthorNote | None = None
    extension_prompts: tuple[ExtensionPrompt, ...] = ()


# -------------------------------------------------------------------------------------------------- reading


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
_REQUIRED: Any = object()


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@functools.lru_cache(maxsize=1024)
def _spellings(name: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    # Readers ask for the same few dozen fields thousands of times (one world book entry = ~40 lookups).
    return tuple(dict.fromkeys((name, _camel(name), *aliases)))


class _Reader:
    """A JSON object read field by field. It remembers what it used so the rest can be kept, and it refuses two
    spellings of one field with different values (nothing is picked silently)."""

    def __init__(self, data: dict[str, Any], path: str, fallback: _Reader | None = None):
        self.data = data
        self.path = path
        self.used: set[str] = set()
        self.fallback = fallback

    def get(self, name: str, *aliases: str) -> tuple[Any, str]:
        data = self.data
        found = [(key, data[key]) for key in _spellings(name, aliases) if key in data]
        self.used.update(key for key, _ in found)
        for key, value in found[1:]:
            if value is not None and found[0][1] is not None and value != found[0][1]:
                raise _invalid(_join(self.path, key), f"the same value as '{found[0][0]}' (both are given)", value)
        present = [(key, value) for key, value in found if value is not None]
        if present:
            key, value = present[0]
            return value, _join(self.path, key)
        if self.fallback is not None:
            value, where = self.fallback.get(name, *aliases)
            if value is not _MISSING:
                return value, where
        if found:
            return None, _join(self.path, found[0][0])
        return _MISSING, _join(self.path, name)

    def leftovers(self, *skip: str) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in self.data.items() if k not in self.used and k not in skip}

    def reject_leftovers(self, expected: Iterable[str]) -> None:
        for key in self.data:
            if key not in self.used:
                raise ImportInvalid(_join(self.path, str(key)), f"one of the fields {', '.join(expected)}")


def _object(value: Any, path: str, expected: str = "a JSON object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(path, expected, value)
    for key in value:
        if not isinstance(key, str):
            raise _invalid(path, "an object with string keys", key)
    return value


def _text(value: Any, path: str, default: Any = "") -> Any:
    if value is _MISSING or value is None:
        if default is _REQUIRED:
            raise ImportInvalid(path, "a string (required)")
        return default
    if not isinstance(value, str):
        raise _invalid(path, "a string", value)
    return value


def _flag(value: Any, path: str, default: Any) -> Any:
    if value is _MISSING or value is None:
        return default
    if not isinstance(value, bool):
        raise _invalid(path, "true or false", value)
    return value


def _whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)  # JSON written by JavaScript may say 4.0
    return None


def _integer(value: Any, path: str, default: Any, *, minimum: int | None = None, maximum: int | None = None,
             nullable: bool = False) -> Any:
    if value is _MISSING:
        return default
    if value is None:
        return None if nullable else default
    number = _whole_number(value)
    bounds = ""
    if minimum is not None and maximum is not None:
        bounds = f" from {minimum} to {maximum}"
    elif minimum is not None:
        bounds = f" >= {minimum}"
    if number is None or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _invalid(path, f"an integer{bounds}", value)
    return number


def _texts(value: Any, path: str) -> tuple[str, ...]:
    if value is _MISSING or value is None:
        return ()
    if not isinstance(value, list):
        raise _invalid(path, "a list of strings", value)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _invalid(_join(path, index), "a string", item)
    return tuple(value)


def _generation_types(value: Any, path: str) -> tuple[str, ...]:
    types = _texts(value, path)
    for index, kind in enumerate(types):
        if kind not in GENERATION_TYPES:
            raise _invalid(_join(path, index), "a generation type: " + ", ".join(GENERATION_TYPES), kind)
    return types


def _role(value: Any, path: str, default: str = "system") -> str:
    if value is _MISSING or value is None:
        return default
    if isinstance(value, str) and value in ROLES:
        return value
    number = _whole_number(value)
    if number is not None and 0 <= number < len(ROLES):
        return ROLES[number]
    raise _invalid(path, "a role: system, user or assistant (or 0, 1, 2)", value)


_DIGITS = re.compile(r"\s*-?[0-9]{1,6}\s*")


def _named(value: Any, path: str, default: str, *, names: dict[str, str], numbers: dict[int, str],
           expected: str, digit_strings: bool = False) -> str:
    if value is _MISSING or value is None:
        return default
    if isinstance(value, str):
        if value in names:
            return names[value]
        if value.lower() in names:
            return names[value.lower()]
        if digit_strings and _DIGITS.fullmatch(value) and int(value) in numbers:
            return numbers[int(value)]
    number = _whole_number(value)
    if number is not None and number in numbers:
        return numbers[number]
    raise _invalid(path, expected, value)


def world_position(value: Any, path: str = "position") -> str:
    """Any accepted spelling of a world book position -> its canonical name (engine.md §1)."""
    return _named(value, path, "before", names=_WORLD_POSITION_ALIASES, numbers=WORLD_POSITION_BY_NUMBER,
                  digit_strings=True,
                  expected="a world book position: " + ", ".join(WORLD_POSITIONS) + ", the seed-000 names "
                  "(before_character, ...), or SillyTavern's numbers 0..7")


# -------------------------------------------------------------------------------------------------- preset


def _prompt(value: Any, path: str) -> Prompt:
    data = _object(value, path, "a prompt object")
    st_extras = data.get("st")  # the DSH adapter's {"st": {injection_order, forbid_overrides}} (reference A.12)
    fallback = _Reader(_object(st_extras, _join(path, "st")), _join(path, "st")) if st_extras is not None else None
    r = _Reader(data, path, fallback)
    identifier = _text(*r.get("identifier"), default=_REQUIRED)
    if not identifier:
        raise ImportInvalid(_join(path, "identifier"), "a non-empty identifier")
    triggers = _generation_types(*r.get("injection_trigger"))
    position = _named(*r.get("injection_position"), 0, names={"relative": 0, "in_chat": 1, "absolute": 1},
                      numbers={0: 0, 1: 1}, expected="0 (relative) or 1 (in-chat)")
    return Prompt(
        identifier=identifier,
        name=_text(*r.get("name")),
        role=_role(*r.get("role")),
        content=_text(*r.get("content")),
        enabled=_flag(*r.get("enabled"), True),
        marker=_flag(*r.get("marker"), False),
        system_prompt=_flag(*r.get("system_prompt"), False),
        injection_position=position,
        injection_depth=_integer(*r.get("injection_depth"), 4, minimum=0),
        injection_order=_integer(*r.get("injection_order"), 100),
        injection_trigger=triggers,
        forbid_overrides=_flag(*r.get("forbid_overrides"), False),
        other_fields=r.leftovers("st"),
    )


def _order_entries(value: Any, path: str) -> tuple[PromptOrderEntry, ...]:
    if not isinstance(value, list):
        raise _invalid(path, "a list of {identifier, enabled}", value)
    entries = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = _join(path, index)
        r = _Reader(_object(item, where, "an {identifier, enabled} object"), where)
        identifier = _text(*r.get("identifier"), default=_REQUIRED)
        value_enabled, enabled_path = r.get("enabled")
        if value_enabled is _MISSING or value_enabled is None:
            raise ImportInvalid(enabled_path, "true or false (required)")
        enabled = _flag(value_enabled, enabled_path, False)
        r.reject_leftovers(("identifier", "enabled"))
        if identifier in seen:
            raise _invalid(_join(where, "identifier"), "an identifier listed once in this order", identifier)
        seen.add(identifier)
        entries.append(PromptOrderEntry(identifier=identifier, enabled=enabled))
    return tuple(entries)


def _character_id(value: Any, path: str) -> int | str:
    number = _whole_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value:
        return value
    raise _invalid(path, "a character id (integer or string)", value)


def _prompt_orders(
    value: Any, path: str
) -> tuple[tuple[PromptOrderEntry, ...] | None, str, tuple[PromptOrderList, ...]]:
    """prompt_order -> (the order for character 100001 or None, that order's path, the other characters' orders)."""
    if not isinstance(value, list):
        raise _invalid(path, "a list of {character_id, order}", value)
    if value and all(isinstance(item, dict) and "identifier" in item for item in value):
        return _order_entries(value, path), path, ()  # a prompt export's flat order (sillytavern.md §2.7)
    chosen: tuple[PromptOrderEntry, ...] | None = None
    chosen_path = path
    others: list[PromptOrderList] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = _join(path, index)
        r = _Reader(_object(item, where, "a {character_id, order} object"), where)
        raw_id, id_path = r.get("character_id")
        if raw_id is _MISSING or raw_id is None:
            raise ImportInvalid(id_path, "a character id (required)")
        character_id = _character_id(raw_id, id_path)
        order_value, order_path = r.get("order")
        order = _order_entries([] if order_value is _MISSING or order_value is None else order_value, order_path)
        r.reject_leftovers(("character_id", "order"))
        if str(character_id) in seen:
            raise _invalid(id_path, "a character id listed once", raw_id)
        seen.add(str(character_id))
        if str(character_id) == str(PROMPT_ORDER_CHARACTER_ID):
            chosen, chosen_path = order, order_path
        else:
            others.append(PromptOrderList(character_id=character_id, order=order))
    return chosen, chosen_path, tuple(others)


_PRESET_TEXT_OPTIONS = (*UTILITY_PROMPT_DEFAULTS, "continue_postfix", "assistant_prefill", "assistant_impersonation")


def _preset(value: Any, path: str) -> Preset:
    data = _object(value, path, "a preset object")
    if "prompts" not in data and "prompt_order" not in data and isinstance(data.get("data"), dict):
        # A Prompt Manager export {"version", "type", "data": {"prompts", "prompt_order"}} (sillytavern.md §2.7).
        wrapper = _Reader(data, path)
        wrapper.get("data")
        wrapper.get("version")
        wrapper.get("type")
        wrapper.reject_leftovers(("version", "type", "data"))
        return _preset(data["data"], _join(path, "data"))
    r = _Reader(data, path)
    prompts_value, prompts_path = r.get("prompts")
    order_value, order_path = r.get("prompt_order")
    if prompts_value is _MISSING and order_value is _MISSING:
        raise ImportInvalid(prompts_path, "a list of prompts (a preset has `prompts` or `prompt_order`)")
    if prompts_value is _MISSING or prompts_value is None:
        prompts_value = []
    if not isinstance(prompts_value, list):
        raise _invalid(prompts_path, "a list of prompts", prompts_value)
    prompts = [_prompt(item, _join(prompts_path, index)) for index, item in enumerate(prompts_value)]
    seen: set[str] = set()
    for index, prompt in enumerate(prompts):
        if prompt.identifier in seen:
            raise _invalid(_join(_join(prompts_path, index), "identifier"), "a unique identifier", prompt.identifier)
        seen.add(prompt.identifier)

    has_order = order_value is not _MISSING and order_value is not None
    others: tuple[PromptOrderList, ...] = ()
    if has_order:
        chosen, chosen_path, others = _prompt_orders(order_value, order_path)
        # SillyTavern re-adds missing built-in definitions and uses its default order when 100001 has none.
        prompts += [Prompt(**b) for b in _BUILTIN_PROMPTS if b["identifier"] not in seen]
        order = chosen or tuple(PromptOrderEntry(identifier=i, enabled=e) for i, e in DEFAULT_PROMPT_ORDER)
        known = {p.identifier for p in prompts}
        for index, entry in enumerate(order):
            if entry.identifier not in known:
                raise _invalid(_join(_join(chosen_path, index), "identifier"),
                               "the identifier of a prompt defined in `prompts`", entry.identifier)
    else:
        order = tuple(PromptOrderEntry(identifier=p.identifier, enabled=p.enabled) for p in prompts)

    options: dict[str, Any] = {}
    for key in _PRESET_TEXT_OPTIONS:
        text = _text(*r.get(key), default=_MISSING)
        if text is not _MISSING:
            options[key] = text
    has_utility = any(k in data or _camel(k) in data for k in UTILITY_PROMPT_DEFAULTS)
    for key in ("squash_system_messages", "continue_prefill"):
        flag = _flag(*r.get(key), _MISSING)
        if flag is not _MISSING:
            options[key] = flag
    for key in ("openai_max_context", "openai_max_tokens"):
        number = _integer(*r.get(key), _MISSING, minimum=0)
        if number is not _MISSING:
            options[key] = number
    names = _integer(*r.get("names_behavior"), _MISSING, minimum=-1, maximum=2)
    if names is not _MISSING:
        options["names_behavior"] = names
    return Preset(
        prompts=tuple(prompts), prompt_order=order, has_prompt_order=has_order, other_prompt_orders=others,
        has_utility_prompts=has_utility, other_fields=r.leftovers(), **options,
    )


def import_preset(data: dict[str, Any]) -> Preset:
    """A SillyTavern chat-completion preset (current or 1.12-era), a Prompt Manager export, or engine.md's
    simplified `{"prompts": [...]}` -> Preset."""
    return _guarded(lambda: _preset(data, ""))


def _export_prompt(prompt: Prompt) -> dict[str, Any]:
    return {
        **copy.deepcopy(prompt.other_fields),
        "identifier": prompt.identifier, "name": prompt.name, "role": prompt.role, "content": prompt.content,
        "system_prompt": prompt.system_prompt, "marker": prompt.marker, "enabled": prompt.enabled,
        "injection_position": prompt.injection_position, "injection_depth": prompt.injection_depth,
        "injection_order": prompt.injection_order, "injection_trigger": list(prompt.injection_trigger),
        "forbid_overrides": prompt.forbid_overrides,
    }


def export_preset(preset: Preset) -> dict[str, Any]:
    """Preset -> SillyTavern preset JSON (the keys it did not model come back as they were)."""
    out = copy.deepcopy(preset.other_fields)
    out["prompts"] = [_export_prompt(p) for p in preset.prompts]
    if preset.has_prompt_order:
        out["prompt_order"] = [
            {"character_id": lst.character_id, "order": [e.model_dump() for e in lst.order]}
            for lst in preset.other_prompt_orders
        ] + [{"character_id": PROMPT_ORDER_CHARACTER_ID, "order": [e.model_dump() for e in preset.prompt_order]}]
    if preset.has_utility_prompts:
        out.update({key: getattr(preset, key) for key in UTILITY_PROMPT_DEFAULTS})
    for key in ("names_behavior", "squash_system_messages", "continue_prefill", "continue_postfix",
                "assistant_prefill", "assistant_impersonation", "openai_max_context", "openai_max_tokens"):
        out[key] = getattr(preset, key)
    return out


# -------------------------------------------------------------------------------------------------- world book

_BOOK_SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (our name, other accepted spellings: SillyTavern's world_info_* settings, the V2 character_book's names)
    ("scan_depth", ("world_info_depth",)),
    ("include_names", ("world_info_include_names",)),
    ("recursive", ("world_info_recursive", "recursive_scanning")),
    ("case_sensitive", ("world_info_case_sensitive",)),
    ("match_whole_words", ("world_info_match_whole_words",)),
    ("budget_percent", ("world_info_budget",)),
    ("budget_cap", ("world_info_budget_cap",)),
    ("min_activations", ("world_info_min_activations",)),
    ("min_activations_depth_max", ("world_info_min_activations_depth_max",)),
    ("max_recursion_steps", ("world_info_max_recursion_steps",)),
    ("use_group_scoring", ("world_info_use_group_scoring",)),
)
_BOOK_SETTING_LIMITS = {"scan_depth": (0, 1000), "budget_percent": (0, 100)}


def _book_settings(r: _Reader) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    defaults = WorldBook.model_fields
    for name, aliases in _BOOK_SETTINGS:
        value, where = r.get(name, *aliases)
        default = defaults[name].default
        if isinstance(default, bool):
            parsed = _flag(value, where, _MISSING)
        else:
            low, high = _BOOK_SETTING_LIMITS.get(name, (0, None))
            parsed = _integer(value, where, _MISSING, minimum=low, maximum=high)
        if parsed is not _MISSING:
            settings[name] = parsed
    strategy, where = r.get("character_strategy", "world_info_character_strategy")
    if strategy is not _MISSING and strategy is not None:
        settings["character_strategy"] = _named(
            strategy, where, "character_first", names={n: n for n in CHARACTER_STRATEGY_BY_NUMBER.values()},
            numbers=CHARACTER_STRATEGY_BY_NUMBER, expected="a character lore strategy: evenly, character_first, "
            "global_first (or 0, 1, 2)")
    activation, where = r.get("activation")
    if activation is not _MISSING and activation is not None:
        if activation not in ("all", "keywords"):
            raise _invalid(where, "the activation mode 'all' or 'keywords'", activation)
        settings["activation"] = activation
    name_value = _text(*r.get("name"), default=None)
    if name_value is not None:
        settings["name"] = name_value
    return settings


CHARACTER_STRATEGY_BY_NUMBER = {0: "evenly", 1: "character_first", 2: "global_first"}


def _uid(value: Any, path: str) -> int | str:
    number = _whole_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value:
        return value
    raise _invalid(path, "an entry id (integer or non-empty string)", value)


_ENTRY_FLAGS = (
    ("constant", False), ("selective", True), ("use_probability", True), ("group_override", False),
    ("prevent_recursion", False), ("exclude_recursion", False), ("ignore_budget", False), ("vectorized", False),
    ("match_persona_description", False), ("match_character_description", False),
    ("match_character_personality", False), ("match_character_depth_prompt", False), ("match_scenario", False),
    ("match_creator_notes", False),
)


def _entry(value: Any, path: str, default_uid: int | str, *, book_form: bool) -> WorldBookEntry:
    """One entry. `book_form`: a list entry (card character_book or the simplified list) whose `extensions`
    carry SillyTavern's fields in snake_case; a native entry keeps its `extensions` untouched."""
    data = _object(value, path, "a world book entry object")
    ext = data.get("extensions") if book_form else None
    ext_path = _join(path, "extensions")
    fallback = _Reader(_object(ext, ext_path), ext_path) if ext is not None else None
    r = _Reader(data, path, fallback)
    if book_form:
        r.used.add("extensions")

    uid_value, uid_path = r.get("uid", "id")
    uid = default_uid if uid_value is _MISSING or uid_value is None else _uid(uid_value, uid_path)

    enabled_value, enabled_path = r.get("enabled")
    disable_value, disable_path = r.get("disable")
    enabled = _flag(enabled_value, enabled_path, _MISSING)
    disabled = _flag(disable_value, disable_path, _MISSING)
    if enabled is not _MISSING and disabled is not _MISSING and enabled == disabled:
        raise _invalid(disable_path, f"the opposite of enabled ({enabled})", disabled)
    enabled = enabled if enabled is not _MISSING else (not disabled if disabled is not _MISSING else True)

    # The card book's exact number lives in extensions.position; its own position is only before/after_char.
    position_value, position_path = (fallback.get("position") if fallback else (_MISSING, ""))
    if position_value is _MISSING or position_value is None:
        position_value, position_path = r.get("position")
    else:
        r.used.add("position")
    default_position = "after" if book_form else "before"
    position = default_position if position_value is _MISSING or position_value is None else world_position(
        position_value, position_path
    )

    delay_value, delay_path = r.get("delay_until_recursion")
    if delay_value is _MISSING or delay_value is None:
        delay_until_recursion: bool | int = False
    elif isinstance(delay_value, bool):
        delay_until_recursion = delay_value
    else:
        delay_until_recursion = _integer(delay_value, delay_path, 0, minimum=0)

    filter_value, filter_path = r.get("character_filter")
    character_filter = None
    if filter_value is not _MISSING and filter_value is not None:
        character_filter = copy.deepcopy(_object(filter_value, filter_path, "a {isExclude, names, tags} object"))

    flags = {name: _flag(*r.get(name), default) for name, default in _ENTRY_FLAGS}
    logic = _named(*r.get("selective_logic"), "and_any", names={v: v for v in SELECTIVE_LOGIC_BY_NUMBER.values()},
                   numbers=SELECTIVE_LOGIC_BY_NUMBER, expected="a selective logic: and_any, not_all, not_any, "
                   "and_all (or 0..3)")
    triggers = _generation_types(*r.get("triggers"))

    fields: dict[str, Any] = dict(
        uid=uid,
        comment=_text(*r.get("comment")),
        content=_text(*r.get("content")),
        keys=_texts(*r.get("keys", "key")),
        secondary_keys=_texts(*r.get("secondary_keys", "keysecondary")),
        selective_logic=logic,
        enabled=enabled,
        position=position,
        depth=_integer(*r.get("depth"), None, minimum=0, nullable=True),
        role=_role(*r.get("role")),
        order=_integer(*r.get("order", "insertion_order"), 100),
        outlet_name=_text(*r.get("outlet_name")),
        probability=_integer(*r.get("probability"), 100, minimum=0, maximum=100),
        group=_text(*r.get("group")),
        group_weight=_integer(*r.get("group_weight"), 100, minimum=0),
        use_group_scoring=_flag(*r.get("use_group_scoring"), None),
        delay_until_recursion=delay_until_recursion,
        scan_depth=_integer(*r.get("scan_depth"), None, minimum=0, maximum=1000, nullable=True),
        case_sensitive=_flag(*r.get("case_sensitive"), None),
        match_whole_words=_flag(*r.get("match_whole_words"), None),
        sticky=_integer(*r.get("sticky"), None, minimum=0, nullable=True),
        cooldown=_integer(*r.get("cooldown"), None, minimum=0, nullable=True),
        delay=_integer(*r.get("delay"), None, minimum=0, nullable=True),
        triggers=triggers,
        character_filter=character_filter,
        display_index=_integer(*r.get("display_index"), None, nullable=True),
        automation_id=_text(*r.get("automation_id")),
        lore=_named(*r.get("lore"), "global", names={n: n for n in ("global", "character", "chat", "persona")},
                    numbers={}, expected="where the entry comes from: global, character, chat or persona"),
        **flags,
    )
    other = r.leftovers()
    if fallback is not None:
        rest = fallback.leftovers()
        if rest:
            other["extensions"] = rest
    elif not book_form and other.get("extensions") == {}:
        del other["extensions"]  # an empty native `extensions` says nothing; book exports always write one
    return WorldBookEntry(**fields, other_fields=other)


def _worldbook(value: Any, path: str) -> WorldBook:
    data = _object(value, path, "a world book object with `entries`")
    r = _Reader(data, path)
    entries_value, entries_path = r.get("entries")
    if entries_value is _MISSING:
        raise ImportInvalid(entries_path, "the world book's entries (an object keyed by uid, or a list)")
    entries: list[WorldBookEntry] = []
    if isinstance(entries_value, dict):
        for key, item in _object(entries_value, entries_path).items():
            default_uid: int | str = int(key) if key.isascii() and key.isdecimal() else key
            entries.append(_entry(item, _join(entries_path, key), default_uid, book_form=False))
    elif isinstance(entries_value, list):
        for index, item in enumerate(entries_value):
            entries.append(_entry(item, _join(entries_path, index), index, book_form=True))
    else:
        raise _invalid(entries_path, "the world book's entries (an object keyed by uid, or a list)", entries_value)
    seen: dict[int | str, int] = {}
    for index, entry in enumerate(entries):
        if entry.uid in seen:
            where = _join(entries_path, index) if isinstance(entries_value, list) else _join(
                entries_path, list(entries_value)[index]
            )
            raise _invalid(_join(where, "uid"), "a uid used by one entry only", entry.uid)
        seen[entry.uid] = index
    settings = _book_settings(r)
    other = r.leftovers()
    if other.get("extensions") == {}:
        del other["extensions"]  # the card book's required-but-empty extensions; its export always writes one
    return WorldBook(entries=tuple(entries), other_fields=other, **settings)


def import_worldbook(data: dict[str, Any]) -> WorldBook:
    """A native world book `{"entries": {"<uid>": {...}}}`, a card's `character_book` (entries list plus
    extensions), or engine.md's simplified `{"entries": [...]}` -> WorldBook."""
    return _guarded(lambda: _worldbook(data, ""))


def _book_settings_out(book: WorldBook) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if book.name is not None:
        out["name"] = book.name
    for name in ("activation", "character_strategy", *(n for n, _ in _BOOK_SETTINGS)):
        if getattr(book, name) != WorldBook.model_fields[name].default:
            out[name] = getattr(book, name)
    return out


def _entry_fields(entry: WorldBookEntry) -> dict[str, Any]:
    """The fields both formats share, in SillyTavern's native (camelCase) spelling."""
    out: dict[str, Any] = {
        "comment": entry.comment, "content": entry.content, "constant": entry.constant,
        "selective": entry.selective,
        "selectiveLogic": next(n for n, v in SELECTIVE_LOGIC_BY_NUMBER.items() if v == entry.selective_logic),
        "role": ROLES.index(entry.role), "outletName": entry.outlet_name, "probability": entry.probability,
        "useProbability": entry.use_probability, "group": entry.group, "groupOverride": entry.group_override,
        "groupWeight": entry.group_weight, "preventRecursion": entry.prevent_recursion,
        "excludeRecursion": entry.exclude_recursion, "delayUntilRecursion": entry.delay_until_recursion,
        "ignoreBudget": entry.ignore_budget, "vectorized": entry.vectorized, "automationId": entry.automation_id,
        "triggers": list(entry.triggers),
    }
    for name, _default in _ENTRY_FLAGS:
        if name.startswith("match_"):
            out[_camel(name)] = getattr(entry, name)
    for name in ("depth", "use_group_scoring", "scan_depth", "case_sensitive", "match_whole_words", "sticky",
                 "cooldown", "delay", "display_index"):
        out[_camel(name)] = getattr(entry, name)  # None is written as SillyTavern's null ("not set")
    if entry.character_filter is not None:
        out["characterFilter"] = copy.deepcopy(entry.character_filter)
    if entry.lore != "global":
        out["lore"] = entry.lore
    return out


def _export_native_entry(entry: WorldBookEntry) -> dict[str, Any]:
    return {
        **copy.deepcopy(entry.other_fields), "uid": entry.uid, "key": list(entry.keys),
        "keysecondary": list(entry.secondary_keys), "order": entry.order,
        "position": _WORLD_POSITION_NUMBER[entry.position], "disable": not entry.enabled, **_entry_fields(entry),
    }


def export_worldbook(book: WorldBook) -> dict[str, Any]:
    """WorldBook -> SillyTavern's native world book JSON `{"entries": {"<uid>": {...}}}`."""
    out = copy.deepcopy(book.other_fields)
    out.update(_book_settings_out(book))
    out["entries"] = {str(e.uid): _export_native_entry(e) for e in book.entries}
    return out


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _export_book_entry(entry: WorldBookEntry) -> dict[str, Any]:
    other = copy.deepcopy(entry.other_fields)
    kept_extensions = other.pop("extensions", {})
    shared = _entry_fields(entry)
    comment, content = shared.pop("comment"), shared.pop("content")
    constant, selective = shared.pop("constant"), shared.pop("selective")
    extensions = kept_extensions if isinstance(kept_extensions, dict) else {}
    # The card book's extensions use snake_case except these two, as SillyTavern writes them (§9.3).
    extensions.update({key if key in ("useProbability", "selectiveLogic") else _snake(key): value
                       for key, value in shared.items()})
    extensions["position"] = _WORLD_POSITION_NUMBER[entry.position]
    return {
        **other, "id": entry.uid, "keys": list(entry.keys), "secondary_keys": list(entry.secondary_keys),
        "comment": comment, "content": content, "constant": constant, "selective": selective,
        "insertion_order": entry.order, "enabled": entry.enabled,
        "position": "before_char" if entry.position == "before" else "after_char", "extensions": extensions,
    }


def export_character_book(book: WorldBook) -> dict[str, Any]:
    """WorldBook -> a card's V2 `character_book` (entries list; SillyTavern's fields in each entry's extensions)."""
    out = copy.deepcopy(book.other_fields)
    out.update(_book_settings_out(book))
    out.setdefault("extensions", {})
    out["entries"] = [_export_book_entry(e) for e in book.entries]
    return out


# -------------------------------------------------------------------------------------------------- character

_CARD_SPECS = ("chara_card_v2", "chara_card_v3")
_CARD_TEXTS = (
    ("name", ()), ("description", ()), ("personality", ()), ("scenario", ()), ("first_mes", ()),
    ("mes_example", ("messageExample", "mesExample")), ("system_prompt", ()), ("post_history_instructions", ()),
    ("creator_notes", ("creatorcomment",)), ("creator", ()), ("character_version", ()),
)


def _depth_prompt(value: Any, path: str) -> DepthPrompt:
    r = _Reader(_object(value, path, "a {prompt, depth, role} object"), path)
    prompt = DepthPrompt(
        prompt=_text(*r.get("prompt")),
        depth=_integer(*r.get("depth"), 4, minimum=0),
        role=_role(*r.get("role")),
    )
    r.reject_leftovers(("prompt", "depth", "role"))
    return prompt


def _talkativeness(value: Any, path: str) -> float:
    if value is _MISSING or value is None or value == "":
        return 0.5
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):  # SillyTavern stores it as a string ("0.5")
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not 0 <= number <= 1:
        raise _invalid(path, "a talkativeness from 0 to 1", value)
    return number


def _character_data(data: dict[str, Any], path: str) -> Character:
    """The fields of a card's `data` (V2/V3) or of a flat card (V1 / engine.md's simplified shape)."""
    r = _Reader(data, path)
    fields: dict[str, Any] = {}
    for name, aliases in _CARD_TEXTS:
        fields[name] = _text(*r.get(name, *aliases), default=_REQUIRED if name == "name" else "")
    for name in ("tags", "alternate_greetings", "group_only_greetings"):
        fields[name] = _texts(*r.get(name))
    fields["nickname"] = _text(*r.get("nickname"), default=None)

    ext_value, ext_path = r.get("extensions")
    extensions = {} if ext_value is _MISSING or ext_value is None else _object(ext_value, ext_path)
    ext = _Reader(extensions, ext_path)
    depth_value, depth_path = ext.get("depth_prompt")
    top_depth, top_depth_path = r.get("depth_prompt")
    if top_depth is not _MISSING and top_depth is not None:
        if depth_value not in (_MISSING, None) and depth_value != top_depth:
            raise _invalid(top_depth_path, f"the same value as {depth_path} (both are given)", top_depth)
        depth_value, depth_path = top_depth, top_depth_path
    if depth_value is not _MISSING and depth_value is not None:
        fields["depth_prompt"] = _depth_prompt(depth_value, depth_path)
    talk_value, talk_path = ext.get("talkativeness")
    if talk_value is _MISSING:
        talk_value, talk_path = r.get("talkativeness")
    else:
        r.get("talkativeness")  # the V1 top-level mirror of the same value
    fields["talkativeness"] = _talkativeness(talk_value, talk_path)

    book_value, book_path = r.get("character_book")
    if book_value is not _MISSING and book_value is not None:
        fields["character_book"] = _worldbook(book_value, book_path)
    return Character(**fields, extensions=ext.leftovers(), other_fields=r.leftovers())


def _card(value: Any, path: str) -> Character:
    data = _object(value, path, "a character card object")
    if "spec" in data or isinstance(data.get("data"), dict):
        spec = data.get("spec")
        if "spec" in data and spec not in _CARD_SPECS:
            raise _invalid(_join(path, "spec"), "'chara_card_v2' or 'chara_card_v3'", spec)
        # The top-level keys beside `data` are SillyTavern's V1 mirrors of it; `data` is the card.
        return _character_data(_object(data.get("data"), _join(path, "data"), "the card's data object"),
                               _join(path, "data"))
    return _character_data(data, path)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CARD_CHUNKS = ("ccv3", "chara")  # preferred first, as SillyTavern reads them
_MAX_INFLATED = 4 * MAX_IMPORT_BYTES


def _inflate(data: bytes, path: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, _MAX_INFLATED)
    except zlib.error as error:
        raise ImportInvalid(path, f"valid zlib-compressed text ({error})") from None
    if inflater.unconsumed_tail:
        raise ImportInvalid(path, f"compressed text of at most {_MAX_INFLATED} bytes", status=413)
    return out


def _png_text_chunks(png: bytes) -> dict[str, tuple[str, str]]:
    """Card text chunks (tEXt, zTXt, iTXt) by lower-case keyword -> (text, path)."""
    found: dict[str, tuple[str, str]] = {}
    position = len(_PNG_SIGNATURE)
    index = 0
    while position < len(png):
        where = f"png.chunks[{index}]"
        if position + 8 > len(png):
            raise ImportInvalid(where, "a complete chunk header (the PNG is truncated)")
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        end = position + 12 + length
        if end > len(png):
            raise ImportInvalid(where, f"{length} bytes of chunk data and a CRC (the PNG is truncated)")
        body = png[position + 8:position + 8 + length]
        if zlib.crc32(kind + body) != int.from_bytes(png[end - 4:end], "big"):
            raise ImportInvalid(where, f"a correct CRC for the {kind.decode('latin-1')!r} chunk")
        position, index = end, index + 1
        if kind == b"IEND":
            break
        if kind not in (b"tEXt", b"zTXt", b"iTXt") or b"\x00" not in body:
            continue
        keyword_bytes, rest = body.split(b"\x00", 1)
        keyword = keyword_bytes.decode("latin-1").lower()
        if keyword not in _CARD_CHUNKS or keyword in found:
            continue
        chunk_path = f"png[{keyword}]"
        if kind == b"tEXt":
            text = rest.decode("latin-1")
        elif kind == b"zTXt":
            if not rest or rest[0] != 0:
                raise ImportInvalid(chunk_path, "zTXt compression method 0")
            text = _inflate(rest[1:], chunk_path).decode("latin-1")
        else:
            if len(rest) < 2 or rest[2:].count(b"\x00") < 2:
                raise ImportInvalid(chunk_path, "an iTXt chunk with language and translated keyword fields")
            compressed, _method = rest[0], rest[1]
            _language, _translated, payload = rest[2:].split(b"\x00", 2)
            raw = _inflate(payload, chunk_path) if compressed else payload
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ImportInvalid(chunk_path, "UTF-8 text in the iTXt chunk") from None
        found[keyword] = (text, chunk_path)
    return found


def _card_from_png(png: bytes) -> tuple[dict[str, Any], str]:
    chunks = _png_text_chunks(png)
    for keyword in _CARD_CHUNKS:
        if keyword in chunks:
            text, path = chunks[keyword]
            try:
                decoded = base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                raise ImportInvalid(path, "base64-encoded UTF-8 JSON") from None
            try:
                card = json.loads(decoded)
            except (ValueError, RecursionError):
                raise ImportInvalid(path, "base64-encoded JSON (the decoded text is not JSON)") from None
            return _object(card, path, "a character card object"), path
    raise ImportInvalid("png", "a PNG with a 'chara' or 'ccv3' text chunk (a SillyTavern character card)",
                        status=415)


def _character(value: Any, path: str) -> Character:
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) > MAX_IMPORT_BYTES:
            raise ImportInvalid(path, f"a file of at most 5 MiB ({MAX_IMPORT_BYTES} bytes), got {len(raw)} bytes",
                                status=413)
        if not raw.startswith(_PNG_SIGNATURE):
            raise ImportInvalid(path, "a PNG character card (these bytes are not a PNG)", status=415)
        card, card_path = _card_from_png(raw)
        return _card(card, card_path)
    return _card(value, path)


_CHAT_NOTE_KEYS = ("note_prompt", "note_interval", "note_position", "note_depth", "note_role")


def _chat_log(data: str | bytes) -> ChatLog:
    if isinstance(data, bytes):
        if len(data) > MAX_IMPORT_BYTES:
            raise ImportInvalid("", f"a chat file of at most {MAX_IMPORT_BYTES} bytes", status=413)
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ImportInvalid("", "a UTF-8 text file of JSON lines (SillyTavern's .jsonl chat)") from None
    if not isinstance(data, str):
        raise _invalid("", "the text of a SillyTavern chat file (JSON lines)", data)
    header: dict[str, Any] = {}
    messages: list[ChatLogMessage] = []
    hidden = 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            item = json.loads(line)
        except ValueError:
            raise ImportInvalid(where, "one JSON object per line") from None
        r = _Reader(_object(item, where, "a chat message object"), where)
        if number == 1 and "mes" not in item:  # the header: names and chat metadata
            header = item
            continue
        text = _text(*r.get("mes"), default=_REQUIRED)
        is_user = _flag(*r.get("is_user"), False)
        if _flag(*r.get("is_system"), False):
            hidden += 1
            continue
        extra, extra_where = r.get("extra")
        narrator = isinstance(extra, dict) and extra.get("type") == "narrator"
        if extra is not _MISSING and extra is not None and not isinstance(extra, dict):
            raise _invalid(extra_where, "an object", extra)
        role = "user" if is_user else "system" if narrator else "assistant"
        messages.append(ChatLogMessage(role=role, content=text.replace("\r", ""), name=_text(*r.get("name"))))
    hr = _Reader(header, "line 1")
    metadata, metadata_where = hr.get("chat_metadata")
    note = None
    if metadata is not _MISSING and metadata is not None:
        metadata = _object(metadata, metadata_where, "an object")
        fields = {k: metadata[k] for k in _CHAT_NOTE_KEYS if k in metadata}
        if isinstance(fields.get("note_prompt"), str) and fields["note_prompt"].strip():
            note = _author_note(fields, metadata_where)
        chat_book = _text(metadata.get("world_info"), _join(metadata_where, "world_info"))
    else:
        chat_book = ""
    return ChatLog(user_name=_text(*hr.get("user_name")), character_name=_text(*hr.get("character_name")),
                   messages=tuple(messages), hidden=hidden, author_note=note, world_info=chat_book)


def import_chat(data: str | bytes) -> ChatLog:
    """A SillyTavern chat file (`.jsonl`: a header line with the names and `chat_metadata`, then one message per
    line) -> ChatLog. User messages are `is_user`; narrator messages (`extra.type` "narrator") are system; hidden
    messages (`is_system`) are counted and left out; the chat's author's note comes from `chat_metadata.note_*`."""
    return _guarded(lambda: _chat_log(data))


def export_chat(log: ChatLog) -> str:
    """ChatLog -> a SillyTavern chat file (`.jsonl`); `import_chat` reads it back (hidden messages are not kept)."""
    metadata: dict[str, Any] = {}
    note = log.author_note
    if note is not None:
        position = {v: k for k, v in EXTENSION_POSITION_BY_NUMBER.items()}[note.position]
        metadata = {"note_prompt": note.content, "note_interval": note.interval, "note_position": position,
                    "note_depth": note.depth, "note_role": ROLES.index(note.role)}
    if log.world_info:
        metadata["world_info"] = log.world_info
    lines = [{"user_name": log.user_name, "character_name": log.character_name, "chat_metadata": metadata}]
    for m in log.messages:
        line: dict[str, Any] = {"name": m.name or (log.user_name if m.role == "user" else log.character_name),
                                "is_user": m.role == "user", "is_system": False, "mes": m.content, "extra": {}}
        if m.role == "system":
            line["extra"] = {"type": "narrator"}
        lines.append(line)
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def import_character(data: dict[str, Any] | bytes) -> Character:
    """A card V2 (`chara_card_v2`) or V3 (`chara_card_v3`) JSON object, a flat V1 / simplified card, or PNG bytes
    with a `ccv3` (preferred) or `chara` text chunk -> Character."""
    return _guarded(lambda: _character(data, ""))


def export_character(character: Character) -> dict[str, Any]:
    """Character -> a V2 card JSON (`chara_card_v2`), with SillyTavern's V1 mirrors at the top level."""
    extensions = copy.deepcopy(character.extensions)
    extensions["talkativeness"] = str(character.talkativeness)
    if character.depth_prompt is not None:
        extensions["depth_prompt"] = character.depth_prompt.model_dump()
    data: dict[str, Any] = {
        **copy.deepcopy(character.other_fields),
        **{name: getattr(character, name) for name, _ in _CARD_TEXTS},
        "tags": list(character.tags),
        "alternate_greetings": list(character.alternate_greetings),
        "group_only_greetings": list(character.group_only_greetings),
        "extensions": extensions,
    }
    if character.nickname is not None:
        data["nickname"] = character.nickname
    if character.character_book is not None:
        data["character_book"] = export_character_book(character.character_book)
    mirrors = {name: data[name] for name in ("name", "description", "personality", "scenario", "first_mes",
                                             "mes_example", "tags")}
    return {
        **mirrors, "creatorcomment": character.creator_notes, "talkativeness": extensions["talkativeness"],
        "spec": "chara_card_v2", "spec_version": "2.0", "data": data,
    }


# -------------------------------------------------------------------------------------------------- persona, notes


def _persona(value: Any, path: str) -> Persona:
    r = _Reader(_object(value, path, "a persona object"), path)
    persona = Persona(
        name=_text(*r.get("name"), default="User"),
        description=_text(*r.get("description", "persona_description")),
        position=_named(*r.get("position", "persona_description_position"), "in_prompt",
                        names=_PERSONA_POSITION_ALIASES, numbers=PERSONA_POSITION_BY_NUMBER,
                        expected="a persona position: in_prompt, after_char, top_an, bottom_an, at_depth, none "
                        "(or 0, 1, 2, 3, 4, 9)"),
        depth=_integer(*r.get("depth", "persona_description_depth"), 2, minimum=0),
        role=_role(*r.get("role", "persona_description_role")),
    )
    r.reject_leftovers(("name", "description", "position", "depth", "role"))
    return persona


def _author_note(value: Any, path: str) -> AuthorNote:
    r = _Reader(_object(value, path, "an author's note object"), path)
    note = AuthorNote(
        content=_text(*r.get("content", "prompt", "note_prompt")),
        position=_named(*r.get("position", "note_position"), "in_chat",
                        names={k: v for k, v in _EXTENSION_POSITION_ALIASES.items() if v != "none"},
                        numbers={k: v for k, v in EXTENSION_POSITION_BY_NUMBER.items() if v != "none"},
                        expected="an author's note position: in_chat, before_main, after_main (or 1, 2, 0)"),
        depth=_integer(*r.get("depth", "note_depth"), 4, minimum=0),
        role=_role(*r.get("role", "note_role")),
        interval=_integer(*r.get("interval", "note_interval"), 1, minimum=0),
        allow_wi_scan=_flag(*r.get("allow_wi_scan", "allowWIScan"), False),
    )
    r.reject_leftovers(("content", "position", "depth", "role", "interval", "allow_wi_scan"))
    return note


def _extension_prompt(value: Any, path: str, key: str | None = None) -> ExtensionPrompt:
    r = _Reader(_object(value, path, "an extension prompt object"), path)
    key_value, key_path = r.get("key")
    if key is not None:
        if key_value not in (_MISSING, None) and key_value != key:
            raise _invalid(key_path, f"the key it is listed under ({key!r})", key_value)
        key_value = key
    prompt = ExtensionPrompt(
        key=_text(key_value, key_path, default=_REQUIRED),
        content=_text(*r.get("content", "value")),
        position=_named(*r.get("position"), "in_chat", names=_EXTENSION_POSITION_ALIASES,
                        numbers=EXTENSION_POSITION_BY_NUMBER,
                        expected="an extension prompt position: in_chat, before_main, after_main, none "
                        "(or 1, 2, 0, -1)"),
        depth=_integer(*r.get("depth"), 0, minimum=0),
        role=_role(*r.get("role")),
        scan=_flag(*r.get("scan"), False),
    )
    r.reject_leftovers(("key", "content", "position", "depth", "role", "scan"))
    return prompt


def _extension_prompts(value: Any, path: str) -> tuple[ExtensionPrompt, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):  # SillyTavern's own map: {key: {value, position, depth, scan, role}}
        prompts = [_extension_prompt(item, _join(path, key), key) for key, item in _object(value, path).items()]
    elif isinstance(value, list):
        prompts = [_extension_prompt(item, _join(path, index)) for index, item in enumerate(value)]
    else:
        raise _invalid(path, "a list of extension prompts (or an object keyed by extension key)", value)
    seen: set[str] = set()
    for index, prompt in enumerate(prompts):
        if prompt.key in seen:
            raise _invalid(_join(_join(path, index), "key"), "a key used once", prompt.key)
        seen.add(prompt.key)
    return tuple(prompts)


# -------------------------------------------------------------------------------------------------- resources

_RESOURCE_READERS: dict[str, tuple[tuple[str, ...], type, Callable[[Any, str], Any]]] = {
    "preset": ((), Preset, _preset),
    "character": ((), Character, _character),
    "persona": ((), Persona, _persona),
    "worldbook": (("world_book", "worldBook"), WorldBook, _worldbook),
    "author_note": (("authorNote",), AuthorNote, _author_note),
    "extension_prompts": (("extensionPrompts",), tuple, _extension_prompts),
}


def _resources(value: Any, path: str) -> Resources:
    if isinstance(value, Resources):
        return value
    r = _Reader(_object(value, path, "a resources object"), path)
    fields: dict[str, Any] = {}
    for name, (aliases, model, read) in _RESOURCE_READERS.items():
        item, where = r.get(name, *aliases)
        if item is _MISSING or item is None:
            continue
        if model is not tuple and isinstance(item, model):
            fields[name] = item
        elif model is tuple and isinstance(item, (list, tuple)) and all(isinstance(i, ExtensionPrompt) for i in item):
            fields[name] = tuple(item)
        else:
            fields[name] = read(item, where)
    r.reject_leftovers(tuple(_RESOURCE_READERS))
    return Resources(**fields)


def normalize_resources(obj: dict[str, Any]) -> Resources:
    """An AssemblyRequest's `resources` (engine.md §1): simplified JSON or SillyTavern's file shapes, per resource."""
    return _guarded(lambda: _resources(obj, ""))


def import_settings(data: dict[str, Any]) -> Resources:
    """SillyTavern's settings.json -> the resources it defines: the preset (`oai_settings`), the world info scan
    settings (a world book with no entries), the persona (`power_user`) and the author's note defaults."""

    def read() -> Resources:
        settings = _object(data, "", "a SillyTavern settings object")
        fields: dict[str, Any] = {}
        if "oai_settings" in settings:
            fields["preset"] = _preset(settings["oai_settings"], "oai_settings")
        if "world_info_settings" in settings:
            wi = _object(settings["world_info_settings"], "world_info_settings")
            reader = _Reader(wi, "world_info_settings")
            fields["worldbook"] = WorldBook(**{k: v for k, v in _book_settings(reader).items() if k != "name"})
        power_user = settings.get("power_user")
        if power_user is not None:
            pu = _object(power_user, "power_user")
            persona = {k: pu[k] for k in ("persona_description", "persona_description_position",
                                          "persona_description_depth", "persona_description_role") if k in pu}
            if "username" in settings:
                persona["name"] = settings["username"]
            fields["persona"] = _persona(persona, "power_user")
        note = settings.get("extension_settings", {})
        if isinstance(note, dict) and isinstance(note.get("note"), dict):
            defaults = note["note"]
            fields["author_note"] = _author_note(
                {k: v for k, v in (("content", defaults.get("default")), ("position", defaults.get("defaultPosition")),
                                   ("depth", defaults.get("defaultDepth")), ("role", defaults.get("defaultRole")),
                                   ("interval", defaults.get("defaultInterval"))) if v is not None},
                "extension_settings.note",
            )
        return Resources(**fields)

    return _guarded(read)


def _guarded(read: Callable[[], Any]) -> Any:
    """Run an importer so that it can only fail with ImportInvalid (a model refusing a value becomes one too)."""
    try:
        return read()
    except ImportInvalid:
        raise
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ImportInvalid(where, first["msg"]) from None
    except RecursionError:
        raise ImportInvalid("", "JSON nested less deeply") from None
