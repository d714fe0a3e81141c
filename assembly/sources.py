"""Sources: each rule kind turns its resource into blocks (reference A.10.1 and A.12, our own design).

A source never decides where its blocks end up; it only says what it has, which role each piece was written with,
which other blocks it refers to (slots), and what depth or group a piece asks for. Logical assembly decides the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assembly.blocks import Block
from assembly.macros import RESOURCE_MACRO_RE, RESOURCE_MACROS, SLOT_MACRO_RE, MacroContext, expand_text_macros
from assembly.sillytavern.regex import WORLD_INFO, regexed, regexed_chat_once, scripts_in_order

CHARACTER_MARKERS = {
    "charDescription": "description",
    "charPersonality": "personality",
    "scenario": "scenario",
    "dialogueExamples": "examples",
}
PERSONA_MARKERS = ("personaDescription", "userDescription", "userPersona")
AUTHOR_NOTE_MARKERS = ("authorNote", "authorsNote")
WORLD_INFO_GROUPS = {
    "worldInfoBefore": ("before",),
    "worldInfoAfter": ("after",),
    "worldInfo": ("before", "after"),
}
CHARACTER_FIELDS = ("description", "personality", "scenario", "examples", "system", "phi")
WORLD_BOOK_POSITIONS = ("before", "after", "before_example_messages", "after_example_messages", "before_author_note",
                        "after_author_note", "at_depth", "outlet")
_VAR_RE = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*\}\}")


@dataclass(slots=True)
class SourceContext:
    """Everything a source may read. Built once per request by logical assembly."""

    strategy: dict[str, Any]
    resources: Any  # assembly.sillytavern.models.Resources
    history: list[dict[str, Any]]
    inputs: list[dict[str, Any]]
    host_system_text: str
    variables: dict[str, str]
    adaptive_worldbook: bool
    preset_beats_default: bool
    manual_keys: frozenset[str]  # "source#position" keys placed by hand (list placement)
    disabled_keys: frozenset[str]
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    max_context: int = 8192
    tokenizer: str = "o200k_base"
    world_info: Any = None  # the keyword activation, when the book asks for it
    regexed_chat: Any = None  # sillytavern.regex.RegexedChat: the chat through the regex scripts, when the scan read it
    generation_type: str = "normal"
    quiet_prompt: str = ""  # SillyTavern's world info scans it with the extension prompts (sillytavern.md §13.3)
    swiped: bool = False  # the history lost its last message to a swipe
    sillytavern: bool = False  # the strategy itself asked for SillyTavern's placement (not a layout's choice)
    seed: int | None = None  # world info chance (assembly.sillytavern.worldinfo_chance)
    turn: int = 0  # the generation's index in its chat session: what earlier generations left behind
    macro_env: Any = None  # SillyTavern's macros for this generation (assembly.sillytavern.macro_environment)
    sent_prompts: list[Any] = field(init=False)  # `ordered_prompts` for the generation type: every marker asks
    sent_identifiers: frozenset[str] = field(init=False)  # their identifiers
    placement: str = field(init=False)
    collection: bool = field(init=False)  # `st_collection`: SillyTavern's prompt collection decides what is sent

    def __post_init__(self) -> None:
        preset = self.resources.preset
        self.sent_prompts = ordered_prompts(preset, self.generation_type) if preset is not None else []
        self.sent_identifiers = frozenset([p.identifier for p in self.sent_prompts])
        self.placement = self.strategy.get("placement", "modules")
        self.collection = self.placement == "st" and preset is not None and preset.has_prompt_order

    def enabled_kinds(self) -> set[str]:
        return {r["kind"] for r in self.strategy["rules"] if r["enabled"]}



def split_slot_text(block_id: str, source: str, text: str, **common: Any) -> list[Block]:
    """Split text on slot macros into text pieces and references; every piece keeps the prompt's role."""
    pieces: list[Block] = []
    pos = 0
    for match in SLOT_MACRO_RE.finditer(text):
        if match.start() > pos:
            pieces.append(_text_block(f"{block_id}:text:{pos}", source, text[pos : match.start()], **common))
        pieces.extend(_slot_references(f"{block_id}:{match.start()}", source, match.group(1), common))
        pos = match.end()
    if pieces and pos < len(text):
        pieces.append(_text_block(f"{block_id}:text:{pos}", source, text[pos:], **common))
    if not pieces:
        return [_text_block(block_id, source, text, **common)]
    return pieces


def _text_block(block_id: str, source: str, text: str, **common: Any) -> Block:
    claims = tuple(dict.fromkeys(m.group(1) for m in RESOURCE_MACRO_RE.finditer(text)))
    return Block(id=block_id, source=source, type="text", text=text, macro_claims=claims, **common)


def _slot_references(prefix: str, source: str, macro: str, common: dict[str, Any]) -> list[Block]:
    role = common.get("role")
    name = common.get("name", "")
    base = {"source": source, "type": "reference", "role": role, "name": name, "field": common.get("field")}
    if macro == "chatHistory":
        return [
            Block(id=f"{prefix}:history", target_source="history", **base),
            Block(id=f"{prefix}:input", target_source="input", **base),
        ]
    if macro in ("history", "input"):
        return [Block(id=f"{prefix}:{macro}", target_source=macro, **base)]
    return [
        Block(id=f"{prefix}:{group}", target_source="worldbook", target_group=group, **base)
        for group in WORLD_INFO_GROUPS[macro]
    ]


def ordered_prompts(preset: Any, generation_type: str = "normal") -> list[Any]:
    """The preset's enabled prompts in the order the preset decides (prompt_order when present), without those whose
    injection triggers name other generation types (sillytavern.md §2.6)."""
    return [p for p in preset.ordered_prompts()
            if p.enabled and (not p.injection_trigger or generation_type in p.injection_trigger)]


FIELD_MARKERS = {field_name: marker for marker, field_name in CHARACTER_MARKERS.items()}
WORLD_INFO_MARKERS = {"before": "worldInfoBefore", "after": "worldInfoAfter",
                      "before_example_messages": "dialogueExamples", "after_example_messages": "dialogueExamples"}


def st_sends_marker(ctx: SourceContext, identifier: str) -> bool:
    """Under SillyTavern's collection (placement `st` with a preset in SillyTavern's shape, one with a prompt_order,
    §2.6; a bare prompt list keeps the project's own reading) a marker's content goes only through its enabled prompt
    (§2.6, §11.9): a disabled or missing marker sends nothing. Otherwise it is always available."""
    return not ctx.collection or identifier in ctx.sent_identifiers


def _st_claimed_by_macro(ctx: SourceContext, source: str, field_name: str) -> bool:
    """An enabled prompt pulls the field in with a resource macro ({{description}}, {{persona}}, ...)."""
    names = {n for n, target in RESOURCE_MACROS.items() if target == (source, field_name)}
    return any(name in _macro_names(p.content or "") for p in ctx.sent_prompts for name in names)


def preset_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    preset = ctx.resources.preset
    if preset is None:
        return []
    prompts = ctx.sent_prompts
    anchors = world_book_anchors(ctx, prompts)
    blocks: list[Block] = []
    for prompt in prompts:
        role = prompt.role or "system"
        name = prompt.name or prompt.identifier
        ident = prompt.identifier
        slot_groups = _WORLD_BOOK_SLOT_GROUPS[ident] if ident in anchors else None
        if slot_groups:
            blocks.append(_wb_slot(ident, slot_groups[0], role, name))
        if prompt.marker:
            blocks.extend(_marker_blocks(ctx, ident, role, name))
        else:
            blocks.extend(_prompt_blocks(ctx, prompt, {"role": role, "name": name, "field": ident,
                                                       "position_id": _preset_position(prompt)}))
        if slot_groups:
            blocks.append(_wb_slot(ident, slot_groups[1], role, name))
    return blocks


_WORLD_BOOK_SLOT_GROUPS = {
    "dialogueExamples": ("before_example_messages", "after_example_messages"),
    "authorNote": ("before_author_note", "after_author_note"),
    "authorsNote": ("before_author_note", "after_author_note"),
}


def world_book_anchors(ctx: SourceContext, prompts: list[Any]) -> frozenset[str]:
    """The prompts that world-book example and author's-note slots surround, in slot layouts only. Reference A.12:
    the first enabled `dialogueExamples` prompt and the first enabled `authorNote` / `authorsNote` prompt, marker or
    not; a strategy that states SillyTavern's placement keeps its markers (every marker of those names); a layout
    that merely chooses the `st` ordering keeps the library's slots."""
    if not ctx.adaptive_worldbook:
        return frozenset()
    if ctx.sillytavern:
        return frozenset(p.identifier for p in prompts if p.marker and p.identifier in _WORLD_BOOK_SLOT_GROUPS)
    examples = next((p.identifier for p in prompts if p.identifier == "dialogueExamples"), None)
    note = next((p.identifier for p in prompts if p.identifier in AUTHOR_NOTE_MARKERS), None)
    return frozenset(i for i in (examples, note) if i)


def _prompt_blocks(ctx: SourceContext, prompt: Any, common: dict[str, Any]) -> list[Block]:
    """A prompt that is not a marker: its text, split on slot macros (or one block at depth)."""
    ident = prompt.identifier
    character = ctx.resources.character
    text = prompt.content or ""
    claims: tuple[str, ...] = ()
    override_field = _OVERRIDDEN_FIELDS.get(ident)
    original: tuple[tuple[str, str], ...] = ()
    if override_field and character is not None and _may_override(ctx, prompt, override_field):
        replacement = _character_field(character, override_field)
        if ctx.macro_env is not None:  # SillyTavern's macros fill {{original}} (macro_order)
            original = (("original", text),)
            text = ctx.macro_env.fields.get(override_field, replacement)
        else:
            text = replacement.replace("{{original}}", text)
        claims = (override_field,)
    redirect = "phi" if ident == "jailbreak" and ctx.placement == "modules" and "phi" in ctx.enabled_kinds() else None
    if prompt.injection_position == 1:
        depth = prompt.injection_depth if prompt.injection_depth is not None else 0
        order = prompt.injection_order if prompt.injection_order is not None else 100
        if ctx.placement == "st" or not SLOT_MACRO_RE.search(text):
            return [Block(id=ident, source="preset", type="text", text=text, depth=depth, order=order,
                          macro_claims=_macro_names(text), extra=(("field_claims", claims), *original),
                          redirect_source=redirect, **{**common, "position_id": "depth"})]
        # Outside st, slot macros split an in-chat prompt like any other; every text piece keeps the depth.
        pieces = split_slot_text(ident, "preset", text, **{**common, "position_id": "depth"})
        return [p._replace(depth=depth, order=order, extra=(("field_claims", claims),), redirect_source=redirect)
                if p.type == "text" else p for p in pieces]
    # under SillyTavern's own macros {{input}} and the like are macros of the text, not slots that split it
    pieces = split_slot_text(ident, "preset", text, **common) if ctx.macro_env is None else [
        _text_block(ident, "preset", text, **common)]
    if claims or redirect:
        pieces = [p._replace(extra=(("field_claims", claims), *original), redirect_source=redirect) for p in pieces]
    return pieces


_OVERRIDDEN_FIELDS = {"main": "system", "jailbreak": "phi"}  # the card field a prompt's override replaces


def _macro_names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.group(1) for m in RESOURCE_MACRO_RE.finditer(text)))


def _preset_position(prompt: Any) -> str:
    if prompt.injection_position == 1:
        return "depth"
    if prompt.identifier in ("main", "jailbreak"):
        return prompt.identifier
    return "body"


def _wb_slot(ident: str, group: str, role: str, name: str) -> Block:
    return Block(id=f"{ident}:{group}", source="preset", type="reference", role=role, name=name, field=ident,
                 target_source="worldbook", target_group=group)


def _marker_blocks(ctx: SourceContext, ident: str, role: str, name: str) -> list[Block]:
    if ident in CHARACTER_MARKERS:
        return [Block(id=ident, source="preset", type="reference", role=role, name=name, field=ident,
                      target_source="character", target_fields=_MARKER_TARGET_FIELDS[ident], honor_enabled=False)]
    if ident in PERSONA_MARKERS:
        if ctx.placement == "st":
            return [Block(id=ident, source="preset", type="reference", role=role, name=name, field=ident,
                          target_source="persona")]
        # like a card marker: it pulls the persona with its own rule off, and from a listed persona in module order
        return [Block(id=ident, source="preset", type="reference", role=role, name=name, field=ident,
                      target_source="persona", target_fields=("persona",), honor_enabled=False)]
    if ident in AUTHOR_NOTE_MARKERS:
        return [Block(id=ident, source="preset", type="text", role=role, name=name, field=ident, anchor=True)]
    if ident == "chatHistory":
        return [Block(id=f"{ident}:history", source="preset", type="reference", role=role, name=name, field=ident,
                      target_source="history"),
                Block(id=f"{ident}:input", source="preset", type="reference", role=role, name=name, field=ident,
                      target_source="input")]
    if ident in ("history", "input"):
        return [Block(id=ident, source="preset", type="reference", role=role, name=name, field=ident,
                      target_source=ident)]
    if ident in WORLD_INFO_GROUPS:
        return [Block(id=f"{ident}:{g}", source="preset", type="reference", role=role, name=name, field=ident,
                      target_source="worldbook", target_group=g) for g in WORLD_INFO_GROUPS[ident]]
    ctx.diagnostics.append({"code": "UNSUPPORTED_MARKER", "id": ident, "name": name})
    return []


_MARKER_TARGET_FIELDS = {marker: (field_name,) for marker, field_name in CHARACTER_MARKERS.items()}


def _may_override(ctx: SourceContext, prompt: Any, field_name: str) -> bool:
    character = ctx.resources.character
    # under SillyTavern's macros the field as Generate() read it: one its macros empty overrides nothing
    text = _character_field(character, field_name) if ctx.macro_env is None else ctx.macro_env.fields.get(field_name)
    return (
        bool(text)
        and not prompt.forbid_overrides
        and ctx.preset_beats_default
        and f"character#{field_name}" not in ctx.manual_keys
        and f"character#{field_name}" not in ctx.disabled_keys
    )


def _character_field(character: Any, field_name: str) -> str:
    attr = {"examples": "mes_example", "system": "system_prompt", "phi": "post_history_instructions"}.get(
        field_name, field_name
    )
    return getattr(character, attr, "") or ""


def character_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    character = ctx.resources.character
    if character is None:
        return []
    blocks = []
    for name in CHARACTER_FIELDS:
        text = _character_field(character, name)
        if not text:
            continue
        if f"character#{name}" in ctx.disabled_keys:
            continue  # a disabled field position blanks the field (reference A.12)
        if not _st_sends_field(ctx, rule, name):
            continue
        extra: tuple[tuple[str, Any], ...] = ()
        if ctx.macro_env is not None:  # the field as SillyTavern's Generate() read it (its macros substituted)
            text = ctx.macro_env.fields.get(name, text)
            if not text:
                continue
            wrapper = _st_format(ctx, name)
            if wrapper:  # the format goes through the macros where SillyTavern reads it (macro_order)
                text, extra = wrapper, (("format", True),)
        else:
            text = _formatted_field(ctx, name, text)
        blocks.append(Block(id=name, source="character", type="text", text=text, field=name, position_id=name,
                            name=f"{character.name} · {name}", reference_only=name in _reference_only_fields(ctx),
                            resource_id=character.name, extra=extra))
    depth_prompt = getattr(character, "depth_prompt", None)
    if depth_prompt is not None and (depth_prompt.prompt or "").strip():
        text = depth_prompt.prompt if ctx.macro_env is None else ctx.macro_env.fields.get("depth_prompt", "")
        blocks.append(Block(id="depth_prompt", source="character", type="text", text=text,
                            field="depth_prompt", position_id="depth_prompt", role=depth_prompt.role or "system",
                            depth=depth_prompt.depth if depth_prompt.depth is not None else 4,
                            name=f"{character.name} · character's note", resource_id=character.name))
    return blocks


def _st_sends_field(ctx: SourceContext, rule: dict[str, Any], name: str) -> bool:
    """Placement `st`: a card field goes only through its marker (or a resource macro of an enabled prompt); the
    card's system prompt and post-history instructions only as the Main / Post-History prompt they override
    (sillytavern.md §4.1 step 5): with that prompt disabled, or its overrides forbidden, the card's text is not sent."""
    if not ctx.collection:
        return True
    if name in ("system", "phi"):
        identifier = "main" if name == "system" else "jailbreak"
        prompt = next((p for p in ctx.sent_prompts if p.identifier == identifier), None)
        return prompt is not None and _may_override(ctx, prompt, name)
    return st_sends_marker(ctx, FIELD_MARKERS[name]) or (ctx.macro_env is None
                                                         and _st_claimed_by_macro(ctx, "character", name))


def _st_format(ctx: SourceContext, name: str) -> str:
    """`scenario_format` / `personality_format`, which preparePromptsForChatCompletion puts through the macros in
    place of a field that has text (`{{scenario}}` / `{{personality}}` bring the field in)."""
    preset = ctx.resources.preset
    if name not in ("scenario", "personality") or preset is None:
        return ""
    return getattr(preset, f"{name}_format", "") or ""


def _reference_only_fields(ctx: SourceContext) -> tuple[str, ...]:
    """The card fields that appear only where something pulls them. Reference A.12: the post-history instructions;
    the system prompt stands on its own unless a `main` prompt consumes it. A strategy that states SillyTavern's
    placement keeps SillyTavern's rule: the card's system prompt only ever replaces `main`."""
    return ("system", "phi") if ctx.sillytavern else ("phi",)


def _formatted_field(ctx: SourceContext, name: str, text: str) -> str:
    """The preset's scenario / personality wrappers (sillytavern.md §4.1: `scenario_format`, `personality_format`);
    other macros in the wrapper ({{char}}) are expanded with the rest of the text."""
    preset = ctx.resources.preset
    wrapper = {"scenario": getattr(preset, "scenario_format", ""),
               "personality": getattr(preset, "personality_format", "")}.get(name) if preset is not None else None
    if not wrapper:
        return text
    return re.sub(r"\{\{\s*" + name + r"\s*\}\}", lambda _m: text, wrapper)


def persona_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    persona = ctx.resources.persona
    if persona is None or not (persona.description or "").strip():
        return []
    if not (any(st_sends_marker(ctx, m) for m in PERSONA_MARKERS)
            or (ctx.macro_env is None and _st_claimed_by_macro(ctx, "persona", "persona"))):
        return []
    return [Block(id="persona", source="persona", type="text", text=persona.description, field="persona",
                  position_id="persona", name=f"{persona.name or 'Persona'} · persona", resource_id=persona.name)]


def worldbook_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    book = ctx.resources.worldbook
    if book is None:
        return []
    anchors = _world_book_anchor_kinds(ctx)
    # whether each marker's prompt is sent, asked once for the whole book
    silent = {position for position, marker in WORLD_INFO_MARKERS.items() if not st_sends_marker(ctx, marker)}
    blocks = []
    for entry, reason in active_world_entries(ctx, book):
        position = entry.position or "after"
        if position in silent:
            continue  # activated, but its prompt is disabled: SillyTavern sends nothing of it
        # SillyTavern gives an entry its role only at depth; the other positions go in as the system text they join
        role = entry.role or "system" if position == "at_depth" or not ctx.sillytavern else "system"
        uid = str(entry.uid)
        at_depth = position == "at_depth"
        outlet = position == "outlet"  # outlet entries fill {{outlet::name}} markers, never stand alone
        # by position, every field in Block's order: one block per active entry
        blocks.append(Block(
            uid, "worldbook", "text", entry.content, role, entry.display_name, None,
            _world_book_group(ctx, entry, anchors), "depth" if at_depth else position,
            (entry.depth if entry.depth is not None else 0) if at_depth else None,
            entry.order if entry.order is not None else 100, (), None, None, None, True, outlet, True, "operator",
            uid, reason, (), None, False, (("outlet_name", entry.outlet_name),) if outlet else ()))
    return blocks


def world_book_slot_diagnostics(ctx: SourceContext) -> None:
    """The preset and custom text depend on the world book (their world-info slots), so the book is read for them
    even when its own rule is disabled or absent, and still reports the entries whose slot is missing. Not in st."""
    rules = ctx.strategy["rules"]
    book_rule = next((r for r in rules if r["kind"] == "worldbook"), None)
    if (ctx.sillytavern or (book_rule is not None and book_rule["enabled"])
            or not any(r["enabled"] and r["kind"] in ("preset", "custom") for r in rules)):
        return
    book = ctx.resources.worldbook
    if book is None or book.activation == "keywords":
        return
    anchors = _world_book_anchor_kinds(ctx)
    for entry in book.entries:
        if entry.enabled:
            _world_book_group(ctx, entry, anchors)


def _world_book_anchor_kinds(ctx: SourceContext) -> set[str]:
    # the prompts this generation sends, as preset_blocks reads them
    return {"authorNote" if i in AUTHOR_NOTE_MARKERS else i for i in world_book_anchors(ctx, ctx.sent_prompts)}


def _world_book_group(ctx: SourceContext, entry: Any, anchors: set[str]) -> str:
    """The group an entry joins; an example or author's-note position without its slot falls back to `after`, and
    in slot layouts (the only ones that promise those positions) says so (reference A.12)."""
    position = entry.position or "after"
    if position == "at_depth":
        return "depth"
    if position not in ("before_example_messages", "after_example_messages", "before_author_note",
                        "after_author_note"):
        return position
    anchor = "dialogueExamples" if "example" in position else "authorNote"
    if anchor in anchors:
        return position
    if ctx.adaptive_worldbook:
        ctx.diagnostics.append({"code": "WORLD_BOOK_SLOT_MISSING", "name": entry.display_name,
                                "position": position, "anchor": anchor})
    return "after"


def active_world_entries(ctx: SourceContext, book: Any) -> list[tuple[Any, str]]:
    """The entries that take part, each with why (engine.md §5 world book activation). Activation "all": the host
    already chose them, in its order. "keywords": SillyTavern's scan (assembly.sillytavern.worldinfo), in SillyTavern's order."""
    if book.activation != "keywords":
        if ctx.macro_env is not None:  # each entry's text through SillyTavern's macros as it activates
            chosen = [_with_content(e, ctx.macro_env.evaluate(e.content)) for e in book.entries if e.enabled]
            ctx.macro_env.outlets, ctx.macro_env.outlet_entries = _outlets(chosen)
            return [(e, "enabled: chosen by the host") for e in chosen]
        return [(e, "enabled: chosen by the host") for e in book.entries if e.enabled]
    activation = world_info_activation(ctx, book)
    by_uid = {e.uid: e for e in book.entries}
    entries = [(_st_regexed_entry(ctx, _with_content(by_uid[a.uid], a.content)), a.reason.message)
               for a in activation.active]
    if ctx.macro_env is not None:  # {{outlet::name}} reads the activated outlet entries from now on
        ctx.macro_env.outlets, ctx.macro_env.outlet_entries = _outlets(e for e, _reason in entries)
        if any(e.match_persona_description or e.match_character_description or e.match_character_personality
               or e.match_character_depth_prompt or e.match_scenario or e.match_creator_notes for e in book.entries):
            ctx.macro_env.read_scan_data()
    return [(e, reason) for e, reason in entries if e.content or ctx.placement != "st"]


def _with_content(entry: Any, content: str) -> Any:  # a frozen entry with `content` (itself when it has it)
    return entry if content == entry.content else entry.model_copy(update={"content": content})


def _outlets(entries: Any) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Each outlet's text, its entries joined in their order, and the uids of those entries."""
    by_name: dict[str, list[Any]] = {}
    for entry in entries:
        if entry.position == "outlet" and entry.content:
            by_name.setdefault((entry.outlet_name or "").strip(), []).append(entry)
    ordered = {name: sorted(group, key=lambda e: (e.order if e.order is not None else 100, str(e.uid)))
               for name, group in by_name.items()}
    return ({name: "\n".join(e.content for e in group) for name, group in ordered.items()},
            {name: tuple(str(e.uid) for e in group) for name, group in ordered.items()})


def world_info_activation(ctx: SourceContext, book: Any) -> Any:
    """SillyTavern's keyword scan over this request's chat, computed once per request."""
    if ctx.world_info is None:
        from assembly.sillytavern.worldinfo import activate_world_info, card_scan_data, scan_injections

        resources = ctx.resources
        scan_data = card_scan_data(resources.character, resources.persona)
        chat = [{"id": m.get("id"), "role": m["role"], "content": m.get("content") or "",
                 **({"name": m["name"]} if m.get("name") else {})}
                for m in ctx.history + ctx.inputs if m["role"] in ("user", "assistant", "system")]
        if ctx.placement == "st":  # world info scans the chat as regex scripts left it (sillytavern.md §13.1)
            texts = st_chat_texts(ctx, ctx.history + ctx.inputs)
            by_id = {m.get("id"): t for m, t in zip(ctx.history + ctx.inputs, texts, strict=True)}
            scanned = [m for m in ctx.history + ctx.inputs if m["role"] in ("user", "assistant", "system")]
            chat = [{**c, "content": by_id.get(m.get("id"), c["content"])} for c, m in zip(chat, scanned, strict=True)]
        ctx.world_info = activate_world_info(book, chat=chat, names=ctx.names, max_context=ctx.max_context,
                                             encoding=ctx.tokenizer, global_scan_data=scan_data,
                                             scan_injections=scan_injections(
                                                 resources, turn=ctx.turn, quiet_prompt=ctx.quiet_prompt,
                                                 user_messages=sum(m["role"] in ("user", "tool")
                                                                   for m in ctx.history + ctx.inputs)),
                                             generation=ctx.generation_type,
                                             # SillyTavern's macros substituted the typed text already
                                             typed_messages=0 if ctx.macro_env is not None else sum(
                                                 m["role"] in ("user", "assistant", "system") for m in ctx.inputs),
                                             world_state=resources.world_state, seed=ctx.seed, turn=ctx.turn,
                                             macros=st_macros(ctx) if ctx.macro_env is not None else None)
        ctx.diagnostics.extend(ctx.world_info.pattern_limits)
    return ctx.world_info


def st_macros(ctx: SourceContext) -> MacroContext:
    return MacroContext(user=ctx.names.get("user", "User"), char=ctx.names.get("char", ""), st=ctx.macro_env)


def st_chat_texts(ctx: SourceContext, messages: list[dict[str, Any]]) -> list[str]:
    """The chat's texts after SillyTavern's regex scripts (the typed input first as it is stored, §13.1)."""
    scripts = scripts_in_order(ctx.resources)
    texts = [m.get("content") or "" for m in messages]
    if texts and "{{" in texts[0] and ctx.macro_env is None:  # the greeting has its macros before the scripts run
        texts[0] = expand_text_macros(texts[0], st_macros(ctx)).text
    if not scripts:
        return texts
    typed = [ctx.generation_type == "normal" and i >= len(ctx.history) for i in range(len(messages))]
    ctx.regexed_chat = regexed_chat_once([(m["role"], t) for m, t in zip(messages, texts, strict=True)], scripts,
                                         st_macros(ctx), generation_type=ctx.generation_type, typed=typed)
    return [text for text, _steps in ctx.regexed_chat.results]


def _st_regexed_entry(ctx: SourceContext, entry: Any) -> Any:
    """An activated entry's text after the world-info regex scripts (prompt-only; at-depth entries with their
    depth, §13.1). An entry emptied here is not sent but stays activated."""
    scripts = scripts_in_order(ctx.resources) if ctx.placement == "st" else ()
    if not scripts:
        return entry
    depth = entry.depth if entry.position == "at_depth" else None
    text = regexed(entry.content, WORLD_INFO, scripts, st_macros(ctx), is_prompt=True, depth=depth)
    return _with_content(entry, text)


def native_block(source: str, messages: list[dict[str, Any]]) -> Block:
    return Block(id=source, source=source, type="native", message_ids=tuple([m["id"] for m in messages]),
                 trust="user", position_id="content")


def native_system_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    if not ctx.host_system_text:
        return []
    return [Block(id="native-system", source="native-system", type="native",
                  message_ids=("assembler-native-system",), trust="system")]


def phi_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    # outside st the phi rule reads the card's instructions even when the character rule is off
    blocks = [Block(id="phi", source="phi", type="reference", target_source="character", target_fields=("phi",),
                    lock=False, name="Post-history instructions", honor_enabled=ctx.placement == "st")]
    if rule.get("text"):
        blocks.append(Block(id="additional-phi", source="phi", type="text", text=rule["text"],
                            name=rule.get("name") or "Additional post-history instructions",
                            macro_claims=_macro_names(rule["text"])))
    return blocks


def custom_blocks(ctx: SourceContext, rule: dict[str, Any]) -> list[Block]:
    text = rule.get("text") or ""
    if not text:
        return []
    kind = rule["kind"]
    common = {"name": rule.get("name") or rule["id"], "field": rule["id"], "position_id": "content"}
    if kind == "dsh.text":
        return [Block(id=rule["id"], source=kind, type="text", text=_fill_variables(text, ctx.variables, rule),
                      **common)]
    # Several custom rules may exist: the rule id keeps their blocks apart.
    return split_slot_text(rule["id"], kind, text, **common)


def _fill_variables(text: str, variables: dict[str, str], rule: dict[str, Any]) -> str:
    from assembly.errors import AssemblyError

    def replace(match: re.Match[str]) -> str:
        value = variables.get(match.group(1))
        if not isinstance(value, str):
            raise AssemblyError("NATIVE_TEXT_VARIABLE_UNAVAILABLE",
                                f"rules[{rule['id']}].text: variable {{{{{match.group(1)}}}}} is not provided by the host",
                                status=409, detail={"ruleId": rule["id"], "variable": match.group(1)})
        return value

    return _VAR_RE.sub(replace, text)


SOURCES = {"preset": preset_blocks, "character": character_blocks, "persona": persona_blocks,
           "worldbook": worldbook_blocks, "phi": phi_blocks, "native-system": native_system_blocks,
           "custom": custom_blocks, "dsh.text": custom_blocks}
SLOT_OWNERS = frozenset({"preset"})
