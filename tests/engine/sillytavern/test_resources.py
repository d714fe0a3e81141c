"""Resources: SillyTavern importers and exporters (engine.md §1, §5; sillytavern.md §2, §7–§9).

Expected values below were read by hand from the files in shared/fixtures/sillytavern/ and from our own fixtures in
tests/engine/fixtures/ (written for these tests in SillyTavern's formats).
"""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from pathlib import Path

import pytest

from assembly.reading import MAX_IMPORT_BYTES, ImportInvalid
from assembly.sillytavern.card import export_character, import_character
from assembly.sillytavern.models import (
    AuthorNote,
    Character,
    DepthPrompt,
    ExtensionPrompt,
    Persona,
    Preset,
    Prompt,
    PromptOrderEntry,
    Resources,
    WorldBook,
    WorldBookEntry,
)
from assembly.sillytavern.png import PNG_SIGNATURE
from assembly.sillytavern.preset import export_preset, import_preset
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.settings import import_settings
from assembly.sillytavern.vocabulary import PLACEMENT_POSITION_BY_WORLD_POSITION, world_position
from assembly.sillytavern.worldbook import export_character_book, export_worldbook, import_worldbook

OWN_FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module")
def st(shared_fixtures: Path) -> Path:
    folder = shared_fixtures / "sillytavern"
    assert folder.is_dir(), f"{folder} is missing"
    return folder


def load(folder: Path, name: str):
    return json.loads((folder / name).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------- PNG writing



def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def make_png(*chunks: bytes) -> bytes:
    """A 1x1 grayscale PNG with the given chunks between IHDR and IDAT."""
    header = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    pixels = png_chunk(b"IDAT", zlib.compress(b"\x00\x00"))
    return PNG_SIGNATURE + header + b"".join(chunks) + pixels + png_chunk(b"IEND", b"")


def card_text(keyword: str, card: dict) -> bytes:
    return png_chunk(b"tEXt", keyword.encode() + b"\x00" + base64.b64encode(json.dumps(card).encode("utf-8")))


def v2_card(name: str, **data) -> dict:
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name, **data}}


# ---------------------------------------------------------------------------------------------- the Default preset

DEFAULT_100001 = [
    ("main", True), ("worldInfoBefore", True), ("personaDescription", True), ("charDescription", True),
    ("charPersonality", True), ("scenario", True), ("enhanceDefinitions", False), ("nsfw", True),
    ("worldInfoAfter", True), ("dialogueExamples", True), ("chatHistory", True), ("jailbreak", True),
]


def test_default_preset_prompts_and_order(st):
    preset = import_preset(load(st, "st_cc_preset_Default.json"))
    assert [p.identifier for p in preset.prompts] == [
        "main", "nsfw", "dialogueExamples", "jailbreak", "chatHistory", "worldInfoAfter", "worldInfoBefore",
        "enhanceDefinitions", "charDescription", "charPersonality", "scenario", "personaDescription",
    ]
    assert [(e.identifier, e.enabled) for e in preset.prompt_order] == DEFAULT_100001
    assert preset.has_prompt_order is True
    # The legacy 100000 order is kept for export: 11 entries, no personaDescription.
    assert [lst.character_id for lst in preset.other_prompt_orders] == [100000]
    legacy = [e.identifier for e in preset.other_prompt_orders[0].order]
    assert len(legacy) == 11 and "personaDescription" not in legacy

    markers = {p.identifier for p in preset.prompts if p.marker}
    assert markers == {"dialogueExamples", "chatHistory", "worldInfoAfter", "worldInfoBefore", "charDescription",
                       "charPersonality", "scenario", "personaDescription"}
    main = preset.prompt("main")
    assert main.content == "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}."
    assert (main.role, main.system_prompt, main.injection_position, main.forbid_overrides) == ("system", True, 0, False)
    assert preset.prompt("nsfw").content == "" and preset.prompt("nsfw").name == "Auxiliary Prompt"


def test_default_preset_options(st):
    preset = import_preset(load(st, "st_cc_preset_Default.json"))
    assert preset.has_utility_prompts is True
    assert (preset.openai_max_context, preset.openai_max_tokens) == (4095, 300)
    assert preset.names_behavior == 0 and preset.squash_system_messages is False
    assert preset.new_chat_prompt == "[Start a new Chat]"
    assert preset.new_group_chat_prompt == "[Start a new group chat. Group members: {{group}}]"
    assert preset.new_example_chat_prompt == "[Example Chat]"
    assert preset.continue_nudge_prompt == "[Continue your last message without repeating its original content.]"
    assert preset.group_nudge_prompt == "[Write the next reply only as {{char}}.]"
    assert (preset.wi_format, preset.scenario_format, preset.personality_format) == (
        "{0}", "{{scenario}}", "{{personality}}")
    assert (preset.continue_prefill, preset.continue_postfix, preset.send_if_empty) == (False, " ", "")
    assert preset.impersonation_prompt.startswith("[Write your next reply from the point of view of {{user}}")
    # Keys we do not model are kept verbatim for export.
    assert preset.other_fields["temperature"] == 1
    assert preset.other_fields["openai_model"] == "gpt-4-turbo"
    assert "prompts" not in preset.other_fields and "prompt_order" not in preset.other_fields


def test_ordered_prompts_take_enabled_from_the_order(st):
    preset = import_preset(load(st, "st_cc_preset_Default.json"))
    ordered = preset.ordered_prompts()
    assert [(p.identifier, p.enabled) for p in ordered] == DEFAULT_100001
    # The prompt's own flag stays as the file has it (absent -> true); only the ordered view changes.
    assert preset.prompt("enhanceDefinitions").enabled is True


def test_preset_1_12_6_imports_with_old_keys(st):
    old = import_preset(load(st, "st_cc_preset_Default.v1.12.6.json"))
    current = import_preset(load(st, "st_cc_preset_Default.json"))
    assert [(e.identifier, e.enabled) for e in old.prompt_order] == DEFAULT_100001
    assert [p.identifier for p in old.prompts] == [p.identifier for p in current.prompts]
    assert old.scenario_format == "[Circumstances and context of the dialogue: {{scenario}}]"
    assert old.personality_format == "[{{char}}'s personality: {{personality}}]"
    assert old.continue_nudge_prompt.startswith("[Continue the following message. Do not include ANY parts")
    # 1.12-only keys survive in other_fields.
    assert old.other_fields["wrap_in_quotes"] is False
    assert old.other_fields["jailbreak_system"] is False
    assert old.other_fields["human_sysprompt_message"].startswith("Let's get started.")


def test_settings_file_preset_without_100001_falls_back_to_default_order(st):
    settings = load(st, "st_default_settings.json")
    resources = import_settings(settings)
    preset = resources.preset
    # oai_settings has 11 prompts (no personaDescription) and only the legacy 100000 order: SillyTavern re-adds the
    # missing built-in definition and uses its default order for 100001.
    assert len(settings["oai_settings"]["prompts"]) == 11
    assert len(preset.prompts) == 12
    persona_prompt = preset.prompts[-1]
    assert (persona_prompt.identifier, persona_prompt.marker, persona_prompt.system_prompt) == (
        "personaDescription", True, True)
    assert [(e.identifier, e.enabled) for e in preset.prompt_order] == DEFAULT_100001
    assert preset.impersonation_prompt.endswith("Write 1 reply only in internet RP style. Don't write as {{char}} or "
                                                "system. Don't describe actions of {{char}}.]")


def test_settings_file_world_info_persona_and_note(st):
    resources = import_settings(load(st, "st_default_settings.json"))
    book = resources.worldbook
    assert book.entries == ()
    assert (book.scan_depth, book.budget_percent, book.budget_cap) == (2, 25, 0)
    assert (book.include_names, book.recursive, book.case_sensitive, book.match_whole_words) == (
        True, True, False, True)
    assert resources.persona == Persona(name="User", description="", position="in_prompt")
    assert resources.author_note == AuthorNote(content="")


# ---------------------------------------------------------------------------------------------- our own preset


def test_custom_preset_order_triggers_and_builtins():
    preset = import_preset(load(OWN_FIXTURES, "st_preset_custom.json"))
    assert [(e.identifier, e.enabled) for e in preset.prompt_order] == [
        ("7a1c-style-guide", True), ("main", True), ("chatHistory", True), ("jailbreak", False)]
    style = preset.prompt("7a1c-style-guide")
    assert (style.role, style.injection_position, style.injection_depth, style.injection_order) == ("user", 1, 2, 50)
    assert style.injection_trigger == ("normal", "continue")
    assert style.enabled is False and preset.ordered_prompts()[0].enabled is True
    assert preset.prompt("main").forbid_overrides is True
    # The 9 built-ins the file lacks are re-added after its own 4 prompts, as SillyTavern does.
    assert [p.identifier for p in preset.prompts[4:]] == [
        "nsfw", "dialogueExamples", "worldInfoAfter", "worldInfoBefore", "enhanceDefinitions", "charDescription",
        "charPersonality", "scenario", "personaDescription"]
    assert (preset.names_behavior, preset.squash_system_messages) == (1, True)
    assert (preset.openai_max_context, preset.openai_max_tokens) == (8192, 512)
    assert (preset.new_chat_prompt, preset.new_example_chat_prompt, preset.wi_format) == (
        "[New scene]", "", "[Lore: {0}]")
    assert preset.group_nudge_prompt == "[Write the next reply only as {{char}}.]"  # absent -> SillyTavern's default
    assert preset.has_utility_prompts is True
    assert preset.other_fields == {"temperature": 0.7}


def test_bare_prompt_list_keeps_list_order_and_adds_nothing():
    preset = import_preset({"prompts": [
        {"identifier": "a", "role": "user", "content": "A"},
        {"identifier": "b", "content": "B", "enabled": False},
        {"identifier": "chatHistory", "marker": True},
    ]})
    assert preset.has_prompt_order is False and preset.has_utility_prompts is False
    assert [p.identifier for p in preset.prompts] == ["a", "b", "chatHistory"]
    assert [(e.identifier, e.enabled) for e in preset.prompt_order] == [("a", True), ("b", False),
                                                                         ("chatHistory", True)]
    assert preset.prompt("b").role == "system"  # SillyTavern's default role
    assert (preset.prompt("a").injection_depth, preset.prompt("a").injection_order) == (4, 100)
    assert "prompt_order" not in export_preset(preset)
    assert "new_chat_prompt" not in export_preset(preset)


def test_prompt_manager_export_with_flat_order():
    exported = {"version": 1, "type": "full", "data": {
        "prompts": [{"identifier": "x1", "name": "Extra", "role": "system", "content": "X", "system_prompt": False}],
        "prompt_order": [{"identifier": "x1", "enabled": True}, {"identifier": "main", "enabled": True}],
    }}
    preset = import_preset(exported)
    assert [(e.identifier, e.enabled) for e in preset.prompt_order] == [("x1", True), ("main", True)]
    assert preset.prompt("main").name == "Main Prompt"  # re-added built-in
    assert len(preset.prompts) == 13


def test_camel_case_spellings_are_accepted():
    preset = import_preset({"prompts": [{
        "identifier": "p", "injectionPosition": 1, "injectionDepth": 0, "injectionOrder": 7, "forbidOverrides": True,
        "systemPrompt": True, "injectionTrigger": ["quiet"],
    }], "namesBehavior": 2, "squashSystemMessages": True})
    p = preset.prompts[0]
    assert (p.injection_position, p.injection_depth, p.injection_order, p.forbid_overrides, p.system_prompt) == (
        1, 0, 7, True, True)
    assert p.injection_trigger == ("quiet",)
    assert (preset.names_behavior, preset.squash_system_messages) == (2, True)
    character = import_character({"name": "C", "firstMes": "hi", "mesExample": "<START>", "systemPrompt": "S",
                                  "postHistoryInstructions": "P", "depthPrompt": {"prompt": "n", "depth": 1}})
    assert (character.first_mes, character.mes_example, character.system_prompt) == ("hi", "<START>", "S")
    assert character.post_history_instructions == "P"
    assert character.depth_prompt == DepthPrompt(prompt="n", depth=1, role="system")
    entry = import_worldbook({"entries": [{"uid": 1, "outletName": "o", "position": "outlet",
                                           "secondaryKeys": ["k"], "selectiveLogic": "not_any"}]}).entries[0]
    assert (entry.outlet_name, entry.secondary_keys, entry.selective_logic) == ("o", ("k",), "not_any")


def test_dsh_st_block_supplies_injection_order_and_forbid_overrides():
    prompt = import_preset({"prompts": [{"identifier": "main", "injectionPosition": 1,
                                         "st": {"injection_order": 30, "forbid_overrides": True}}]}).prompts[0]
    assert (prompt.injection_order, prompt.forbid_overrides) == (30, True)


# ---------------------------------------------------------------------------------------------- character cards


def test_seraphina_v2_card(st):
    card = import_character(load(st, "st_card_Seraphina.v2.chara.json"))
    assert card.name == "Seraphina"
    assert card.description.startswith("[Seraphina's Personality= \"caring\", \"protective\"")
    assert (card.personality, card.scenario, card.mes_example) == ("", "", "")
    assert card.first_mes.startswith("*You wake with a start, recalling the events that led you deep into the forest")
    assert (card.system_prompt, card.post_history_instructions) == ("", "")
    assert card.creator_notes == "ST Default Bot contest winner: roleplay bots category"
    assert (card.creator, card.character_version) == ("OtisAlejandro", "1.0.0")
    assert card.tags == () and card.alternate_greetings == () and card.group_only_greetings == ()
    assert card.depth_prompt == DepthPrompt(prompt="", depth=4, role="system")
    assert card.talkativeness == 0.5
    assert card.extensions == {"fav": False, "world": "Eldoria"}
    book = card.character_book
    assert book.name == "Eldoria" and len(book.entries) == 4
    assert [e.uid for e in book.entries] == [0, 1, 2, 3]
    assert [e.comment for e in book.entries] == ["eldoria", "shadowfang", "glade", "power"]
    shadowfang = book.entries[1]
    assert shadowfang.keys == ("shadowfang", "beast", "monster", "monsters", "beasts")
    assert (shadowfang.position, shadowfang.depth, shadowfang.order, shadowfang.role) == ("before", 4, 100, "system")
    assert (shadowfang.enabled, shadowfang.selective, shadowfang.constant) == (True, True, False)
    assert shadowfang.other_fields == {"use_regex": True}


def test_v3_json_and_png_equal_v2(st):
    v2 = import_character(load(st, "st_card_Seraphina.v2.chara.json"))
    v3 = import_character(load(st, "st_card_Seraphina.v3.ccv3.json"))
    png = import_character((st / "st_card_Seraphina.png").read_bytes())
    same_data = {"spec", "card_fields"}  # the card's data is one; each file keeps its own spec and top-level keys
    assert v3.model_dump(exclude=same_data) == v2.model_dump(exclude=same_data)
    assert png.model_dump(exclude=same_data) == v3.model_dump(exclude=same_data)
    assert (v2.spec, v3.spec) == ("chara_card_v2", "chara_card_v3")
    assert export_character(v3)["spec"] == "chara_card_v3" and export_character(v2)["spec"] == "chara_card_v2"


def test_v3_card_fields():
    card = import_character(load(OWN_FIXTURES, "card_v3_lyra.json"))
    assert (card.name, card.nickname) == ("Lyra", "Ly")
    assert card.group_only_greetings == ("*Lyra nods to the group.*",)
    assert card.alternate_greetings == ("*Lyra waves.* Over here!",)
    assert card.tags == ("fantasy", "travel")
    assert card.system_prompt == "{{original}} Write as Lyra."
    assert card.post_history_instructions == "Answer in under 80 words."
    assert card.talkativeness == 0.8
    assert card.depth_prompt == DepthPrompt(prompt="Lyra never lies about distances.", depth=2, role="user")
    assert card.extensions == {"fav": True, "world": "Lyra's maps"}
    assert card.other_fields["creation_date"] == 1700000000
    assert card.other_fields["assets"] == [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}]
    assert card.other_fields["creator_notes_multilingual"] == {"fr": "Carte de test."}
    book = card.character_book
    assert (book.name, book.scan_depth) == ("Lyra's maps", 4)
    compass, satchel = book.entries
    # extensions.position (4) wins over the book's own "after_char".
    assert (compass.uid, compass.position, compass.depth, compass.role, compass.order) == (
        5, "at_depth", 1, "assistant", 20)
    assert (satchel.position, satchel.enabled, satchel.constant, satchel.order) == ("before", False, True, 10)


def test_flat_v1_card_and_simplified_shape():
    card = import_character({"name": "Old", "description": "d", "creatorcomment": "note", "talkativeness": "0.25",
                             "avatar": "none", "chat": "Old - 2023"})
    assert (card.creator_notes, card.talkativeness) == ("note", 0.25)
    assert card.other_fields == {"avatar": "none", "chat": "Old - 2023"}
    simplified = import_character({"name": "Seraphina", "description": "...", "depth_prompt": {
        "prompt": "Be kind.", "depth": 4, "role": "system"}})
    assert simplified.depth_prompt == DepthPrompt(prompt="Be kind.", depth=4, role="system")
    assert simplified.character_book is None


def test_png_prefers_ccv3_over_chara():
    chara, ccv3 = v2_card("From chara"), {**v2_card("From ccv3"), "spec": "chara_card_v3", "spec_version": "3.0"}
    for chunks in ((card_text("chara", chara), card_text("ccv3", ccv3)),
                   (card_text("ccv3", ccv3), card_text("chara", chara))):
        assert import_character(make_png(*chunks)).name == "From ccv3"
    assert import_character(make_png(card_text("chara", chara))).name == "From chara"


def test_png_ztxt_and_itxt_chunks():
    payload = base64.b64encode(json.dumps(v2_card("Zed")).encode())
    ztxt = png_chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(payload))
    assert import_character(make_png(ztxt)).name == "Zed"
    itxt_plain = png_chunk(b"iTXt", b"ccv3\x00\x00\x00en\x00\x00" + payload)
    assert import_character(make_png(itxt_plain)).name == "Zed"
    itxt_packed = png_chunk(b"iTXt", b"chara\x00\x01\x00\x00\x00" + zlib.compress(payload))
    assert import_character(make_png(itxt_packed)).name == "Zed"


def test_png_non_card_text_chunks_are_ignored():
    png = make_png(png_chunk(b"tEXt", b"Comment\x00hello"), card_text("chara", v2_card("Real")))
    assert import_character(png).name == "Real"


# ---------------------------------------------------------------------------------------------- world books


def test_eldoria_world_book(st):
    book = import_worldbook(load(st, "st_worldinfo_Eldoria.json"))
    assert len(book.entries) == 4
    assert [e.uid for e in book.entries] == [0, 1, 2, 3]
    glade = book.entry(2)
    assert glade.keys == ("glade", "safe haven", "refuge")
    assert glade.comment == "glade" and glade.display_name == "glade"
    assert (glade.position, glade.depth, glade.order, glade.role) == ("before", 4, 100, "system")  # role null
    assert (glade.enabled, glade.selective, glade.selective_logic, glade.constant) == (True, True, "and_any", False)
    assert (glade.probability, glade.use_probability, glade.group_weight) == (100, True, 100)
    assert (glade.scan_depth, glade.case_sensitive, glade.match_whole_words) == (None, None, None)
    assert (glade.sticky, glade.cooldown, glade.delay, glade.display_index) == (0, 0, 0, 2)
    assert glade.other_fields == {"addMemo": True}
    assert glade.content.startswith('{{user}}: "What is the glade?"')
    # Book-level defaults: a fresh SillyTavern install's settings.
    assert (book.activation, book.scan_depth, book.recursive, book.match_whole_words) == ("all", 2, True, True)


def test_eldoria_matches_the_cards_embedded_book(st):
    native = import_worldbook(load(st, "st_worldinfo_Eldoria.json"))
    embedded = import_character(load(st, "st_card_Seraphina.v2.chara.json")).character_book
    same = ("uid", "comment", "content", "keys", "secondary_keys", "position", "depth", "order", "role", "enabled")
    for a, b in zip(native.entries, embedded.entries, strict=True):
        assert {f: getattr(a, f) for f in same} == {f: getattr(b, f) for f in same}


def test_world_book_all_positions_and_fields():
    book = import_worldbook(load(OWN_FIXTURES, "st_worldbook_positions.json"))
    assert [(e.uid, e.position) for e in book.entries] == [
        (10, "before"), (11, "after"), (12, "before_author_note"), (13, "after_author_note"), (14, "at_depth"),
        (15, "before_example_messages"), (16, "after_example_messages"), (17, "outlet")]
    river, storm, king, dragon = book.entry(11), book.entry(12), book.entry(13), book.entry(14)
    assert river.secondary_keys == ("bridge", "ford") and river.selective_logic == "and_all" and river.order == 250
    assert (storm.selective_logic, storm.enabled) == ("not_all", False)
    assert king.selective_logic == "not_any"
    assert (dragon.depth, dragon.role, dragon.scan_depth, dragon.case_sensitive, dragon.match_whole_words) == (
        2, "user", 5, True, False)
    assert (dragon.probability, dragon.keys) == (40, ("/dragon(s)?/i",))
    style = book.entry(15)
    assert (style.constant, style.group, style.group_override, style.group_weight, style.depth) == (
        True, "style", True, 30, None)
    tavern = book.entry(16)
    assert (tavern.prevent_recursion, tavern.exclude_recursion, tavern.delay_until_recursion,
            tavern.ignore_budget) == (True, True, 2, True)
    maps = book.entry(17)
    assert (maps.outlet_name, maps.role, maps.triggers) == ("maps", "assistant", ("normal", "swipe"))
    assert maps.character_filter == {"isExclude": True, "names": ["Lyra"], "tags": []}
    assert (maps.sticky, maps.cooldown, maps.delay) == (2, 1, 0)


def test_simplified_entry_list_defaults():
    book = import_worldbook({"entries": [{"content": "A"}, {"uid": "lore-b", "content": "B", "position": "before"}]})
    first, second = book.entries
    assert (first.uid, first.position, first.role, first.order, first.enabled, first.depth) == (
        0, "after", "system", 100, True, None)
    assert second.uid == "lore-b" and second.position == "before"


def test_world_book_scan_settings_accept_both_spellings():
    ours = import_worldbook({"entries": {}, "activation": "keywords", "scan_depth": 6, "budget_percent": 50,
                             "budget_cap": 900, "recursive": False, "match_whole_words": False})
    st_names = import_worldbook({"entries": {}, "activation": "keywords", "world_info_depth": 6,
                                 "world_info_budget": 50, "world_info_budget_cap": 900,
                                 "world_info_recursive": False, "world_info_match_whole_words": False})
    assert ours == st_names
    assert (ours.activation, ours.scan_depth, ours.budget_percent, ours.budget_cap, ours.recursive) == (
        "keywords", 6, 50, 900, False)


POSITION_SPELLINGS = [
    # reference A.12 names
    ("before", "before"), ("after", "after"), ("before_example_messages", "before_example_messages"),
    ("after_example_messages", "after_example_messages"), ("before_author_note", "before_author_note"),
    ("after_author_note", "after_author_note"), ("at_depth", "at_depth"), ("outlet", "outlet"),
    # seed-000 names
    ("before_character", "before"), ("after_character", "after"), ("before_examples", "before_example_messages"),
    ("after_examples", "after_example_messages"), ("author_note_top", "before_author_note"),
    ("author_note_bottom", "after_author_note"),
    # SillyTavern's numbers (world_info_position)
    (0, "before"), (1, "after"), (2, "before_author_note"), (3, "after_author_note"), (4, "at_depth"),
    (5, "before_example_messages"), (6, "after_example_messages"), (7, "outlet"),
    # SillyTavern's key names, the card book's names, numbers as strings
    ("ANTop", "before_author_note"), ("ANBottom", "after_author_note"), ("atDepth", "at_depth"),
    ("EMTop", "before_example_messages"), ("EMBottom", "after_example_messages"),
    ("before_char", "before"), ("after_char", "after"), ("4", "at_depth"),
]


@pytest.mark.parametrize(("spelling", "canonical"), POSITION_SPELLINGS)
def test_position_spellings(spelling, canonical):
    assert world_position(spelling) == canonical
    entry = import_worldbook({"entries": [{"uid": 1, "position": spelling}]}).entries[0]
    assert entry.position == canonical
    native = import_worldbook({"entries": {"1": {"uid": 1, "position": spelling}}}).entries[0]
    assert native.position == canonical


def test_canonical_positions_map_onto_the_placement_primitive():
    assert PLACEMENT_POSITION_BY_WORLD_POSITION == {
        "before": "before_character", "after": "after_character", "before_example_messages": "before_examples",
        "after_example_messages": "after_examples", "before_author_note": "author_note_top",
        "after_author_note": "author_note_bottom", "at_depth": "at_depth", "outlet": "outlet"}


@pytest.mark.parametrize(("role", "expected"), [(0, "system"), (1, "user"), (2, "assistant"), (None, "system"),
                                                ("user", "user"), ("assistant", "assistant")])
def test_entry_role_numbers(role, expected):
    assert import_worldbook({"entries": {"0": {"role": role}}}).entries[0].role == expected


# ---------------------------------------------------------------------------------------------- resources


def test_normalize_resources_simplified_request_shape():
    resources = normalize_resources({
        "preset": {"prompts": [{"identifier": "main", "name": "Main", "role": "system", "content": "Hi {{char}}"}]},
        "character": {"name": "Seraphina", "description": "desc", "personality": "kind", "scenario": "glade",
                      "mes_example": "<START>", "system_prompt": "sys", "post_history_instructions": "phi",
                      "first_mes": "hello", "depth_prompt": {"prompt": "note", "depth": 4, "role": "system"}},
        "persona": {"name": "User", "description": "A traveller."},
        "worldbook": {"entries": [{"uid": "w1", "comment": "lore", "content": "LORE", "position": "at_depth",
                                   "depth": 1, "role": "user", "order": 5, "enabled": True, "constant": True}]},
        "author_note": {"content": "Be brief.", "position": "in_chat", "depth": 4, "role": "system"},
        "extension_prompts": [{"key": "1_memory", "content": "Summary", "position": "after_main", "depth": 0,
                               "role": "system"}],
    })
    assert resources.preset.prompts == (Prompt(identifier="main", name="Main", role="system", content="Hi {{char}}"),)
    assert resources.character.post_history_instructions == "phi"
    assert resources.character.depth_prompt == DepthPrompt(prompt="note", depth=4, role="system")
    assert resources.persona == Persona(name="User", description="A traveller.")
    assert resources.worldbook.entries == (WorldBookEntry(uid="w1", comment="lore", content="LORE",
                                                          position="at_depth", depth=1, role="user", order=5,
                                                          constant=True),)
    assert resources.author_note == AuthorNote(content="Be brief.")
    assert resources.extension_prompts == (ExtensionPrompt(key="1_memory", content="Summary", position="after_main"),)


def test_normalize_resources_accepts_sillytavern_files_as_they_are(st):
    resources = normalize_resources({
        "preset": load(st, "st_cc_preset_Default.json"),
        "character": load(st, "st_card_Seraphina.v3.ccv3.json"),
        "worldbook": load(st, "st_worldinfo_Eldoria.json"),
    })
    assert len(resources.preset.prompts) == 12
    assert resources.character.name == "Seraphina"
    assert len(resources.worldbook.entries) == 4
    # A card's character_book is a world book too.
    embedded = load(st, "st_card_Seraphina.v2.chara.json")["data"]["character_book"]
    assert len(normalize_resources({"worldbook": embedded}).worldbook.entries) == 4
    assert normalize_resources({}) == Resources()


def test_normalize_resources_keeps_models_and_camel_case_keys():
    note = AuthorNote(content="n")
    resources = normalize_resources({"authorNote": note, "extensionPrompts": [{"key": "k", "value": "v"}],
                                     "worldBook": {"entries": {}}})
    assert resources.author_note is note
    assert resources.extension_prompts == (ExtensionPrompt(key="k", content="v"),)
    assert resources.worldbook == WorldBook()


@pytest.mark.parametrize(("number", "expected"), [(0, "in_prompt"), (1, "after_char"), (2, "top_an"),
                                                  (3, "bottom_an"), (4, "at_depth"), (9, "none")])
def test_persona_positions(number, expected):
    persona = normalize_resources({"persona": {"description": "d", "position": number}}).persona
    assert persona.position == expected


def test_persona_from_sillytavern_power_user_keys():
    persona = normalize_resources({"persona": {"persona_description": "tall", "persona_description_position": 4,
                                               "persona_description_depth": 1, "persona_description_role": 2}}).persona
    assert persona == Persona(description="tall", position="at_depth", depth=1, role="assistant")


@pytest.mark.parametrize(("number", "expected"), [(0, "after_main"), (1, "in_chat"), (2, "before_main")])
def test_author_note_positions(number, expected):
    note = normalize_resources({"author_note": {"note_prompt": "x", "note_position": number, "note_depth": 2,
                                                "note_role": 1, "note_interval": 3}}).author_note
    assert note == AuthorNote(content="x", position=expected, depth=2, role="user", interval=3)


def test_extension_prompts_sillytavern_map():
    prompts = normalize_resources({"extension_prompts": {
        "1_memory": {"value": "sum", "position": 0, "depth": 2, "scan": True, "role": 0},
        "3_vectors": {"value": "vec", "position": 2, "depth": 0, "role": 0},
        "customWIOutlet_maps": {"value": "m", "position": -1, "depth": 0},
    }}).extension_prompts
    assert [(p.key, p.position, p.content) for p in prompts] == [
        ("1_memory", "after_main", "sum"), ("3_vectors", "before_main", "vec"), ("customWIOutlet_maps", "none", "m")]
    assert prompts[0].scan is True and prompts[0].depth == 2


# ---------------------------------------------------------------------------------------------- round trips


def test_round_trips_of_every_file(st):
    for name in ("st_cc_preset_Default.json", "st_cc_preset_Default.v1.12.6.json"):
        preset = import_preset(load(st, name))
        assert import_preset(export_preset(preset)) == preset
    oai = import_settings(load(st, "st_default_settings.json")).preset
    assert import_preset(export_preset(oai)) == oai
    for name in ("st_card_Seraphina.v2.chara.json", "st_card_Seraphina.v3.ccv3.json"):
        card = import_character(load(st, name))
        assert import_character(export_character(card)) == card
    book = import_worldbook(load(st, "st_worldinfo_Eldoria.json"))
    assert import_worldbook(export_worldbook(book)) == book
    custom = import_preset(load(OWN_FIXTURES, "st_preset_custom.json"))
    assert import_preset(export_preset(custom)) == custom
    lyra = import_character(load(OWN_FIXTURES, "card_v3_lyra.json"))
    assert import_character(export_character(lyra)) == lyra
    positions = import_worldbook(load(OWN_FIXTURES, "st_worldbook_positions.json"))
    assert import_worldbook(export_worldbook(positions)) == positions
    assert import_worldbook(export_character_book(positions)) == positions


def test_exports_speak_sillytavern(st):
    original = load(st, "st_worldinfo_Eldoria.json")
    exported = export_worldbook(import_worldbook(original))
    entry, source = exported["entries"]["1"], original["entries"]["1"]
    for key in ("uid", "key", "keysecondary", "comment", "content", "order", "position", "disable", "depth",
                "probability", "useProbability", "addMemo", "displayIndex", "scanDepth", "caseSensitive"):
        assert entry[key] == source[key], key
    assert entry["role"] == 0  # null and 0 both mean system
    card = export_character(import_character(load(OWN_FIXTURES, "card_v3_lyra.json")))
    assert (card["spec"], card["spec_version"]) == ("chara_card_v3", "3.0")  # a V3 card stays V3
    assert card["data"]["extensions"]["depth_prompt"] == {"prompt": "Lyra never lies about distances.", "depth": 2,
                                                          "role": "user"}
    compass = card["data"]["character_book"]["entries"][0]
    assert (compass["id"], compass["keys"], compass["insertion_order"], compass["position"]) == (
        5, ["compass"], 20, "after_char")
    assert (compass["extensions"]["position"], compass["extensions"]["depth"], compass["extensions"]["role"]) == (
        4, 1, 2)
    preset = export_preset(import_preset(load(st, "st_cc_preset_Default.json")))
    assert preset["prompt_order"][-1]["character_id"] == 100001
    assert [e["identifier"] for e in preset["prompt_order"][-1]["order"]] == [i for i, _ in DEFAULT_100001]
    assert preset["temperature"] == 1 and preset["new_example_chat_prompt"] == "[Example Chat]"


def test_png_card_round_trips_through_export():
    lyra = import_character(load(OWN_FIXTURES, "card_v3_lyra.json"))
    png = make_png(card_text("chara", export_character(lyra)))
    assert import_character(png) == lyra


# ---------------------------------------------------------------------------------------------- bad input


def tiny_png_without_card() -> bytes:
    return make_png(png_chunk(b"tEXt", b"Software\x00paint"))


def bad_crc_png() -> bytes:
    good = make_png(card_text("chara", v2_card("A")))
    index = good.index(b"tEXt") + 6  # a byte inside the tEXt chunk's data
    return good[:index] + bytes([good[index] ^ 0xFF]) + good[index + 1:]


BAD_INPUT = [
    # (importer, input, path, status, words the message must contain)
    (import_preset, {"prompts": [{"identifier": "a", "role": "narrator"}]}, "prompts[0].role", 400, "role"),
    (import_preset, {"prompts": "main"}, "prompts", 400, "list of prompts"),
    (import_preset, {"temperature": 1}, "prompts", 400, "list of prompts"),
    (import_preset, {"prompts": [{"name": "no id"}]}, "prompts[0].identifier", 400, "string"),
    (import_preset, {"prompts": [{"identifier": "a", "injection_depth": "4"}]}, "prompts[0].injection_depth", 400,
     "integer"),
    (import_preset, {"prompts": [{"identifier": "a", "injection_depth": True}]}, "prompts[0].injection_depth", 400,
     "integer"),
    (import_preset, {"prompts": [{"identifier": "a", "injection_position": 2}]}, "prompts[0].injection_position",
     400, "in-chat"),
    (import_preset, {"prompts": [{"identifier": "a", "injection_trigger": ["sometimes"]}]},
     "prompts[0].injection_trigger[0]", 400, "generation type"),
    (import_preset, {"prompts": [{"identifier": "a", "injection_depth": 2, "injectionDepth": 3}]},
     "prompts[0].injectionDepth", 400, "both"),
    (import_preset, {"prompts": [{"identifier": "a", "enabled": "yes"}]}, "prompts[0].enabled", 400, "true or false"),
    (import_preset, {"prompts": [], "names_behavior": 5}, "names_behavior", 400, "integer from -1 to 2"),
    (import_preset, {"prompts": [{"identifier": "main"}], "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": "main", "enabled": True}, {"identifier": "ghost", "enabled": True}]}]},
     "prompt_order[0].order[1].identifier", 400, "defined in `prompts`"),
    (import_preset, {"prompts": [], "prompt_order": [{"character_id": 100001, "order": [{"identifier": "main"}]}]},
     "prompt_order[0].order[0].enabled", 400, "true or false"),
    (import_preset, {"prompts": [], "prompt_order": {"100001": []}}, "prompt_order", 400, "list"),
    (import_worldbook, {"entries": {"12": {"position": 9}}}, "entries.12.position", 400, "world book position"),
    (import_worldbook, {"entries": {"3": {"key": "dragon"}}}, "entries.3.key", 400, "list of strings"),
    (import_worldbook, {"entries": {"3": {"key": ["ok", 7]}}}, "entries.3.key[1]", 400, "string"),
    (import_worldbook, {}, "entries", 400, "entries"),
    (import_worldbook, {"entries": "none"}, "entries", 400, "entries"),
    (import_worldbook, {"entries": [{"keys": ["a"], "extensions": {"position": "sideways"}}]},
     "entries[0].extensions.position", 400, "world book position"),
    (import_worldbook, {"entries": {"0": {"uid": 1}, "1": {}}}, "entries.1.uid", 400, "one entry"),
    (import_worldbook, {"entries": [{"enabled": True, "disable": True}]}, "entries[0].disable", 400, "opposite"),
    (import_worldbook, {"entries": {"0": {"probability": 150}}}, "entries.0.probability", 400, "0 to 100"),
    (import_worldbook, {"entries": {"0": {"depth": -1}}}, "entries.0.depth", 400, ">= 0"),
    (import_worldbook, {"entries": {"0": {"role": "narrator"}}}, "entries.0.role", 400, "role"),
    (import_worldbook, {"entries": {"0": {"selectiveLogic": 4}}}, "entries.0.selectiveLogic", 400, "selective"),
    (import_worldbook, {"entries": {}, "activation": "sometimes"}, "activation", 400, "'all' or 'keywords'"),
    (import_worldbook, {"entries": {}, "world_info_depth": 5000}, "world_info_depth", 400, "integer from 0 to 1000"),
    (import_character, {"spec": "chara_card_v9", "data": {"name": "A"}}, "spec", 400, "chara_card_v2"),
    (import_character, {"spec": "chara_card_v2", "data": {"name": 5}}, "data.name", 400, "string"),
    (import_character, {"spec": "chara_card_v2"}, "data", 400, "data object"),
    (import_character, {"description": "no name"}, "name", 400, "required"),
    (import_character, v2_card("A", tags="x"), "data.tags", 400, "list of strings"),
    (import_character, v2_card("A", extensions={"depth_prompt": {"prompt": "x", "depth": -1}}),
     "data.extensions.depth_prompt.depth", 400, ">= 0"),
    (import_character, v2_card("A", extensions={"depth_prompt": {"prompt": "x", "when": 1}}),
     "data.extensions.depth_prompt.when", 400, "prompt, depth, role"),
    (import_character, v2_card("A", extensions={"talkativeness": "loud"}), "data.extensions.talkativeness", 400,
     "talkativeness"),
    (import_character, v2_card("A", character_book={"entries": {"0": {"position": "x"}}}),
     "data.character_book.entries.0.position", 400, "world book position"),
    (import_character, "a string", "", 400, "character card"),
    (import_character, b"GIF89a\x01\x00\x01\x00", "", 415, "PNG"),
    (import_character, tiny_png_without_card(), "png", 415, "'chara' or 'ccv3'"),
    (import_character, PNG_SIGNATURE + b"\x00" * (MAX_IMPORT_BYTES + 1), "", 413, "5 MiB"),
    (import_character, bad_crc_png(), "png.chunks[1]", 400, "CRC"),
    (import_character, make_png()[:-6], "png.chunks[2]", 400, "truncated"),  # IHDR, IDAT, cut IEND
    (import_character, make_png(png_chunk(b"tEXt", b"chara\x00not base64!")), "png[chara]", 400, "base64"),
    (import_character, make_png(png_chunk(b"tEXt", b"ccv3\x00" + base64.b64encode(b"{not json"))), "png[ccv3]",
     400, "JSON"),
    (import_character, make_png(card_text("ccv3", v2_card(5))), "png[ccv3].data.name", 400, "string"),
    (import_character, make_png(png_chunk(b"zTXt", b"chara\x00\x00not zlib")), "png[chara]", 400, "zlib"),
    (normalize_resources, [], "", 400, "resources object"),
    (normalize_resources, {"presets": {}}, "presets", 400, "preset"),
    (normalize_resources, {"persona": {"name": "U", "colour": "red"}}, "persona.colour", 400, "description"),
    (normalize_resources, {"preset": {"prompts": [{"identifier": "x", "role": 1.5}]}}, "preset.prompts[0].role", 400,
     "role"),
    (normalize_resources, {"author_note": {"position": "sideways"}}, "author_note.position", 400, "in_chat"),
    (normalize_resources, {"extension_prompts": [{"key": "a"}, {"key": "a"}]}, "extension_prompts[1].key", 400,
     "once"),
    (normalize_resources, {"extension_prompts": {"a": {"key": "b"}}}, "extension_prompts.a.key", 400, "listed under"),
    (normalize_resources, {"worldbook": {"entries": [{"uid": True}]}}, "worldbook.entries[0].uid", 400, "entry id"),
]


@pytest.mark.parametrize(("importer", "data", "path", "status", "words"), BAD_INPUT,
                         ids=[f"{case[0].__name__}:{case[2] or 'root'}:{i}" for i, case in enumerate(BAD_INPUT)])
def test_bad_input(importer, data, path, status, words):
    with pytest.raises(ImportInvalid) as caught:
        importer(data)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.code == "IMPORT_INVALID"
    assert (error.path, error.status) == (path, status)
    assert words in error.message
    assert str(error).startswith(f"{path}:" if path else "the input:")
    assert error.to_json()["detail"]["path"] == path


def test_importers_never_mutate_their_input(st):
    inputs = [
        (import_preset, load(st, "st_cc_preset_Default.json")),
        (import_preset, load(OWN_FIXTURES, "st_preset_custom.json")),
        (import_character, load(OWN_FIXTURES, "card_v3_lyra.json")),
        (import_worldbook, load(OWN_FIXTURES, "st_worldbook_positions.json")),
        (import_settings, load(st, "st_default_settings.json")),
    ]
    for importer, data in inputs:
        before = copy.deepcopy(data)
        result = importer(data)
        assert data == before
        # Kept fields are copies, not shared with the input.
        if isinstance(result, Preset):
            result.other_fields.clear()
            assert data == before
        if isinstance(result, Character):
            result.other_fields["assets"].append("x")
            assert data == before


def test_models_are_frozen():
    prompt = Prompt(identifier="a")
    with pytest.raises(ValueError):
        prompt.content = "changed"  # type: ignore[misc]
    preset = Preset(prompts=(prompt,), prompt_order=(PromptOrderEntry(identifier="a", enabled=False),))
    assert preset.ordered_prompts()[0].enabled is False and preset.prompts[0].enabled is True
    with pytest.raises(ValueError, match="prompt_order"):
        Preset(prompts=(prompt,), prompt_order=(PromptOrderEntry(identifier="b", enabled=True),))
    assert isinstance(Character(name="x").talkativeness, float)


def test_ordered_prompts_are_computed_once_and_follow_a_copy_with_new_prompts():
    prompt = Prompt(identifier="a")
    preset = Preset(prompts=(prompt,), prompt_order=(PromptOrderEntry(identifier="a", enabled=False),))
    assert preset.ordered_prompts() is preset.ordered_prompts()  # one request asks many times
    assert preset == Preset(prompts=(prompt,), prompt_order=(PromptOrderEntry(identifier="a", enabled=False),))
    changed = preset.model_copy(update={"prompt_order": (PromptOrderEntry(identifier="a", enabled=True),)})
    assert changed.ordered_prompts()[0].enabled is True and preset.ordered_prompts()[0].enabled is False


def test_a_card_keeps_its_top_level_keys_and_rewrites_its_mirrors_from_the_data():
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "name": "stale", "create_date": "2024-5-1 @12h",
            "avatar": "ada.png", "chat": "Ada - 2024-5-1", "fav": False,
            "data": {"name": "Ada", "description": "A lighthouse keeper.", "first_mes": "Hello."}}
    exported = export_character(import_character(card))
    assert {k: exported[k] for k in ("create_date", "avatar", "chat", "fav")} == {
        "create_date": "2024-5-1 @12h", "avatar": "ada.png", "chat": "Ada - 2024-5-1", "fav": False}
    assert (exported["name"], exported["description"]) == ("Ada", "A lighthouse keeper.")
    assert import_character(exported) == import_character(card)
