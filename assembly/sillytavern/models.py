"""The SillyTavern resource models: frozen pydantic models whose field names are the engine's (snake_case).

Keys the models do not describe are kept verbatim in `other_fields` so the exporters give back the file the user
imported; `import(export(x)) == x`.
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from collections.abc import Callable
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from assembly.reading import Role
from assembly.sillytavern.vocabulary import (
    UTILITY_PROMPT_DEFAULTS,
    ExtensionPosition,
    PersonaPosition,
    SelectiveLogic,
    WorldPosition,
)
from assembly.sillytavern.worldinfo_timed import WorldState

T = TypeVar("T")


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


def kept_on(model: BaseModel, name: str, made_from: tuple[Any, ...], make: Callable[[], T]) -> T:
    """`make()`, kept in the frozen `model`'s own attributes beside the field values it was made from (a copy of the
    model with other values makes it again). It lives as long as the model, so as long as the request that read it;
    pydantic leaves such attributes out of ==, dumps and copies' validation."""
    kept = model.__dict__.get(name)
    if kept is not None and kept[0] == made_from:  # the same field values (the same objects compare at once)
        return kept[1]
    value = make()
    model.__dict__[name] = (made_from, value)
    return value


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
    coerced: tuple[str, ...] = ()  # what the reader read as SillyTavern does rather than as written (not exported)

    @model_validator(mode="after")
    def _order_refers_to_prompts(self) -> Self:
        # runs again whenever a model holds the preset (Resources): sets made once each
        known = {p.identifier for p in self.prompts}
        if len(known) != len(self.prompts):
            raise ValueError("prompt identifiers must be unique")
        ordered = {e.identifier for e in self.prompt_order}
        if len(ordered) != len(self.prompt_order) or not known >= ordered:
            raise ValueError("prompt_order must list defined prompt identifiers, each once")
        return self

    def prompt(self, identifier: str) -> Prompt | None:
        return next((p for p in self.prompts if p.identifier == identifier), None)

    def ordered_prompts(self) -> tuple[Prompt, ...]:
        """The prompts in prompt_order, each with `enabled` set to the order's flag (SillyTavern ignores the
        prompt's own flag). Prompts missing from the order are not part of the assembly, as in SillyTavern."""
        # One request asks ~20 times: kept on the preset (`kept_on`).
        return kept_on(self, "_kept_ordered_prompts", (self.prompts, self.prompt_order), self._ordered_prompts)

    def _ordered_prompts(self) -> tuple[Prompt, ...]:
        by_id = {p.identifier: p for p in self.prompts}
        ordered = []
        for entry in self.prompt_order:
            prompt = by_id[entry.identifier]
            # a copy only where the order's flag differs (a default preset: one prompt of a dozen)
            ordered.append(prompt if prompt.enabled == entry.enabled
                           else prompt.model_copy(update={"enabled": entry.enabled}))
        return tuple(ordered)


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
    spec: Literal["chara_card_v2", "chara_card_v3"] = "chara_card_v2"  # what it exports as (a V1 card becomes V2)
    # A V2/V3 card's other keys beside `data` as written (create_date, avatar, chat, fav, ...); the V1 mirrors of
    # the data are written anew from it.
    card_fields: dict[str, Any] = {}


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
    # the line's other keys as SillyTavern wrote them (send_date, swipes, swipe_id, extra, force_avatar, ...), and
    # the text as written when it differs from `content` (carriage returns)
    other_fields: dict[str, Any] = {}


class ChatLog(_Frozen):
    """A SillyTavern chat file (`.jsonl`): who talked, the messages a prompt can see, and the chat's author's note."""

    user_name: str = ""
    character_name: str = ""
    messages: tuple[ChatLogMessage, ...] = ()
    hidden: int = 0  # messages hidden from the prompt (`is_system`), left out as SillyTavern leaves them out (§3)
    author_note: AuthorNote | None = None
    world_info: str = ""  # the name of the world book bound to the chat (chat lore, §7.2)
    # What an export gives back as it was read: the hidden lines as written, each with the number of visible
    # messages before it; the header's other keys and the rest of `chat_metadata` (variables, timed world info,
    # ...); whether lines ended in CRLF.
    hidden_lines: tuple[tuple[int, dict[str, Any]], ...] = ()
    header_fields: dict[str, Any] = {}
    metadata_fields: dict[str, Any] = {}
    crlf: bool = False


class RegexScript(_Frozen):
    """One SillyTavern regex script (its regex extension, sillytavern.md §13.1), field names in snake_case."""

    script_name: str = ""
    find_regex: str = ""
    replace_string: str = ""
    trim_strings: tuple[str, ...] = ()
    placement: tuple[int, ...] = ()  # 1 user input, 2 AI output, 3 slash command, 5 world info, 6 reasoning
    disabled: bool = False
    markdown_only: bool = False
    prompt_only: bool = False
    run_on_edit: bool = True
    substitute_regex: int = 0  # 0 none, 1 raw macros, 2 macros regex-escaped
    min_depth: int | None = None
    max_depth: int | None = None
    other_fields: dict[str, Any] = {}


class Resources(_Frozen):
    preset: Preset | None = None
    character: Character | None = None
    persona: Persona | None = None
    worldbook: WorldBook | None = None
    author_note: AuthorNote | None = None
    extension_prompts: tuple[ExtensionPrompt, ...] = ()
    regex_scripts: tuple[RegexScript, ...] = ()  # SillyTavern's global scripts (its settings); preset / card
    # scripts stay in their files (preset extensions, card extensions)
    world_state: WorldState | None = None  # the chat's timed world-info effects before this generation
    # the settings' macro engine (power_user.experimental_macro_engine: "v2"); a request's macro_engine wins
    macro_engine: Literal["legacy", "v2"] | None = None
    # the settings' global macro variables (extension_settings.variables.global); a request's own win
    global_variables: dict[str, Any] | None = None
    # SillyTavern's power-user settings as text completion names them (text-completion.md); chat completion reads
    # their "Example Messages Behavior": pin_examples and strip_examples
    text_settings: dict[str, Any] | None = None

