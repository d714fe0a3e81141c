"""What SillyTavern's `Generate()` gathers for a text-completion prompt before its chat loop (text-completion.md):
card fields, system prompt and post-history instructions, persona, world info, author's note, examples and the story
string (its anchors: the author's note and other extensions' prompts placed before / in prompt), and the in-chat
prompts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assembly.sillytavern.messages import MainAttachment, StInjection, chat_message
from assembly.sillytavern.models import AuthorNote, Resources
from assembly.sillytavern.outlets import outlet_texts
from assembly.sillytavern.steps import (
    CHARACTER_NOTE_KEY,
    PERSONA_KEY,
    author_note_placement,
    extension_prompt_placement,
    persona_placement,
)
from assembly.sillytavern.text_budget import ST_ESTIMATE
from assembly.sillytavern.text_examples import example_heading, format_instruct_examples, parse_examples
from assembly.sillytavern.text_inject import ChatItem, InChatPrompt, joined_prompts
from assembly.sillytavern.text_macros import substitute_params
from assembly.sillytavern.text_story import render_story_string, wrap_story_string
from assembly.sillytavern.text_templates import TextTemplates
from assembly.sillytavern.worldinfo import activate_world_info, card_scan_data, scan_injections
from assembly.sillytavern.worldinfo_emission import depth_groups

_ROLE_BY_NUMBER = {0: "system", 1: "user", 2: "assistant"}
STORY_STRING_KEY = "__STORY_STRING__"


@dataclass
class TextParts:
    """What `Generate()` has gathered before the chat loop."""

    user: str
    char: str
    chat: list[ChatItem]
    story: str  # "" when it goes into the chat
    examples: list[str]
    examples_sources: list[str]
    in_chat: list[InChatPrompt] = field(default_factory=list)
    post_history: str = ""
    bias: str = ""
    force_name2: bool = False
    world_info: Any = None  # the world-info activation (its `world_state` carries the timed effects on)
    macros: Any = None  # the generation's macro environment (macro_environment.text_environment), or None
    story_source: str = "story_string"  # with the sources of the anchors it holds ("story_string+extension:1_memory")


def _card_text(resources: Resources, name: str, user: str, char: str, macros: Any = None) -> str:
    card = resources.character
    return substitute_params(getattr(card, name), user, char, macros=macros) if card is not None else ""


def _system_texts(templates: TextTemplates, resources: Resources, user: str, char: str,
                  macros: Any = None) -> tuple[str, str]:
    """The system prompt and the post-history instructions: the card's (with `{{original}}` = the global one) when
    preferred and set, else the global ones; both empty with the system-prompt feature off."""
    settings, system = templates.settings, templates.system_prompt
    if not settings["sysprompt_enabled"]:
        return "", ""
    card = resources.character
    out = []
    for card_field, global_field, prefer in (("system_prompt", "content", "prefer_character_prompt"),
                                             ("post_history_instructions", "post_history",
                                              "prefer_character_jailbreak")):
        own = getattr(card, card_field) if card is not None else ""
        if settings[prefer] and own:
            out.append(substitute_params(own, user, char, original=system[global_field], macros=macros))
        else:
            out.append(substitute_params(system[global_field], user, char, macros=macros))
    return out[0], out[1]


def read_chat(messages: list[dict[str, Any]], typed: int, user: str, char: str,
              macros: Any = None) -> list[ChatItem]:
    """`coreChat`: user and character messages (system ones dropped); the greeting and the typed messages get
    their macros substituted, the others are used as stored."""
    chat = []
    for index, m in enumerate(messages):
        if m["role"] not in ("user", "assistant"):
            continue
        text = m.get("content") or ""
        if index == 0 or index >= len(messages) - typed:
            text = substitute_params(text, user, char, macros=macros)
        is_user = m["role"] == "user"
        name = m.get("name") or (user if is_user else char)
        chat.append(ChatItem(name=name, mes=text, is_user=is_user, source=f"message:{m.get('id') or index}"))
    return chat


def _world_info(resources: Resources, chat: list[dict[str, Any]], typed: int, user: str, char: str,
                budget: int, *, generation: str, seed: int | None, turn: int) -> Any:
    """SillyTavern's one world-info scan, as for chat completion: over the chat and the extension prompts marked
    for scanning (`scan_injections`), with the timed effects carried in `resources.world_state`, the chance drawn
    from `seed` and `turn`, and the generation type for `triggers`."""
    book = resources.worldbook
    if book is None or not book.entries:
        return None
    scan_data = card_scan_data(resources.character, resources.persona)
    scanned = [{"id": m.get("id"), "role": m["role"], "content": m.get("content") or "",
                **({"name": m["name"]} if m.get("name") else {})} for m in chat if m["role"] in ("user", "assistant")]
    return activate_world_info(book, chat=scanned, names={"user": user, "char": char}, max_context=budget,
                               encoding=ST_ESTIMATE, global_scan_data=scan_data,
                               scan_injections=scan_injections(resources, turn=turn, user_messages=sum(
                                   m["role"] == "user" for m in chat)), typed_messages=typed,
                               generation=generation, world_state=resources.world_state, seed=seed, turn=turn)


def _world_positions(activation: Any) -> dict[str, list[Any]]:
    by_position: dict[str, list[Any]] = {}
    for entry in activation.active if activation is not None else ():
        by_position.setdefault(entry.position, []).append(entry)
    return by_position


def _note_and_persona(resources: Resources, chat: list[ChatItem], wi: dict[str, list[Any]], user: str, char: str,
                      in_chat: list[InChatPrompt], anchored: dict[str, list[InChatPrompt]],
                      macros: Any = None) -> None:
    """`setFloatingPrompt` and `addPersonaDescriptionExtensionPrompt`: the author's note (world info at its top
    and bottom, the persona when placed there) in the chat (`in_chat`) or around the story string (`anchored`,
    by its place: start = before, end = after); the persona at depth."""
    persona = resources.persona
    if persona is not None:
        persona = persona.model_copy(update={"description": substitute_params(persona.description, user, char,
                                                                                macros=macros)})
        placed_persona = persona_placement(persona, source_id="persona")
        if placed_persona.injection is not None:
            i = placed_persona.injection
            in_chat.append(InChatPrompt(PERSONA_KEY, i.content, i.depth, i.role, "persona"))
    top = [(f"world_info:{e.uid}", e.content) for e in wi.get("before_author_note", [])]
    bottom = [(f"world_info:{e.uid}", e.content) for e in wi.get("after_author_note", [])]
    note = resources.author_note
    wraps = persona is not None and persona.position in ("top_an", "bottom_an")
    if note is None and not (top or bottom or wraps):
        return
    note = note or AuthorNote()
    note = note.model_copy(update={"content": substitute_params(note.content, user, char, macros=macros)})
    counted = [chat_message(id=f"c{n}", role="user" if c.is_user else "assistant", content=c.mes, sources=())
               for n, c in enumerate(chat)]
    placed = author_note_placement(note, chat=counted, world_info_top=top, world_info_bottom=bottom,
                                   persona=persona, source_id="author_note", persona_source_id="persona")
    _place("2_floating_prompt", placed.injection or placed.attachment, in_chat, anchored)


def _place(key: str, placed: StInjection | MainAttachment | None, in_chat: list[InChatPrompt],
           anchored: dict[str, list[InChatPrompt]]) -> None:
    """An extension prompt placed as chat completion places it: an injection goes in the chat, an attachment
    before Main (SillyTavern's "before prompt") or after it ("in prompt") around the story string."""
    if isinstance(placed, StInjection):
        in_chat.append(InChatPrompt(key, placed.content, placed.depth, placed.role, "+".join(placed.sources)))
    elif isinstance(placed, MainAttachment):
        anchored[placed.position].append(InChatPrompt(key, placed.content, 0, placed.role, "+".join(placed.sources)))


def _anchor(prompts: list[InChatPrompt], user: str, char: str, macros: Any = None) -> tuple[str, list[str]]:
    """`anchorBefore` / `anchorAfter`: the extension prompts of that place joined in key order, trimmed; with
    their sources."""
    text, here = joined_prompts(prompts, user=user, char=char, macros=macros)
    text = text.strip()
    return text, [p.source for p in here] if text else []


def _examples(templates: TextTemplates, resources: Resources, wi: dict[str, list[Any]], user: str,
              char: str, macros: Any = None) -> tuple[list[str], list[str], str]:
    """The example items (world info's blocks above and below the card's), formatted for instruct mode, with
    their sources; and the unformatted blocks joined (`mesExamplesRaw`)."""
    instruct_on = templates.instruct_on
    heading = example_heading(templates.context["example_separator"], user, char, macros)
    if templates.settings["strip_examples"]:  # no examples at all, world info's included
        return [], [], ""
    text = _card_text(resources, "mes_example", user, char, macros)
    blocks = [("example:card", b) for b in parse_examples(text, instruct_on=instruct_on, heading=heading)]
    for side in ("before_example_messages", "after_example_messages"):
        extra = [(f"example:world_info:{e.uid}", b) for e in wi.get(side, []) if e.content
                 for b in parse_examples(substitute_params(e.content, user, char, macros=macros),
                                         instruct_on=instruct_on,
                                         heading=heading)]
        blocks = extra + blocks if side.startswith("before") else blocks + extra
    texts = [b for _s, b in blocks]
    raw = "".join(texts)
    if instruct_on and blocks:  # one example message an item: sources by item
        items = format_instruct_examples(texts, templates.instruct, heading=heading, user=user, char=char,
                                         macros=macros)
        return items, ["example"] * len(items), raw
    return texts, [s for s, _b in blocks], raw


def gather(templates: TextTemplates, resources: Resources, messages: list[dict[str, Any]], *, typed: int,
           user: str, char: str, generation: str, seed: int | None = None, turn: int = 0,
           macros: Any = None) -> TextParts:
    """Everything `Generate()` gathers before its chat loop, in its order. `seed` and `turn`: the world-info
    chance's draws (None: the preview's most likely rolls)."""
    settings, context = templates.settings, templates.context
    impersonate, continuing = generation == "impersonate", generation == "continue"
    chat = read_chat(messages, typed, user, char, macros)
    bias = "" if impersonate or continuing else substitute_params(settings["user_prompt_bias"], user, char,
                                                                  macros=macros)
    system, post_history = _system_texts(templates, resources, user, char, macros)
    in_chat: list[InChatPrompt] = []
    card = resources.character
    if card is not None and card.depth_prompt is not None and card.depth_prompt.prompt:
        dp = card.depth_prompt
        in_chat.append(InChatPrompt(CHARACTER_NOTE_KEY, substitute_params(dp.prompt, user, char, macros=macros),
                                    dp.depth, dp.role,
                                    "character:depth_prompt"))
    budget = settings["max_context"] - settings["amount_gen"]
    activation = _world_info(resources, messages, typed, user, char, budget, generation=generation, seed=seed,
                             turn=turn)
    wi = _world_positions(activation)
    anchored: dict[str, list[InChatPrompt]] = {"start": [], "end": []}
    _note_and_persona(resources, chat, wi, user, char, in_chat, anchored, macros)
    for ext in resources.extension_prompts:  # summaries, vectors, ...: where chat completion puts them
        _place(ext.key, extension_prompt_placement(ext, source_id=f"extension:{ext.key}"), in_chat, anchored)
    (before, before_sources), (after, after_sources) = (_anchor(anchored[side], user, char, macros)
                                                        for side in ("start", "end"))
    examples, example_sources, raw = _examples(templates, resources, wi, user, char, macros)
    at_depth = sorted(wi.get("at_depth", []), key=lambda e: (-e.order, e.activation_index))  # as depth_groups takes
    for depth, role, members in depth_groups(at_depth):
        if depth is not None:
            in_chat.append(InChatPrompt(f"customDepthWI_{depth}_{role}", "\n".join(e.content for e in members),
                                        depth, role, "+".join(f"world_info:{e.uid}" for e in members)))
    persona = resources.persona
    params = {
        "system": system, "description": _card_text(resources, "description", user, char, macros),
        "personality": _card_text(resources, "personality", user, char, macros),
        "scenario": _card_text(resources, "scenario", user, char, macros),
        "persona": substitute_params(persona.description, user, char, macros=macros)
        if persona is not None and persona.position == "in_prompt" else "",
        "char": char, "user": user,
        "wiBefore": "\n".join(e.content for e in wi.get("before", [])),
        "wiAfter": "\n".join(e.content for e in wi.get("after", [])),
        "anchorBefore": before, "anchorAfter": after,
        "mesExamples": "".join(examples), "mesExamplesRaw": raw,
    }
    params["loreBefore"], params["loreAfter"] = params["wiBefore"], params["wiAfter"]
    in_prompt = context["story_string_position"] != 1
    instruct = templates.instruct
    used: set[str] = set()
    story = render_story_string(context["story_string"], params, user=user, char=char, in_prompt=in_prompt,
                                instruct_on=templates.instruct_on, wrap=instruct["wrap"],
                                suffix=instruct["story_string_suffix"], outlets=outlet_texts([
                                    {"outlet_name": e.outlet_name, "content": e.content, "order": e.order,
                                     "id": f"world_info:{e.uid}"} for e in wi.get("outlet", [])]), used=used, macros=macros)
    story_source = "+".join(["story_string", *(before_sources if "anchorBefore" in used else []),
                             *(after_sources if "anchorAfter" in used else [])])
    if not in_prompt:
        in_chat.append(InChatPrompt(STORY_STRING_KEY, story, context["story_string_depth"],
                                    _ROLE_BY_NUMBER.get(context["story_string_role"], "system"), story_source))
        story = ""
    elif templates.instruct_on:
        story = wrap_story_string(story, instruct, user=user, char=char, macros=macros)
    force_name2 = bool(context["always_force_name2"]) and not impersonate
    return TextParts(user=user, char=char, chat=chat, story=story, story_source=story_source, examples=examples,
                     examples_sources=example_sources, in_chat=in_chat, post_history=post_history,
                     bias=bias, force_name2=force_name2, world_info=activation, macros=macros)
