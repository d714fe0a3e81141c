"""SillyTavern chat-completion parity steps (assembly/sillytavern/steps.py, examples.py, budget.py; sillytavern.md §3-§8, §11; engine.md §5).

Expected values come from sillytavern.md: the verified worked examples of §5 are copied as tables, the §11 quirks
become one test each, and the other cases are worked out by hand from the algorithms of §3-§8. Token expectations
use the per-message rule of §6 (role + content + 3, name + 1) with counts checked first in `test_token_facts`.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembly.sillytavern.budget import MANDATORY_OVERFLOW_MESSAGE, StBudgetGroup, st_budget, st_message_tokens
from assembly.sillytavern.examples import (
    ExampleWorldInfo,
    new_chat_message,
    parse_dialogue_examples,
    split_example_blocks,
)
from assembly.sillytavern.messages import StInjection, StMessage, StParityError
from assembly.sillytavern.models import AuthorNote, ExtensionPrompt, Persona
from assembly.sillytavern.notes import parse_persona
from assembly.sillytavern.preset import import_preset
from assembly.sillytavern.steps import (
    NAMES_BEHAVIOR,
    apply_names_behavior,
    attach_to_in_chat_main,
    author_note_due,
    author_note_placement,
    bias_message,
    completion_name,
    control_prompts,
    extension_prompt_placement,
    inject_in_chat,
    main_slot_messages,
    persona_placement,
    squash_system_messages,
    take_continue_nudge,
    take_continue_prefill,
)
from assembly.tokens import count_tokens
from tests.engine.sillytavern.factories import attachment, compose, ext, make_chat, message, pm, sent

USER, CHAR = "Alex", "Seraphina"
NEW_CHAT = "[Start a new Chat]"
EXAMPLE_CHAT = "[Example Chat]"
NUDGE = "[Continue your last message without repeating its original content.]"


def pairs(messages) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def big_budget(history, **kwargs):
    """Everything fits: the budget then only lays out the history slot (new chat separator on top)."""
    return st_budget(max_context=100_000, max_tokens=0, history=history, new_chat=new_chat_message(NEW_CHAT),
                     **kwargs)


# ------------------------------------------------------------------------------------------ §5 worked examples

FIVE = "uauau"  # M1 user, M2 asst, M3 user, M4 asst, M5 user

DEPTH_EXAMPLES = [
    pytest.param(
        FIVE,
        [pm("D0", "user", 0), pm("D1", "system", 1), pm("D2", "assistant", 2), pm("D10", "system", 10)],
        [("system", NEW_CHAT), ("system", "D10"), ("user", "M1"), ("assistant", "M2"), ("user", "M3"),
         ("assistant", "D2"), ("assistant", "M4"), ("system", "D1"), ("user", "M5"), ("user", "D0")],
        id="five-messages-D0-D1-D2-D10",
    ),
    pytest.param(
        FIVE,
        [pm("pm50sys", "system", 1, 50), pm("pm100sys", "system", 1), pm("pm100user", "user", 1),
         pm("pm100asst", "assistant", 1), pm("pm200sys", "system", 1, 200),
         # extension prompts given in scrambled order: the bucket sorts them by key
         ext("character_note", "DEPTH_PROMPT", "system", 1, "CHARNOTE"),
         ext("world_info", "customDepthWI_1_1", "user", 1, "WI@1(user)"),
         ext("author_note", "2_floating_prompt", "system", 1, "AN")],
        [("system", NEW_CHAT), ("user", "M1"), ("assistant", "M2"), ("user", "M3"), ("assistant", "M4"),
         ("system", "pm50sys"), ("assistant", "pm100asst"), ("user", "pm100user\nWI@1(user)"),
         ("system", "pm100sys\nAN\nCHARNOTE"), ("system", "pm200sys"), ("user", "M5")],
        id="same-depth-mixed-buckets",
    ),
    pytest.param("", [pm("D0", "system", 0), pm("D3", "system", 3)],
                 [("system", NEW_CHAT), ("system", "D3"), ("system", "D0")], id="empty-chat-D0-D3"),
]


@pytest.mark.parametrize(("chat_spec", "injections", "expected"), DEPTH_EXAMPLES)
def test_section5_depth_placement(chat_spec, injections, expected):
    history = inject_in_chat(make_chat(chat_spec), injections)
    assert pairs(big_budget(history).history) == expected


def test_section5_mixed_bucket_message_lists_what_it_holds():
    history = inject_in_chat(make_chat(FIVE), DEPTH_EXAMPLES[1].values[1])
    merged = next(m for m in history if m.content.startswith("pm100sys"))
    assert merged.sources == ("pm100sys", "author_note", "character_note")
    assert (merged.kind, merged.depth, merged.order, merged.name) == ("injection", 1, 100, None)
    user_bucket = next(m for m in history if m.content.startswith("pm100user"))
    assert user_bucket.sources == ("pm100user", "world_info")


def continue_request(chat_spec: str, note_depth: int, *, prefill: bool):
    """The continue example of §5 through the pipeline: chat, AN in-chat, PHI, continue."""
    chat = make_chat(chat_spec)
    prefill_message = None
    if prefill:
        chat, prefill_message = take_continue_prefill(chat)
    note = author_note_placement(AuthorNote(content="AN@0", depth=note_depth), chat=chat)
    history = inject_in_chat(chat, [note.injection])
    continue_messages = []
    if not prefill:
        history, continue_messages = take_continue_nudge(history, continue_nudge_prompt=NUDGE)
    mandatory = [StBudgetGroup(id="jailbreak", messages=(StMessage(id="jailbreak", role="system", content="PHI",
                                                                   kind="prompt"),))]
    if prefill_message is not None:
        mandatory.append(StBudgetGroup(id="continuePrefill", messages=(prefill_message,), reserve=True))
    budget = big_budget(history, mandatory=mandatory, continue_messages=continue_messages)
    return compose(["chatHistory", "jailbreak"], budget)


def test_section5_continue_without_prefill():
    out = continue_request("uauaua", 0, prefill=False)
    assert pairs(out) == [
        ("system", NEW_CHAT), ("user", "M1"), ("assistant", "M2"), ("user", "M3"), ("assistant", "M4"),
        ("user", "M5"), ("system", "AN@0"), ("system", "PHI"), ("assistant", "M6"), ("system", NUDGE)]
    assert [m.kind for m in out[-2:]] == ["continue_message", "continue_nudge"]


def test_section5_continue_with_prefill():
    out = continue_request("uauaua", 0, prefill=True)
    assert pairs(out) == [
        ("system", NEW_CHAT), ("user", "M1"), ("assistant", "M2"), ("user", "M3"), ("assistant", "M4"),
        ("user", "M5"), ("system", "AN@0"), ("system", "PHI"), ("assistant", "M6")]
    assert out[-1].kind == "continue_prefill"


def test_continue_depth_counts_the_continued_message_only_without_prefill():
    # Hand-worked from §4.2 step 9 / §4.6: AN at depth 1 sits before M6 when M6 is still in the chat (no prefill,
    # then M6 moves to the end), but before M5 when M6 left the chat before injection (prefill).
    without = [m.content for m in continue_request("uauaua", 1, prefill=False)]
    with_prefill = [m.content for m in continue_request("uauaua", 1, prefill=True)]
    assert without[4:8] == ["M4", "M5", "AN@0", "PHI"]
    assert with_prefill[4:8] == ["M4", "AN@0", "M5", "PHI"]


def test_section5_author_note_defaults_land_between_m1_and_m2():
    chat = make_chat(FIVE)
    note = author_note_placement(AuthorNote(content="Stay in character."), chat=chat)
    assert (note.injection.depth, note.injection.role, note.injection.order) == (4, "system", 100)
    assert [m.content for m in inject_in_chat(chat, [note.injection])] == [
        "M1", "Stay in character.", "M2", "M3", "M4", "M5"]


def test_section43_default_preset_baseline_order(shared_fixtures):
    """§4.3: main, WI-before, persona, description, personality, scenario, AUX, WI-after, [Example Chat], examples,
    [Start a new Chat], history (with AN), PHI -- driven by the shipped Default preset's order and utility prompts."""
    data = json.loads((shared_fixtures / "sillytavern" / "st_cc_preset_Default.json").read_text(encoding="utf-8"))
    preset = import_preset(data)
    assert preset.has_utility_prompts
    texts = {"main": "MAIN", "worldInfoBefore": "WIB", "personaDescription": "PERSONA", "charDescription": "DESC",
             "charPersonality": "PERS", "scenario": "SCEN", "nsfw": "AUX", "worldInfoAfter": "WIA",
             "jailbreak": "PHI", "enhanceDefinitions": "ENHANCE"}
    collection = [p for p in preset.ordered_prompts() if p.enabled and not p.injection_trigger]
    ids = [p.identifier for p in collection]
    chat = make_chat(FIVE)
    note = author_note_placement(AuthorNote(content="AN"), chat=chat)
    history = inject_in_chat(chat, [note.injection])
    examples = parse_dialogue_examples("<START>\nAlex: hi\nSeraphina: hello", user_name=USER, char_name=CHAR,
                                       new_example_chat_prompt=preset.new_example_chat_prompt)
    processing = ["worldInfoBefore", "main", "worldInfoAfter", "charDescription", "charPersonality", "scenario",
                  "personaDescription", "nsfw", "jailbreak", "enhanceDefinitions"]
    mandatory = [StBudgetGroup(id=i, messages=(StMessage(id=i, role="system", content=texts[i], kind="prompt"),))
                 for i in processing if i in ids]
    budget = st_budget(max_context=preset.openai_max_context, max_tokens=preset.openai_max_tokens,
                       mandatory=mandatory, history=history, new_chat=new_chat_message(preset.new_chat_prompt),
                       examples=examples)
    assert [m.content for m in sent(compose(ids, budget))] == [
        "MAIN", "WIB", "PERSONA", "DESC", "PERS", "SCEN", "AUX", "WIA", "[Example Chat]", "hi", "hello",
        "[Start a new Chat]", "M1", "AN", "M2", "M3", "M4", "M5", "PHI"]
    assert "enhanceDefinitions" not in ids  # disabled in Default's order for 100001
    assert budget.failure is None and budget.dropped == ()


# ------------------------------------------------------------------------------------------ §11 quirks


def test_quirk01_role_order_within_a_bucket_is_assistant_user_system():
    history = inject_in_chat(make_chat("u"), [pm("S", "system", 0), pm("U", "user", 0), pm("A", "assistant", 0)])
    assert pairs(history) == [("user", "M1"), ("assistant", "A"), ("user", "U"), ("system", "S")]


def test_quirk05_depth_counts_original_messages_only():
    # Three injections at depths 1 and 2 on three messages: the depth-1 one is not pushed by the depth-2 one.
    history = inject_in_chat(make_chat("uau"), [pm("D2", "system", 2), pm("D1", "system", 1)])
    assert [m.content for m in history] == ["M1", "D2", "M2", "D1", "M3"]


def test_quirk06_depth_is_injected_up_to_10000_only():
    injections = [pm("deepest", "system", 10000), pm("too_deep", "system", 10001), pm("negative", "system", -1)]
    assert [m.content for m in inject_in_chat(make_chat("u"), injections)] == ["deepest", "M1"]


def test_quirk07_world_info_group_without_depth_is_never_injected():
    group = ext("wi1", "customDepthWI_undefined_0", "system", None, "lore")
    assert [m.content for m in inject_in_chat(make_chat("ua"), [group])] == ["M1", "M2"]


def test_quirk08_disabled_main_still_anchors_its_attachments():
    empty_main = StMessage(id="main", role="system", content="", kind="prompt")
    note = author_note_placement(AuthorNote(content="AN", position="before_main"), chat=make_chat("u"))
    assert pairs(sent(main_slot_messages(empty_main, [note.attachment]))) == [("system", "AN")]


def test_quirk09_no_history_slot_drops_chat_and_injections():
    history = inject_in_chat(make_chat("ua"), [pm("D0", "system", 0)])
    budget = st_budget(max_context=1000, max_tokens=0, history=history, new_chat=new_chat_message(NEW_CHAT),
                       has_history_slot=False)
    assert budget.history == ()
    assert {(d.id, d.reason) for d in budget.dropped} == {
        ("m1", "no_history_slot"), ("m2", "no_history_slot"), ("injection@0/100/system", "no_history_slot"),
        ("newMainChat", "no_history_slot")}


def test_quirk09_no_examples_slot_drops_examples():
    blocks = parse_dialogue_examples("Alex: hi", user_name=USER, char_name=CHAR,
                                     new_example_chat_prompt=EXAMPLE_CHAT)
    budget = st_budget(max_context=1000, max_tokens=0, examples=blocks, has_examples_slot=False)
    assert budget.examples == ()
    assert [(d.id, d.reason, d.message_ids) for d in budget.dropped] == [
        ("example block 0", "no_examples_slot", ("newChat 0", "dialogueExamples 0-0"))]


def test_quirk10_empty_prompts_produce_no_message():
    history = inject_in_chat(make_chat("u"), [pm("", "system", 0, source="empty")])
    assert [m.content for m in history] == ["M1"]


def test_quirk11_new_chat_separator_sits_above_every_injection():
    history = inject_in_chat(make_chat("u"), [pm("deep", "user", 50)])
    assert [m.content for m in big_budget(history).history] == [NEW_CHAT, "deep", "M1"]


def test_quirk12_mandatory_overflow_keeps_the_partial_prompt_in_processing_order():
    # Budget 12 - 3 priming = 9: worldInfoBefore (5) fits, main (5) does not; main comes first in output order.
    def group(identifier):
        return StBudgetGroup(id=identifier, messages=(StMessage(id=identifier, role="system", content="x",
                                                                kind="prompt"),))

    budget = st_budget(max_context=12, max_tokens=0,
                       mandatory=[group("worldInfoBefore"), group("main"), group("worldInfoAfter")],
                       history=make_chat("u"), new_chat=new_chat_message(NEW_CHAT))
    assert budget.failure is not None
    assert (budget.failure.message, budget.failure.item, budget.failure.needed, budget.failure.available) == (
        MANDATORY_OVERFLOW_MESSAGE, "main", 5, 4)
    assert [(d.id, d.reason) for d in budget.dropped] == [
        ("main", "mandatory_overflow"), ("worldInfoAfter", "not_reached"), ("m1", "not_reached"),
        ("newMainChat", "not_reached")]
    out = compose(["main", "worldInfoBefore", "worldInfoAfter", "chatHistory"], budget)
    assert [m.id for m in out] == ["worldInfoBefore"]
    assert budget.failure.code == "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT"


def test_quirk13_pinned_examples_can_starve_the_history():
    # Worked out below in test_budget_examples_pinned: only the separator remains of the history.
    budget = budget_case(max_context=45, pin_examples=True)
    assert [m.id for m in budget.history] == ["newMainChat"]


def test_quirk15_send_if_empty_only_after_an_assistant_message():
    after_assistant = big_budget(make_chat("ua"), send_if_empty="Go on.")
    after_user = big_budget(make_chat("uau"), send_if_empty="Go on.")
    assert pairs(after_assistant.history)[-1] == ("user", "Go on.")
    assert after_assistant.history[-1].id == "emptyUserMessageReplacement"
    assert [m.content for m in after_user.history] == [NEW_CHAT, "M1", "M2", "M3"]


def test_quirk16_bias_after_phi_and_control_prompts_last():
    bias = bias_message("Sure,", "normal")
    control = control_prompts("impersonate", impersonation_prompt="[Write as Alex]", quiet_prompt="[quiet]")
    phi = StMessage(id="jailbreak", role="system", content="PHI", kind="prompt")
    main = StMessage(id="main", role="system", content="MAIN", kind="prompt")
    budget = big_budget(make_chat("u"), mandatory=[
        StBudgetGroup(id="main", messages=(main,)), StBudgetGroup(id="controlPrompts", messages=tuple(control),
                                                                  reserve=True),
        StBudgetGroup(id="jailbreak", messages=(phi,)), StBudgetGroup(id="bias", messages=(bias,))])
    out = compose(["main", "chatHistory", "jailbreak", "bias"], budget)
    assert pairs(out) == [("system", "MAIN"), ("system", NEW_CHAT), ("user", "M1"), ("system", "PHI"),
                          ("assistant", "Sure,"), ("system", "[Write as Alex]"), ("system", "[quiet]")]


def test_quirk17_author_note_counts_user_messages_only():
    note = AuthorNote(content="N", interval=2)
    one_user = author_note_placement(note, chat=make_chat("aaua"), world_info_top=[("wi_top", "T")])
    two_users = author_note_placement(note, chat=make_chat("aauau"), world_info_top=[("wi_top", "T")])
    assert (one_user.inserted, one_user.user_messages, one_user.reason) == (False, 1, "interval")
    assert one_user.injection is None and one_user.not_inserted == ("author_note", "wi_top")
    assert (two_users.inserted, two_users.text, two_users.sources) == (True, "T\nN", ("wi_top", "author_note"))


def test_quirk18_author_note_depth_4_means_four_messages_follow():
    note = author_note_placement(AuthorNote(content="AN", depth=4), chat=make_chat("uauaua"))
    contents = [m.content for m in inject_in_chat(make_chat("uauaua"), [note.injection])]
    assert contents[contents.index("AN") + 1:] == ["M3", "M4", "M5", "M6"]


def test_quirk19_extension_prompts_merge_in_javascript_key_order():
    injections = [ext("wi", "customDepthWI_0_0", "system", 0, "WI"), ext("persona", "PERSONA_DESCRIPTION",
                  "system", 0, "PERSONA"), ext("char", "DEPTH_PROMPT", "system", 0, "CHAR"),
                  ext("an", "2_floating_prompt", "system", 0, "AN"), ext("memo", "1_memory", "system", 0, "SUM")]
    (merged,) = [m for m in inject_in_chat(make_chat("u"), injections) if m.kind == "injection"]
    assert merged.content == "SUM\nAN\nCHAR\nPERSONA\nWI"
    assert merged.sources == ("memo", "an", "char", "persona", "wi")


def test_quirk19_key_order_is_utf16_code_units():
    # U+FF21 (fullwidth A) is one UTF-16 unit 0xFF21; U+1F600 is the surrogate pair 0xD83D 0xDE00: JavaScript sorts
    # the emoji key first, Python's code-point order would not.
    injections = [ext("fullwidth", "\uff21", "system", 0, "F"), ext("emoji", "\U0001f600", "system", 0, "E")]
    (merged,) = [m for m in inject_in_chat(make_chat("u"), injections) if m.kind == "injection"]
    assert merged.content == "E\nF"


def test_quirk20_examples_are_named_system_messages():
    (block,) = parse_dialogue_examples("<START>\nAlex: hi\nSeraphina: hello", user_name=USER, char_name=CHAR,
                                       new_example_chat_prompt=EXAMPLE_CHAT)
    assert [(m.role, m.name, m.content) for m in block] == [
        ("system", None, EXAMPLE_CHAT), ("system", "example_user", "hi"), ("system", "example_assistant", "hello")]


def test_quirk03_world_info_example_entries_before_end_up_descending():
    # EM list in ascending order: before A (order 1), before B (order 2), after C (order 1), after D (order 2).
    blocks = parse_dialogue_examples(
        "Alex: card", user_name=USER, char_name=CHAR, new_example_chat_prompt="",
        world_info=[ExampleWorldInfo(source_id="A", content="Alex: a", position="before"),
                    ExampleWorldInfo(source_id="B", content="Alex: b", position="before"),
                    ExampleWorldInfo(source_id="C", content="Alex: c", position="after"),
                    ExampleWorldInfo(source_id="D", content="Alex: d", position="after")])
    assert [(b[0].content, b[0].sources) for b in blocks] == [
        ("b", ("B",)), ("a", ("A",)), ("card", ("mes_example",)), ("c", ("C",)), ("d", ("D",))]


# ------------------------------------------------------------------------------------------ in-chat injection


def test_inject_keeps_chat_messages_and_their_ids():
    history = inject_in_chat(make_chat("ua"), [])
    assert [(m.id, m.kind, m.sources) for m in history] == [("m1", "chat", ("m1",)), ("m2", "chat", ("m2",))]


def test_prompt_manager_texts_are_joined_then_trimmed_as_a_whole():
    # Same bucket: "  A  " and "B" join as "  A  \nB", then one trim: the inner spaces stay. Extension texts are
    # trimmed one by one first.
    injections = [pm("  A  ", "system", 0, source="a"), pm("B", "system", 0),
                  ext("an", "2_floating_prompt", "system", 0, "  N  ")]
    (merged,) = [m for m in inject_in_chat(make_chat("u"), injections) if m.kind == "injection"]
    assert merged.content == "A  \nB\nN"


def test_injection_orders_below_and_above_the_extension_bucket():
    injections = [ext("an", "2_floating_prompt", "user", 0, "AN"), pm("late", "user", 0, 300),
                  pm("early", "user", 0, -5)]
    assert [m.content for m in inject_in_chat(make_chat("u"), injections)][1:] == ["early", "AN", "late"]


def test_several_depths_beyond_the_chat_stack_deepest_first():
    injections = [pm("D2", "system", 2), pm("D7", "system", 7), pm("D3", "system", 3)]
    assert [m.content for m in inject_in_chat(make_chat("uu"), injections)] == ["D7", "D3", "D2", "M1", "M2"]


def test_extension_prompt_placements():
    in_chat = extension_prompt_placement(ExtensionPrompt(key="1_memory", content="S", depth=3, role="user"))
    before = extension_prompt_placement(ExtensionPrompt(key="x", content="V", position="before_main"))
    after = extension_prompt_placement(ExtensionPrompt(key="y", content="W", position="after_main"))
    assert (in_chat.key, in_chat.depth, in_chat.role, in_chat.order) == ("1_memory", 3, "user", 100)
    assert (before.position, after.position) == ("start", "end")
    assert extension_prompt_placement(ExtensionPrompt(key="customWIOutlet_a", content="O", position="none")) is None
    assert extension_prompt_placement(ExtensionPrompt(key="z", content="", position="in_chat")) is None


# ------------------------------------------------------------------------------------------ main attachments


def test_vectors_attachments_are_always_system():
    (message_,) = main_slot_messages(None, [attachment("3_vectors", "end", "V", "assistant")])
    assert (message_.id, message_.role) == ("vectorsMemory", "system")


def test_relative_main_slot_with_attachments():
    # Processing order: 1_memory, 2_floating_prompt (fixed), then others as given. Each start attachment is put at
    # the start of the slot, each end attachment at its end (§4.4).
    main = StMessage(id="main", role="system", content="MAIN", kind="prompt")
    attachments = [attachment("zeta", "end"), attachment("2_floating_prompt", "start", "AN"),
                   attachment("alpha", "end"), attachment("1_memory", "start", "SUM", "user")]
    slot = main_slot_messages(main, attachments)
    assert [(m.id, m.content) for m in slot] == [
        ("authorsNote", "AN"), ("summary", "SUM"), ("main", "MAIN"), ("zeta", "zeta"), ("alpha", "alpha")]
    assert slot[1].role == "user"


def test_in_chat_main_merges_its_attachments():
    # §4.4: main in-chat -> AN before main is merged into main's message as "AN\nMain...".
    main = pm("MAIN", "user", 1, 70, source="main")
    injections = attach_to_in_chat_main([main], [attachment("2_floating_prompt", "start", "AN", "system"),
                                                 attachment("other", "end", "AFTER")])
    history = inject_in_chat(make_chat("ua"), injections)
    assert pairs(history) == [("user", "M1"), ("user", "AN\nMAIN\nAFTER"), ("assistant", "M2")]
    assert history[1].sources == ("2_floating_prompt", "main", "other")


def test_in_chat_empty_main_still_places_attachments():
    main = pm("", "system", 0, source="main")
    injections = attach_to_in_chat_main([main], [attachment("2_floating_prompt", "end", "AN")])
    assert [m.content for m in inject_in_chat(make_chat("u"), injections)] == ["M1", "AN"]


def test_in_chat_main_must_be_present():
    with pytest.raises(StParityError) as error:
        attach_to_in_chat_main([pm("other", "system", 0)], [attachment("x", "start")])
    assert error.value.code == "ST_MAIN_NOT_IN_CHAT"


# ------------------------------------------------------------------------------------------ author's note, persona

AN_INTERVALS = [
    (1, 0, True), (1, 5, True), (0, 3, False), (2, 0, False), (2, 1, False), (2, 2, True), (2, 3, False),
    (2, 4, True), (3, 1, False), (3, 2, False), (3, 3, True), (3, 4, False), (3, 6, True), (5, 10, True),
]


@pytest.mark.parametrize(("interval", "user_messages", "due"), AN_INTERVALS)
def test_author_note_interval(interval, user_messages, due):
    assert author_note_due(interval, user_messages) is due


def test_author_note_disabled_reasons():
    assert author_note_placement(AuthorNote(content="N", interval=0), chat=make_chat("u")).reason == "disabled"
    assert author_note_placement(AuthorNote(content="N", interval=2), chat=make_chat("a")).reason == "disabled"
    always = author_note_placement(AuthorNote(content="N"), chat=[])
    assert (always.inserted, always.injection.content) == (True, "N")


def test_author_note_with_world_info_and_persona():
    note = author_note_placement(
        AuthorNote(content="N", position="in_chat", depth=2, role="user"), chat=make_chat("u"),
        world_info_top=[("wi1", "T1"), ("wi2", "T2")], world_info_bottom=[("wi3", "B1")],
        persona=Persona(description="I am Alex.", position="top_an"))
    assert note.text == "I am Alex.\nT1\nT2\nN\nB1"
    assert note.sources == ("persona", "wi1", "wi2", "author_note", "wi3")
    assert (note.injection.depth, note.injection.role, note.injection.key) == (2, "user", "2_floating_prompt")


def test_author_note_wrap_strips_one_edge_newline_only():
    # "T" + "\n" + "" + "\n" + "" = "T\n\n" -> one trailing newline removed -> "T\n" (trimmed later when in-chat).
    note = author_note_placement(AuthorNote(content=""), chat=make_chat("u"), world_info_top=[("wi", "T")])
    assert (note.text, note.sources) == ("T\n", ("wi", "author_note"))
    assert [m.content for m in inject_in_chat(make_chat("uauau"), [note.injection])][1] == "T"


def test_author_note_bottom_persona_and_empty_note():
    bottom = author_note_placement(AuthorNote(content="N"), chat=make_chat("u"),
                                   persona=Persona(description="P", position="bottom_an"))
    assert bottom.text == "N\nP"
    empty = author_note_placement(AuthorNote(content=""), chat=make_chat("u"))
    assert (empty.inserted, empty.reason, empty.injection, empty.attachment) == (True, "empty", None, None)


def test_author_note_not_due_leaves_out_persona_at_note():
    note = author_note_placement(AuthorNote(content="N", interval=3), chat=make_chat("u"),
                                 world_info_bottom=[("wb", "B")], persona=Persona(description="P", position="bottom_an"))
    assert note.not_inserted == ("author_note", "wb", "persona")


@pytest.mark.parametrize(("position", "expected"), [("before_main", "start"), ("after_main", "end")])
def test_author_note_before_or_after_main(position, expected):
    note = author_note_placement(AuthorNote(content="N", position=position, role="user"), chat=make_chat("u"))
    assert note.injection is None
    assert (note.attachment.position, note.attachment.key, note.attachment.role) == (expected, "2_floating_prompt",
                                                                                      "user")


PERSONA_CASES = [
    (Persona(description="P", position="in_prompt"), "marker", None),
    (Persona(description="P", position="at_depth", depth=3, role="assistant"), "in_chat",
     StInjection(sources=("persona",), content="P", role="assistant", depth=3, key="PERSONA_DESCRIPTION")),
    (Persona(description="P", position="top_an"), "author_note_top", None),
    (Persona(description="P", position="bottom_an"), "author_note_bottom", None),
    (Persona(description="P", position="none"), "none", None),
    (Persona(description="", position="in_prompt"), "none", None),
    (Persona(description="P", position="after_char"), "unsupported", None),
    (parse_persona({"persona_description": "P", "persona_description_position": 4}, "persona"), "in_chat",
     StInjection(sources=("persona",), content="P", role="system", depth=2, key="PERSONA_DESCRIPTION")),
]


@pytest.mark.parametrize(("persona", "where", "injection"), PERSONA_CASES)
def test_persona_placement(persona, where, injection):
    placed = persona_placement(persona)
    assert (placed.where, placed.injection) == (where, injection)


# ------------------------------------------------------------------------------------------ dialogue examples

EXAMPLE_CASES = [
    ("", []),
    ("<START>", []),
    ("  <START>  \n<start>\n", []),
    ("<START>\nAlex: Hi\nSeraphina: Hello\n<START>\nAlex: Bye",
     [[("example_user", "Hi"), ("example_assistant", "Hello")], [("example_user", "Bye")]]),
    ("Alex: Hi\nSeraphina: Hello", [[("example_user", "Hi"), ("example_assistant", "Hello")]]),
    ("<START>\nAlex: a\n<start>\nSeraphina: b", [[("example_user", "a")], [("example_assistant", "b")]]),
    ("<START>\n*waves*\nAlex: hi", [[("example_user", "*waves*\n hi")]]),
    ("<START>\nAlex: a\nAlex: b\nSeraphina: c", [[("example_user", "a\nAlex: b"), ("example_assistant", "c")]]),
    ("<START>\nSeraphina: line1\nline2\n\nAlex: ok", [[("example_assistant", "line1\nline2"), ("example_user",
                                                                                               "ok")]]),
    ("<START>\r\nAlex: hi\r\nSeraphina: yo\r\n", [[("example_user", "hi"), ("example_assistant", "yo")]]),
    ("<START>\nJust narration", [[]]),
    ("<START>\n<START>\nAlex: hi", [[], [("example_user", "hi")]]),
    ("<START>\nSeraphina: I told Alex: no.", [[("example_assistant", "I told Alex: no.")]]),
]


@pytest.mark.parametrize(("text", "expected"), EXAMPLE_CASES)
def test_parse_dialogue_examples(text, expected):
    blocks = parse_dialogue_examples(text, user_name=USER, char_name=CHAR, new_example_chat_prompt=EXAMPLE_CHAT)
    assert [[(m.name, m.content) for m in block[1:]] for block in blocks] == expected
    for b, block in enumerate(blocks):
        assert (block[0].id, block[0].kind, block[0].content) == (f"newChat {b}", "example_header", EXAMPLE_CHAT)
        assert [m.id for m in block[1:]] == [f"dialogueExamples {b}-{j}" for j in range(len(block) - 1)]


def test_split_example_blocks():
    assert split_example_blocks("Alex: hi ") == ["<START>\nAlex: hi\n"]
    assert split_example_blocks("<START>\n a \n<START> b") == ["<START>\na\n", "<START>\nb\n"]


def test_empty_example_header_is_left_out():
    (block,) = parse_dialogue_examples("Alex: hi", user_name=USER, char_name=CHAR, new_example_chat_prompt="")
    assert [(m.kind, m.content) for m in block] == [("example", "hi")]


def test_new_chat_message():
    message = new_chat_message(NEW_CHAT)
    assert (message.id, message.role, message.kind, message.sources) == ("newMainChat", "system", "new_chat",
                                                                          ("new_chat_prompt",))


# ------------------------------------------------------------------------------------------ names and squashing

NAMES_CHAT = [message("u1", "user", "hi\r"), message("a1", "assistant", "yo"), message("s1", "system", "narration"),
              message("a2", "assistant", "hey", speaker="Mary Jane")]

NAMES_CASES = [
    (-1, [("hi", None), ("yo", None), ("narration", None), ("hey", None)]),
    (NAMES_BEHAVIOR["default"], [("hi", None), ("yo", None), ("narration", None), ("hey", None)]),
    (2, [("Alex: hi", None), ("Seraphina: yo", None), ("narration", None), ("Mary Jane: hey", None)]),
    (NAMES_BEHAVIOR["completion"], [("hi", "Alex"), ("yo", "Seraphina"), ("narration", None), ("hey", "Mary_Jane")]),
]


@pytest.mark.parametrize(("mode", "expected"), NAMES_CASES)
def test_apply_names_behavior(mode, expected):
    out = apply_names_behavior(NAMES_CHAT, mode, user_name=USER, char_name=CHAR)
    assert [(m.content, m.name) for m in out] == expected


def test_names_behavior_leaves_other_kinds_alone():
    example = StMessage(id="dialogueExamples 0-0", role="system", content="x", name="example_user", kind="example")
    assert apply_names_behavior([example], 1, user_name=USER, char_name=CHAR) == [example]


def test_names_behavior_keeps_a_message_it_does_not_change():
    known = message("u1", "user", "hi", speaker=USER)
    changed = message("u2", "user", "hi\r", speaker=USER)
    out = apply_names_behavior([known, changed], NAMES_BEHAVIOR["default"], user_name=USER, char_name=CHAR)
    assert out[0] is known  # frozen, nothing to change: the message itself
    assert out[1] is not changed and out[1].content == "hi" and out[1].speaker == USER


def test_completion_name():
    assert completion_name("Seraphina") == "Seraphina"
    assert completion_name("Zoë-2") == "Zo_-2"
    assert completion_name("x" * 70) == "x" * 64


def squash_case():
    def msg(identifier, role, content, kind="prompt", name=None):
        return StMessage(id=identifier, role=role, content=content, kind=kind, name=name, sources=(identifier,))

    return [msg("main", "system", "A"), msg("wib", "system", "B"), msg("nsfw", "system", ""), msg("desc", "system",
            "C"), msg("newChat 0", "system", EXAMPLE_CHAT, "example_header"),
            msg("ex0", "system", "hi", "example", "example_user"), msg("wia", "system", "D"),
            msg("newMainChat", "system", NEW_CHAT, "new_chat"), msg("m1", "user", "u", "chat"),
            msg("inj", "system", "I", "injection"), msg("phi", "system", "P"), msg("m2", "user", "", "chat"),
            msg("bias0", "system", "E")]


def test_squash_system_messages():
    out = squash_system_messages(squash_case())
    assert [(m.id, m.content) for m in out] == [
        ("main", "A\nB\nC"), ("newChat 0", EXAMPLE_CHAT), ("ex0", "hi"), ("wia", "D"), ("newMainChat", NEW_CHAT),
        ("m1", "u"), ("inj", "I\nP"), ("m2", ""), ("bias0", "E")]
    assert out[0].sources == ("main", "wib", "desc")
    assert out[6].sources == ("inj", "phi")


# ------------------------------------------------------------------------------------------ generation types


def test_bias_message():
    assert bias_message("Sure,", "normal").role == "assistant"
    assert bias_message("Sure,", "continue") is None and bias_message("Sure,", "impersonate") is None
    assert bias_message("   ", "normal") is None


def test_control_prompts():
    assert [m.id for m in control_prompts("impersonate", impersonation_prompt="I")] == ["impersonate"]
    assert [m.id for m in control_prompts("quiet", impersonation_prompt="I", quiet_prompt="Q")] == ["quietPrompt"]
    assert control_prompts("normal", impersonation_prompt="I") == []


def test_continue_prefill_with_claude_prefill_and_name():
    chat = apply_names_behavior(make_chat("ua"), NAMES_BEHAVIOR["completion"], user_name=USER, char_name=CHAR)
    rest, message = take_continue_prefill(chat, assistant_prefill="Sure!")
    assert [m.id for m in rest] == ["m1"]
    assert (message.id, message.role, message.content, message.name) == ("continuePrefill", "assistant",
                                                                         "Sure!\n\nM2", "Seraphina")
    assert take_continue_prefill([]) == ([], None)


def test_continue_nudge_fills_last_chat_message_and_skips_injections():
    history = inject_in_chat(make_chat("ua"), [pm("D0", "system", 0)])
    rest, collection = take_continue_nudge(history, continue_nudge_prompt="[Continue: {{lastChatMessage}}]")
    assert [m.content for m in rest] == ["M1", "D0"]
    assert pairs(collection) == [("assistant", "M2"), ("system", "[Continue: M2]")]


# ------------------------------------------------------------------------------------------ budget


def test_token_facts():
    # The hand counts below rest on these o200k_base counts.
    for text, n in [("user", 1), ("system", 1), ("assistant", 1), ("x", 1), ("M1", 2), ("hello world", 2),
                    ("example_user", 2), ("example_assistant", 3), (NEW_CHAT, 6), (EXAMPLE_CHAT, 4), ("Alex", 1)]:
        assert count_tokens(text) == n, text


def test_message_tokens():
    assert st_message_tokens(message("a", "user", "hello world")) == 1 + 2 + 3
    assert st_message_tokens(StMessage(id="a", role="user", content="hello world", name="Alex")) == 6 + 1 + 1
    assert st_message_tokens(StMessage(id="a", role="system", content="")) == 0
    assert st_message_tokens(StMessage(id="a", role="user", content="hello world"), "cl100k_base") == 6


def x_chat(n: int) -> list[StMessage]:
    return [message(f"h{i}", "user" if i % 2 else "assistant", "x") for i in range(1, n + 1)]


def budget_case(*, max_context: int, pin_examples: bool = False, **kwargs):
    """main "x" (5), four history messages "x" (5 each), separator (10), two example blocks of 25
    (header 8 + user "x" 1+1+3+2+1 = 8 + assistant "x" 1+1+3+3+1 = 9)."""
    main = StBudgetGroup(id="main", messages=(StMessage(id="main", role="system", content="x", kind="prompt"),))
    blocks = parse_dialogue_examples("<START>\nAlex: x\nSeraphina: x\n<START>\nAlex: x\nSeraphina: x",
                                     user_name=USER, char_name=CHAR, new_example_chat_prompt=EXAMPLE_CHAT)
    return st_budget(max_context=max_context, max_tokens=0, mandatory=[main], history=x_chat(4),
                     new_chat=new_chat_message(NEW_CHAT), examples=blocks, pin_examples=pin_examples, **kwargs)


def test_budget_history_first_examples_dropped_first():
    # 35 - 3 = 32; main -> 27; separator reserved -> 17; h4 12, h3 7, h2 2; h1 (5) does not fit; separator back
    # -> 2 + 10 - 10 = 2; block 0 (25) does not fit, block 1 after the cut.
    budget = budget_case(max_context=35)
    assert [m.id for m in budget.history] == ["newMainChat", "h2", "h3", "h4"]
    assert budget.examples == ()
    assert [(d.id, d.part, d.reason, d.tokens) for d in budget.dropped] == [
        ("h1", "history", "over_budget", 5), ("example block 0", "examples", "over_budget", 25),
        ("example block 1", "examples", "after_cut", 25)]
    assert (budget.limit, budget.remaining, budget.failure) == (35, 2, None)
    assert budget.tokens["dialogueExamples 0-1"] == 9


def test_budget_examples_get_what_history_leaves():
    # 45 - 3 - 5 = 37; separator reserved -> 27; four messages -> 7; separator -> 7; block 0 (25) does not fit.
    budget = budget_case(max_context=45)
    assert [m.id for m in budget.history] == ["newMainChat", "h1", "h2", "h3", "h4"]
    assert [d.id for d in budget.dropped] == ["example block 0", "example block 1"]
    # 70 - 3 - 5 - 10 - 20 = 32: block 0 fits (-> 7), block 1 does not.
    roomy = budget_case(max_context=70)
    assert [m.content for m in roomy.examples] == [EXAMPLE_CHAT, "x", "x"]
    assert [(d.id, d.reason) for d in roomy.dropped] == [("example block 1", "over_budget")]


def test_budget_examples_pinned():
    # 45 - 3 - 5 = 37; block 0 -> 12; block 1 does not fit; separator reserved -> 2; h4 (5) does not fit; the
    # separator is given back and fits -> 2.
    budget = budget_case(max_context=45, pin_examples=True)
    assert [m.id for m in budget.examples] == ["newChat 0", "dialogueExamples 0-0", "dialogueExamples 0-1"]
    assert [(d.id, d.reason) for d in budget.dropped] == [
        ("example block 1", "over_budget"), ("h4", "over_budget"), ("h3", "after_cut"), ("h2", "after_cut"),
        ("h1", "after_cut")]
    assert budget.failure is None and budget.remaining == 2


def test_budget_pinned_examples_can_push_out_the_separator():
    # 40 - 3 - 5 = 32; block 0 -> 7; separator reserved -> -3; nothing of the history fits; given back -> 7, but the
    # separator needs 10: SillyTavern's "Mandatory prompts exceed the context size."
    budget = budget_case(max_context=40, pin_examples=True)
    assert budget.failure is not None and (budget.failure.item, budget.failure.available) == ("newMainChat", 7)
    assert [m.id for m in budget.history] == []
    assert [m.id for m in budget.examples][:1] == ["newChat 0"]


def test_budget_send_if_empty_is_paid_before_the_history():
    # 35 - 3 - 5 - 10 = 17; the user filler (1 + 1 + 3 = 5) -> 12; h4 7, h3 2; h2 does not fit.
    budget = budget_case(max_context=35, send_if_empty="x")
    assert [m.id for m in budget.history] == ["newMainChat", "h3", "h4", "emptyUserMessageReplacement"]
    assert ("h2", "over_budget") in [(d.id, d.reason) for d in budget.dropped]


def test_budget_reserved_control_prompts_shrink_the_history():
    # impersonate "x" (5) reserved: 35 - 3 - 5 - 5 - 10 = 12; h4 7, h3 2; h2 does not fit; the prompt goes last.
    control = control_prompts("impersonate", impersonation_prompt="x")
    budget = budget_case(max_context=35)
    reserved = st_budget(max_context=35, max_tokens=0, mandatory=[
        StBudgetGroup(id="main", messages=(StMessage(id="main", role="system", content="x", kind="prompt"),)),
        StBudgetGroup(id="controlPrompts", messages=tuple(control), reserve=True)],
        history=x_chat(4), new_chat=new_chat_message(NEW_CHAT))
    assert len(budget.history) == 4 and [m.id for m in reserved.history] == ["newMainChat", "h3", "h4"]
    assert [m.id for m in reserved.tail] == ["impersonate"]
    assert compose(["main", "chatHistory"], reserved)[-1].id == "impersonate"


def test_budget_reservation_that_overdraws_is_a_failure():
    control = control_prompts("impersonate", impersonation_prompt="x")
    budget = st_budget(max_context=6, max_tokens=0, mandatory=[
        StBudgetGroup(id="controlPrompts", messages=tuple(control), reserve=True)])
    assert budget.failure is not None and budget.failure.item == "controlPrompts"
    assert [(d.id, d.reason) for d in budget.dropped] == [("controlPrompts", "mandatory_overflow")]


def test_budget_injections_are_trimmed_like_messages():
    history = inject_in_chat(x_chat(2), [pm("D1", "system", 1, content="x")])
    # 18 - 3 = 15; separator "" costs 0; h2 -> 10; injection -> 5; h1 -> 0.
    budget = st_budget(max_context=18, max_tokens=0, history=history, new_chat=new_chat_message(""))
    assert [m.id for m in budget.history] == ["h1", "injection@1/100/system", "h2"]
    assert [(d.id, d.reason) for d in budget.dropped] == [("newMainChat", "empty")]
    tighter = st_budget(max_context=17, max_tokens=0, history=history, new_chat=new_chat_message(""))
    assert [(d.id, d.reason) for d in tighter.dropped][:1] == [("h1", "over_budget")]


def test_budget_rejects_bad_input():
    with pytest.raises(StParityError) as error:
        st_budget(max_context=10, max_tokens=0, mandatory=[StBudgetGroup(id="a"), StBudgetGroup(id="a")])
    assert error.value.code == "ST_DUPLICATE_ID"


# ------------------------------------------------------------------------------------------ input errors

BAD_INPUTS = [
    ([message("a", "user"), message("a", "user")], [], "ST_DUPLICATE_ID", "chat[1].id"),
    ([], [ext("a", "k", "system", 0, "x").model_copy(update={"order": 50})], "ST_EXTENSION_ORDER",
     "injections[0].order"),
    ([], [pm("a", "system", 0), pm("a", "user", 1)], "ST_DUPLICATE_SOURCE", "injections[1].sources"),
    ([], [ext("a", "k", "system", 0), ext("b", "k", "user", 1)], "ST_DUPLICATE_KEY", "injections[1].key"),
]


@pytest.mark.parametrize(("chat", "injections", "code", "path"), BAD_INPUTS)
def test_inject_rejects_bad_input(chat, injections, code, path):
    with pytest.raises(StParityError) as error:
        inject_in_chat(chat, injections)
    assert error.value.code == code
    assert error.value.message.startswith(path)


def test_inputs_are_not_mutated():
    chat = make_chat("ua")
    injections = [pm("D0", "system", 0)]
    before = [*[m._asdict() for m in chat], *[i.model_dump() for i in injections]]
    inject_in_chat(chat, injections)
    apply_names_behavior(chat, 2, user_name=USER, char_name=CHAR)
    take_continue_nudge(chat, continue_nudge_prompt=NUDGE)
    assert [*[m._asdict() for m in chat], *[i.model_dump() for i in injections]] == before


# ------------------------------------------------------------------------------------------ properties

injection_specs = st.lists(
    st.tuples(st.integers(0, 12), st.sampled_from([50, 100, 150]), st.sampled_from(["system", "user", "assistant"]),
              st.booleans()),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 8), injection_specs)
def test_injection_properties(chat_length, specs):
    chat = [message(f"m{i}", "user", f"M{i}") for i in range(chat_length)]
    injections = []
    for n, (depth, order, role, is_extension) in enumerate(specs):
        injections.append(ext(f"s{n}", f"k{n}", role, depth, f"S{n}") if is_extension
                          else pm(f"s{n}", role, depth, order, content=f"S{n}"))
    history = inject_in_chat(chat, injections)
    # The chat is kept whole and in order.
    assert [m.id for m in history if m.kind == "chat"] == [m.id for m in chat]
    # Every injection lands exactly once.
    held = [s for m in history if m.kind == "injection" for s in m.sources]
    assert sorted(held) == sorted(i.sources[0] for i in injections)
    # An injection of depth d has min(d, chat length) chat messages after it.
    for index, item in enumerate(history):
        if item.kind == "injection":
            after = sum(1 for m in history[index + 1:] if m.kind == "chat")
            assert after == min(item.depth, chat_length)
    # Within one depth: ascending order, then assistant, user, system; deeper depths above shallower ones.
    rank = {"assistant": 0, "user": 1, "system": 2}
    keys = [(-m.depth, m.order, rank[m.role]) for m in history if m.kind == "injection"]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_chat_message_objects_hold_themselves():
    (message,) = inject_in_chat([StMessage(id="c1", role="user", content="hi")], [])
    assert message.sources == ("c1",)
