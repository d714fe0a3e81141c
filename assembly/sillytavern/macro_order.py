"""The order in which SillyTavern's Generate() puts the prompts through the macros (sillytavern.md §4.1), for the
prompt nodes of logical assembly. Variable macros change what later ones read, so the order is the behaviour.

0. the world info at the example positions (baseChatReplace and parseMesExamples); the author's note when it
   sits beside Main (Generate()'s prompt anchors); the story string, which Generate()
   renders for chat completion too (renderStoryString: only counted, never sent), and the chat-start line;
1. preparePromptsForChatCompletion: the preset's scenario, then personality format (in place of a field that has
   text), the group nudge and the impersonation prompt;
2. getPromptCollection: every enabled prompt of the preset that is not a marker, in prompt order (the card's
   override of Main or Post-History Instructions keeps the preset text it replaced, as its `{{original}}`);
3. the prompts SillyTavern fills (`systemPrompts`), each through the macros once more: the world info, the
   description, personality and scenario, the control prompts, the author's note (wherever it goes), the persona
   in the prompt;
4. the card's overrides of Main, then of Post-History Instructions, with `{{original}}` filled.
The in-chat extension prompts (getExtensionPrompt, depth by depth), the chat and the utility prompts come after
these (assembly.sillytavern.request).
"""

from __future__ import annotations

import re
from typing import Any

from assembly.sillytavern.messages import chat_message
from assembly.sillytavern.models import AuthorNote
from assembly.sillytavern.steps import author_note_placement
from assembly.sillytavern.text_story import render_story_string
from assembly.sillytavern.worldinfo_emission import format_world_info

_LEFT = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)")
_MARKER_FIELDS = ("description", "personality", "scenario")
# power_user.context's defaults in SillyTavern 1.18 (the "Default" context template): chat completion's Generate()
# renders this story string and the chat-start line too, though it sends neither
DEFAULT_STORY_STRING = (
    "{{#if anchorBefore}}{{anchorBefore}}\n{{/if}}{{#if system}}{{system}}\n{{/if}}{{#if wiBefore}}{{wiBefore}}\n{{/if}}"
    "{{#if description}}{{description}}\n{{/if}}{{#if personality}}{{personality}}\n{{/if}}"
    "{{#if scenario}}{{scenario}}\n{{/if}}{{#if wiAfter}}{{wiAfter}}\n{{/if}}{{#if persona}}{{persona}}\n{{/if}}"
    "{{#if anchorAfter}}{{anchorAfter}}\n{{/if}}{{trim}}")
DEFAULT_CHAT_START = "***"
_OVERRIDES = ("main", "jailbreak")
_AN_PERSONA = ("top_an", "bottom_an")
_EM_POSITIONS = ("before_example_messages", "after_example_messages")


class _Prompts:
    """The prompt nodes by what the steps look for, found in one pass (each list in node order)."""

    def __init__(self, nodes: list[Any]):
        self.world: dict[str, list[Any]] = {}  # world book nodes by position
        self.examples: list[Any] = []  # world book nodes at the example positions
        self.card: dict[str, list[Any]] = {}  # card field nodes by field
        self.preset: list[Any] = []
        self.persona: list[Any] = []
        for node in nodes:
            module = node.module
            if module == "worldbook":
                self.world.setdefault(node.position_id, []).append(node)
                if node.position_id in _EM_POSITIONS:
                    self.examples.append(node)
            elif module == "character":
                self.card.setdefault(node.field, []).append(node)
            elif module == "preset":
                self.preset.append(node)
            elif module == "persona":
                self.persona.append(node)

    def world_texts(self, position: str) -> list[str]:
        return [n.text for n in self.world.get(position, ())]


def _story_string(prompts: _Prompts, env: Any, resources: Any, anchors: dict[str, str]) -> None:
    """renderStoryString, which Generate() runs for chat completion too (the text is only counted): SillyTavern's
    default story string over the card fields as Generate() read them, the world info and the prompt anchors,
    through the macros; then the chat-start line's own pass (addChatsSeparator). Their variable macros run."""
    fields = env.fields
    persona = resources.persona if resources is not None else None
    values = {"system": fields.get("system") or "", "description": fields.get("description") or "",
              "personality": fields.get("personality") or "", "scenario": fields.get("scenario") or "",
              "persona": (fields.get("persona") or "") if persona is not None and persona.position == "in_prompt"
              else "", "char": env.char, "user": env.user}
    before, after = prompts.world_texts("before"), prompts.world_texts("after")
    anchor_before, anchor_after = anchors["before_main"].strip(), anchors["after_main"]
    # the template's own macros ({{#if}}, {{trim}}) change nothing: neither would this (the world info, its entries
    # joined by lines, holds what they hold)
    if env.inert([*values.values(), *before, *after, anchor_before, anchor_after]):
        return
    wi_before, wi_after = "\n".join(text for text in before if text), "\n".join(text for text in after if text)
    params = {**values, "wiBefore": wi_before, "wiAfter": wi_after, "anchorBefore": anchor_before,
              "anchorAfter": anchor_after, "loreBefore": wi_before, "loreAfter": wi_after}
    render_story_string(DEFAULT_STORY_STRING, params, user=env.user, char=env.char, in_prompt=True,
                        instruct_on=False, wrap=False, suffix="", outlets=env.outlets, substitute=env.evaluate)
    env.evaluate(DEFAULT_CHAT_START + "\n")


def _system_prompts(prompts: _Prompts, env: Any, resources: Any, impersonation: str, nudge: str,
                    note_text: str) -> None:
    """preparePromptsForChatCompletion's `systemPrompts`, each through the macros once more in its order: the world
    info before and after (as `wi_format` wraps them), the description, personality and scenario, the impersonation
    prompt, the quiet prompt, the group nudge, "Start Reply With", the author's note (in the chat too: its text
    there is getExtensionPrompt's own pass), the persona in the prompt.
    What a later step sends is kept in `env.prepared`."""
    preset = resources.preset if resources is not None else None
    wi_format = preset.wi_format if preset is not None else "{0}"
    for side in ("before", "after"):
        text = format_world_info(prompts.world_texts(side), wi_format)
        if text:
            env.prepared[("world_info", text)] = env.evaluate(text)
    for name in _MARKER_FIELDS:
        for node in prompts.card.get(name, ()):
            _evaluate_node(node, env)
    for what, text in (("impersonate", impersonation), ("quiet", env.quiet_prompt), ("group_nudge", nudge),
                       ("bias", env.reply_start), ("author_note", note_text)):
        if text:
            env.prepared[(what, text)] = env.evaluate(text)
    persona = resources.persona if resources is not None else None
    for node in prompts.persona if persona is None or persona.position == "in_prompt" else ():
        _evaluate_node(node, env)  # the persona description, when it is in the prompt


def author_note_text(prompts: _Prompts, env: Any, resources: Any) -> str:
    """The author's note as SillyTavern's extension prompt holds it this turn (the world info at its top and
    bottom and a persona placed there around it), or "" when it is not inserted."""
    note = resources.author_note if resources is not None else None
    top = [(n.id, n.text) for n in prompts.world.get("before_author_note", ())]
    bottom = [(n.id, n.text) for n in prompts.world.get("after_author_note", ())]
    persona = resources.persona if resources is not None else None
    if note is None and not top and not bottom and not (persona is not None and persona.position in _AN_PERSONA):
        return ""
    chat = [chat_message(id=str(i), role="user" if m.get("role") == "user" else "assistant",
                         content=m.get("content") or "", sources=()) for i, m in enumerate(env.chat)]
    placed = author_note_placement(note if note is not None else AuthorNote(), chat=chat, world_info_top=top,
                                   world_info_bottom=bottom, persona=persona)
    return placed.text if placed.inserted else ""


def _evaluate_node(node: Any, env: Any, original: str | None = None) -> None:
    """A prompt node's text through the macros, in place; the world info entries of the outlets it filled become its
    children, as the placement primitive's filled outlets are (the world info panel follows them to their row)."""
    env.outlets_read.clear()
    node.text = env.evaluate(node.text, original=original)
    if env.outlets_read:
        held = {child.get("id") for child in node.children}
        filled = [{"id": f"worldbook:{uid}", "source": "worldbook", "field": None, "locked": True,
                   "lock_reason": f"macro:outlet::{name}"}
                  for name in dict.fromkeys(env.outlets_read) for uid in env.outlet_entries.get(name, ())
                  if f"worldbook:{uid}" not in held]
        if filled:
            node.children = [*node.children, *filled]


def _unsent(env: Any, text: str) -> str:
    """A text SillyTavern puts through the macros though nothing of this generation sends it: through them for their
    effects, or "" when they can have none (its later pass, `_system_prompts`, then has nothing to do either)."""
    return "" if env.inert([text]) else env.evaluate(text)


def evaluate_prompt_macros(nodes: list[Any], env: Any, resources: Any = None, generation_type: str = "normal"
                           ) -> list[dict[str, Any]]:
    """Each prompt node's text through SillyTavern's macros, in Generate()'s order, in place; an UNSUPPORTED_MACRO
    diagnostic for each macro a node keeps as written because the engine does not know it."""
    env.unsupported.clear()
    prompts = _Prompts(nodes)
    for node in sorted((n for n in prompts.examples if n.text),
                       key=lambda n: n.order if n.order is not None else 100):
        # Generate() parses world info at the example positions: baseChatReplace, then parseMesExamples
        text = env.base_chat_replace(node.text)
        env.prepared[("example_entry", node.text)] = text
        env.parse_examples(text)
    note = resources.author_note if resources is not None else None
    note_text = author_note_text(prompts, env, resources)
    anchors = {"before_main": "", "after_main": ""}
    if note_text and note is not None and note.position != "in_chat":
        anchors[note.position] = env.evaluate(note_text)  # Generate()'s prompt anchors read a note beside Main
    _story_string(prompts, env, resources, anchors)
    overrides: dict[str, tuple[Any, str]] = {}
    for name in ("scenario", "personality"):  # the preset's scenario, then personality format (a field with text)
        for node in prompts.card.get(name, ()):
            if node.block is not None and dict(node.block.extra).get("format"):
                _evaluate_node(node, env)
    preset = resources.preset if resources is not None else None
    # then the group nudge and the impersonation prompt, whatever the chat or generation; a one-to-one chat never
    # sends the nudge, and only an impersonation sends the other
    nudge = _unsent(env, preset.group_nudge_prompt) if preset is not None else ""
    impersonation = "" if preset is None else (env.evaluate(preset.impersonation_prompt)
                                               if generation_type == "impersonate"
                                               else _unsent(env, preset.impersonation_prompt))
    for node in prompts.preset:
        extra = dict(node.block.extra) if node.block is not None else {}
        if "original" in extra:
            overrides[node.field] = (node, env.evaluate(extra["original"]))
        else:
            _evaluate_node(node, env)
    _system_prompts(prompts, env, resources, impersonation, nudge, note_text)
    for name in _OVERRIDES:
        if name in overrides:
            node, original = overrides[name]
            _evaluate_node(node, env, original=original)
    diagnostics = []
    for node in nodes if env.unsupported else ():  # only a macro the engine met and left can be named
        if "{{" in node.text:
            seen = dict.fromkeys(m.group(1) for m in _LEFT.finditer(node.text) if m.group(1) in env.unsupported)
            diagnostics += [{"code": "UNSUPPORTED_MACRO", "id": node.id, "name": node.name, "macro": name}
                            for name in seen]
    return diagnostics
