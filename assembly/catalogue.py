"""The catalogue: the built-in strategies, the runtime-context controls and the position catalogue (engine.md §4).

Data the designer picks from, as opposed to the document itself (assembly.strategy): the built-ins (reference A.3)
are normalized once at import, the controls (A.4) say which DSH context sections a control kind switches, and the
position catalogue (A.5, A.12) names every draggable resource category.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterable, Mapping
from typing import Any

from assembly.strategy import (
    DEFAULT_PRIORITY,
    FORMAT,
    FORMAT_VERSION,
    StrategyError,
    describe_value,
    normalize_strategy,
    normalized_strategy_revision,
    position_key,
)

# --- runtime-context controls -------------------------------------------------------------------------------------

# Runtime-context controls (A.4): control kind -> the exact DSH context section names it switches.
DSH_CONTEXT_NAMES = ("sandbox:policy", "approval:policy", "subagent:delegation")
CONTEXT_CONTROLS = {
    "dsh.runtime-context": DSH_CONTEXT_NAMES,
    "dsh.sandbox-policy": ("sandbox:policy",),
    "dsh.approval-policy": ("approval:policy",),
}
CONTEXT_CONTROL_KINDS = tuple(CONTEXT_CONTROLS)


def with_context_control_rows(rules: list[dict[str, Any]],
                              available: Iterable[str] = CONTEXT_CONTROL_KINDS) -> list[dict[str, Any]]:
    """A.4 `contextControlRows`: a new rule list with one explicit row appended for every available control kind
    that no rule covers yet (enabled, preserve, request, no depth, no text). The row id is the kind with `.` -> `-`,
    suffixed with `-control` until no other rule uses it."""
    result = copy.deepcopy(list(rules))
    kinds = {rule.get("kind") for rule in result if isinstance(rule, Mapping)}
    ids = {rule.get("id") for rule in result if isinstance(rule, Mapping)}
    for kind in available:
        if kind not in CONTEXT_CONTROLS or kind in kinds:
            continue
        rule_id = kind.replace(".", "-")
        while rule_id in ids:
            rule_id += "-control"
        ids.add(rule_id)
        kinds.add(kind)
        result.append({"id": rule_id, "kind": kind, "enabled": True, "role": "preserve", "lifetime": "request",
                       "depth": None, "text": "", "name": ""})
    return result


# --- built-ins -----------------------------------------------------------------------------------------------------

# Tavern DEFAULT_RULES (A.3): the rule list of every built-in, each rule's id equal to its kind.
TAVERN_DEFAULT_RULE_KINDS = ("native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi")

DEFAULT_BUILTIN_ID = "builtin-native-slots"

# Tavern SLOT_LAYOUT (A.3): preset slots decide, positions adapt identity, unknown anchors fall back to source order.
_SLOT_LAYOUT = {"version": 1, "source": "preset-slots", "identity": "position", "fallback": "source-order",
                "overrides": [], "priority": list(DEFAULT_PRIORITY)}

_BUILTIN_DOCUMENTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("builtin-native-slots", {
        "backend": "native", "format": FORMAT, "version": FORMAT_VERSION,
        "name": "预设插槽优先（标准） / Preset slots first (standard)",
        "placement": "native-slots", "layout": _SLOT_LAYOUT,
        "rules": [{"id": kind, "kind": kind} for kind in TAVERN_DEFAULT_RULE_KINDS],
    }),
    ("builtin-native-roles", {
        "backend": "native", "format": FORMAT, "version": FORMAT_VERSION,
        "name": "身份优先（标准） / Roles first (standard)",
        "placement": "native-roles",
        "rules": [{"id": kind, "kind": kind} for kind in TAVERN_DEFAULT_RULE_KINDS],
    }),
    ("builtin-st", {  # no backend: core, the advanced backend
        "format": FORMAT, "version": FORMAT_VERSION,
        "name": "预设插槽优先（进阶） / Preset slots first (advanced)",
        "placement": "st", "layout": _SLOT_LAYOUT,
        "rules": [{"id": kind, "kind": kind} for kind in TAVERN_DEFAULT_RULE_KINDS],
    }),
)

# Normalized once at import: a mistake in the data above fails loudly on the first import.
_BUILTINS: tuple[dict[str, Any], ...] = tuple(
    {"id": builtin_id, **normalize_strategy(document)} for builtin_id, document in _BUILTIN_DOCUMENTS
)
BUILTIN_STRATEGY_IDS = tuple(builtin["id"] for builtin in _BUILTINS)
# Fresh copies come from a pickle of each built-in: the same value as a deep copy at a fraction of its cost, which
# every request naming a built-in paid. The revision of each (without its id) is computed once here too.
_BUILTIN_PICKLES = {builtin["id"]: pickle.dumps(builtin, pickle.HIGHEST_PROTOCOL) for builtin in _BUILTINS}
_BUILTIN_REVISIONS = {builtin["id"]: normalized_strategy_revision({k: v for k, v in builtin.items() if k != "id"})
                      for builtin in _BUILTINS}
# What `resolve_strategy` hands `assemble()` for a built-in id (without the id): its own copy, whose rule list and
# rules are shared by every request and only read (no stage changes a rule, none reaches a result); the layout, which
# the result shows as its policy, is copied per request. A built-in layout holds only strings, numbers and lists of
# strings, so a copy of the dict and its lists is a whole copy (checked here, at import).
_BUILTIN_RESOLVED = {builtin["id"]: pickle.loads(_BUILTIN_PICKLES[builtin["id"]]) for builtin in _BUILTINS}
for _resolved in _BUILTIN_RESOLVED.values():
    del _resolved["id"]
    assert all(type(v) in (str, int) or type(v) is list and all(type(x) is str for x in v)
               for v in (_resolved.get("layout") or {}).values()), "a built-in layout is copied one level deep"


def _resolved_builtin(strategy_id: str) -> dict[str, Any]:
    shared = _BUILTIN_RESOLVED[strategy_id]
    strategy = dict(shared)
    layout = shared.get("layout")
    if layout is not None:
        strategy["layout"] = {k: list(v) if type(v) is list else v for k, v in layout.items()}
    return strategy


# Each built-in's name per language: the documents keep their bilingual name (revisions and exports stay the same);
# the studio shows one language (`name_in_language`).
BUILTIN_NAMES: dict[str, dict[str, str]] = {
    builtin_id: dict(zip(("zh", "en"), document["name"].split(" / "), strict=True))
    for builtin_id, document in _BUILTIN_DOCUMENTS
}


def name_in_language(name: str, language: str) -> str:
    """`name` with a built-in's bilingual name in it (a built-in, "… (copy)") in `language` ("zh" or "en") only."""
    for names in BUILTIN_NAMES.values():
        both = f"{names['zh']} / {names['en']}"
        if both in name:
            return name.replace(both, names["zh" if language == "zh" else "en"])
    return name


def builtin_strategies() -> list[dict[str, Any]]:
    """The built-in strategies (A.3), normalized, each with its `id`; the default first. Fresh copies every call."""
    return [pickle.loads(_BUILTIN_PICKLES[builtin_id]) for builtin_id in BUILTIN_STRATEGY_IDS]


def get_builtin_strategy(strategy_id: Any) -> dict[str, Any]:
    """One built-in by id (a fresh copy); StrategyError STRATEGY_NOT_FOUND (404) for any other id."""
    if isinstance(strategy_id, str) and strategy_id in _BUILTIN_PICKLES:
        return pickle.loads(_BUILTIN_PICKLES[strategy_id])
    raise StrategyError(
        f"Unknown built-in strategy: {describe_value(strategy_id)} is not one of {', '.join(BUILTIN_STRATEGY_IDS)}",
        path="id", code="STRATEGY_NOT_FOUND", status=404, detail={"expected": list(BUILTIN_STRATEGY_IDS)})


def resolve_strategy(value: Any) -> tuple[str | None, dict[str, Any]]:
    """A request's `strategy` (engine.md §1): a built-in id, or a document. Returns (id, normalized document without
    id); the id of a document is its string `id` field, else None. A built-in's rules are shared, to be read only:
    `get_builtin_strategy` hands out a whole copy."""
    if isinstance(value, str):
        if value in _BUILTIN_RESOLVED:  # shares the built-in's rules, read only (see _BUILTIN_RESOLVED)
            return value, _resolved_builtin(value)
        get_builtin_strategy(value)  # refuses the unknown id
    normalized = normalize_strategy(value)
    given_id = value.get("id")
    return (given_id if isinstance(given_id, str) else None), normalized


def resolved_revision(value: Any, normalized: Mapping[str, Any]) -> str:
    """The revision of what `resolve_strategy(value)` returned: a built-in's is known from import."""
    if isinstance(value, str) and value in _BUILTIN_REVISIONS:
        return _BUILTIN_REVISIONS[value]
    return normalized_strategy_revision(normalized)


# --- the position catalogue (A.5, A.12) -----------------------------------------------------------------------------
# One row per stable, draggable resource category, keyed `module#position` as in layout position rows. Names and help
# texts are ours (the reference lists only the ids). `anchor` is the declared resource anchor of A.12 (where a
# `resource` stage puts the category), `match` the declared block match, `macros` the text macros that reference it.
# The world book `outlet` row is configurable here: the reference's loader emits nothing for outlets, our engine fills
# `{{outlet::name}}` markers (engine.md §5).


def _category(module: str, position: str, name_en: str, name_zh: str, help_en: str, help_zh: str, *,
              anchor: dict[str, Any] | None = None, match: dict[str, Any] | None = None,
              macros: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"id": position_key(module, position), "module": module, "position": position, "name_en": name_en,
            "name_zh": name_zh, "help_en": help_en, "help_zh": help_zh, "configurable": True, "anchor": anchor,
            "match": match, "macros": macros}


def _anchor(source_id: str, fields: tuple[str, ...], side: str) -> dict[str, Any]:
    return {"source_id": source_id, "fields": fields, "side": side}


_CHARACTER_DEFINITION = ("description", "personality", "scenario", "system")
_AUTHOR_NOTE_PROMPTS = ("authorNote", "authorsNote")

POSITION_CATALOGUE: tuple[dict[str, Any], ...] = (
    _category("preset", "main", "Main prompt", "主提示词",
              "The preset's main prompt.", "预设的主提示词。"),
    _category("preset", "jailbreak", "Post-history prompt (jailbreak)", "历史后提示词（jailbreak）",
              "The preset prompt sent after the chat history.", "预设中放在聊天历史之后的提示词。"),
    _category("preset", "depth", "In-chat prompts (at depth)", "聊天内提示词（按深度）",
              "Preset prompts inserted into the chat at a depth.", "按深度插入聊天记录中的预设提示词。",
              match={"depth": True}),
    _category("preset", "body", "Other preset prompts", "其他预设提示词",
              "Every other enabled preset prompt, in preset order.", "其余启用的预设提示词，按预设顺序。"),
    _category("character", "description", "Character description", "角色描述",
              "The card's description field.", "角色卡的描述字段。", macros=("description", "charDescription")),
    _category("character", "personality", "Character personality", "角色性格",
              "The card's personality field.", "角色卡的性格字段。", macros=("personality", "charPersonality")),
    _category("character", "scenario", "Scenario", "场景",
              "The card's scenario field.", "角色卡的场景字段。", macros=("scenario",)),
    _category("character", "examples", "Dialogue examples", "对话示例",
              "The card's example dialogues.", "角色卡的对话示例。", macros=("mesexamples",)),
    _category("character", "system", "Character system prompt", "角色系统提示词",
              "The card's system prompt; it may replace the preset's main prompt.", "角色卡的系统提示词，可替换预设主提示词。"),
    _category("character", "phi", "Character post-history instructions", "角色历史后指令",
              "The card's post-history instructions; they may replace the preset's jailbreak prompt.",
              "角色卡的历史后指令，可替换预设的 jailbreak 提示词。"),
    _category("character", "greeting", "Greeting (first message)", "开场白",
              "The card's first message. It is never sent from this row: as in SillyTavern it opens the chat as "
              "its first assistant message (the session page's “Start with the character's greeting”).",
              "角色卡的第一条消息。它从不从这一行发送：与 SillyTavern 一样，它作为聊天的第一条助手消息开场"
              "（会话页的“以角色的开场白开始”）。"),
    _category("character", "depth_prompt", "Character's note (at depth)", "角色注释（按深度）",
              "The card's depth prompt, inserted into the chat at its depth.", "角色卡的深度提示词，按深度插入聊天记录。"),
    _category("persona", "persona", "Persona description", "用户设定",
              "The user's persona description.", "用户角色的设定描述。", macros=("persona",)),
    _category("worldbook", "before", "World info before the character", "世界书（角色定义前）",
              "World book entries placed before the character definition.", "放在角色定义之前的世界书条目。",
              anchor=_anchor("character", _CHARACTER_DEFINITION, "before")),
    _category("worldbook", "after", "World info after the character", "世界书（角色定义后）",
              "World book entries placed after the character definition.", "放在角色定义之后的世界书条目。",
              anchor=_anchor("character", _CHARACTER_DEFINITION, "after")),
    _category("worldbook", "before_example_messages", "World info before the examples", "世界书（示例前）",
              "World book entries placed before the dialogue examples.", "放在对话示例之前的世界书条目。",
              anchor=_anchor("character", ("examples",), "before")),
    _category("worldbook", "after_example_messages", "World info after the examples", "世界书（示例后）",
              "World book entries placed after the dialogue examples.", "放在对话示例之后的世界书条目。",
              anchor=_anchor("character", ("examples",), "after")),
    _category("worldbook", "before_author_note", "World info before the author's note", "世界书（作者注释前）",
              "World book entries placed at the top of the author's note.", "放在作者注释之前的世界书条目。",
              anchor=_anchor("preset", _AUTHOR_NOTE_PROMPTS, "before")),
    _category("worldbook", "after_author_note", "World info after the author's note", "世界书（作者注释后）",
              "World book entries placed at the bottom of the author's note.", "放在作者注释之后的世界书条目。",
              anchor=_anchor("preset", _AUTHOR_NOTE_PROMPTS, "after")),
    _category("worldbook", "depth", "World info at depth", "世界书（按深度）",
              "World book entries inserted into the chat at their depth.", "按深度插入聊天记录的世界书条目。"),
    _category("worldbook", "outlet", "World info outlets", "世界书（出口）",
              "World book entries that fill {{outlet::name}} markers in preset prompts.",
              "填入预设提示词中 {{outlet::name}} 标记的世界书条目。"),
    _category("phi", "content", "Post-history instructions", "历史后指令",
              "The post-history instructions module: the character's instructions plus the rule's own text.",
              "历史后指令模块：角色的历史后指令及规则自带的文字。"),
)
