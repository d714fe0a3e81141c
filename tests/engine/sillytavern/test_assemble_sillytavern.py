"""assemble() end to end on SillyTavern's own shipped files: preset Default, card Seraphina, world book Eldoria.

Every expectation is worked out by hand from the files and the references, never from our output:
- Default.json's order for character 100001 is main, worldInfoBefore, personaDescription, charDescription,
  charPersonality, scenario, enhanceDefinitions (disabled), nsfw, worldInfoAfter, dialogueExamples, chatHistory,
  jailbreak (sillytavern.md §2.2). Seraphina has only a description; nsfw and jailbreak are empty, and there is no
  persona, so with the files as shipped the relative prompts with text are main, world info before, and the description.
  Empty prompts are dropped (§4.3 rule 1).
- All four Eldoria entries are enabled with position 0 (before), so they go to the worldInfoBefore marker (§7.1).
- The chatHistory slot holds the whole chat, the current input included, and the jailbreak prompt follows it (§4.3).
- Native: everything the preset puts before the history slot becomes one system message; what it puts after the slot
  becomes a user pre-step after the input (A.8.1 step 9). Roles-first keeps system roles in the system message.
"""

import copy
import json

import pytest

from assembly import AssemblyError, assemble, count_tokens
from assembly.sillytavern.card import import_character

USER, CHAR = "Alex", "Seraphina"
MAIN = "Write Seraphina's next reply in a fictional chat between Seraphina and Alex."  # Default.json main, names filled
ENHANCE = "If you have more knowledge of Seraphina, add to the character's lore"
HISTORY = [
    {"id": "h1", "role": "user", "content": "I wake up in a strange bed. Where is this place?"},
    {"id": "h2", "role": "assistant", "content": "You are safe in my glade, traveller. Rest now."},
]
INPUT = [{"id": "i1", "role": "user", "content": "Thank you. Who are you?"}]
NATIVE = ("builtin-native-slots", "builtin-native-roles")
ALL_STRATEGIES = ("builtin-st", *NATIVE)


def read(folder, name):
    return json.loads((folder / "sillytavern" / name).read_text(encoding="utf-8"))


@pytest.fixture
def files(shared_fixtures):
    return {"preset": read(shared_fixtures, "st_cc_preset_Default.json"),
            "character": read(shared_fixtures, "st_card_Seraphina.v2.chara.json"),
            "worldbook": read(shared_fixtures, "st_worldinfo_Eldoria.json")}


def named(text):
    return text.replace("{{user}}", USER).replace("{{char}}", CHAR)


def flat(text):
    """SillyTavern strips carriage returns; compare line by line so either spelling of a line break matches."""
    return "\n".join(text.splitlines())


def build(strategy, preset, character, worldbook):
    return {
        "strategy": strategy,
        "resources": {"preset": preset, "character": character, "worldbook": {**worldbook, "activation": "all"}},
        "conversation": {"history": copy.deepcopy(HISTORY), "input": copy.deepcopy(INPUT)},
        "host": {"core_available": True},
        "names": {"user": USER},  # no char name: the card's name is used
    }


def lore(files, uid):
    return named(files["worldbook"]["entries"][uid]["content"])


def description(files):
    return flat(named(files["character"]["data"]["description"]))


def occurrences(messages, text):
    return sum(flat(m.content).count(flat(text)) for m in messages)


def index_of(messages, text):
    found = [i for i, m in enumerate(messages) if flat(text) in flat(m.content)]
    assert len(found) == 1, f"{text[:40]!r} is in messages {found}, expected exactly one"
    return found[0]


def variant(files):
    """The shipped files with the optional parts switched on, as a designer would in SillyTavern's editor."""
    preset, book = copy.deepcopy(files["preset"]), copy.deepcopy(files["worldbook"])
    for prompt in preset["prompts"]:
        if prompt["identifier"] == "nsfw":
            prompt["content"] = "AUX for {{char}}."
        if prompt["identifier"] == "jailbreak":
            prompt["content"] = "PHI: stay {{char}} and answer {{user}}."
    for order in preset["prompt_order"]:
        for entry in order["order"]:
            if order["character_id"] == 100001 and entry["identifier"] == "enhanceDefinitions":
                entry["enabled"] = True
            if order["character_id"] == 100000 and entry["identifier"] == "main":
                entry["enabled"] = False  # the legacy order is not the one chat completion uses (§2.2)
    book["entries"]["1"]["position"] = 1  # after
    book["entries"]["2"]["disable"] = True
    return preset, book


def check_conversation(messages, *, first):
    ids = [m.id for m in messages]
    for message in HISTORY + INPUT:
        assert ids.count(message["id"]) == 1
        assert occurrences(messages, message["content"]) == 1
    sent = [(m.id, m.role, m.content) for m in messages if m.id in ("h1", "h2", "i1")]
    assert sent == [(m["id"], m["role"], m["content"]) for m in HISTORY + INPUT]
    assert ids.index("h1") >= first


def check_annotations(result):
    for message in result.request.messages:
        assert message.tokens > 0
        assert message.tokens == count_tokens(message.content, "o200k_base")
    assert result.tokens.total == sum(m.tokens for m in result.request.messages)
    for node in result.nodes:
        if node.locked:
            assert node.lock_reason, f"{node.id} is locked without a reason"
        if node.module in ("history", "input"):
            assert node.locked and node.lock_reason == "runtime"
        if node.request_index is not None:
            assert node.id in result.request.messages[node.request_index].parts
    for message in result.request.messages:
        if message.id not in ("h1", "h2", "i1"):
            assert "{{char}}" not in message.content and "{{user}}" not in message.content


# core (builtin-st) ---------------------------------------------------------------------------------------------------


def test_core_request_follows_the_default_preset(files):
    result = assemble(build("builtin-st", files["preset"], files["character"], files["worldbook"]))
    messages = result.request.messages
    assert result.backend == "core"
    assert messages[0].role == "system" and messages[0].content == MAIN
    wi = [index_of(messages, lore(files, uid)) for uid in ("0", "1", "2", "3")]
    desc = index_of(messages, description(files))
    assert messages[desc].role == "system"
    assert min(wi) > 0 and max(wi) < desc < [m.id for m in messages].index("h1")
    assert occurrences(messages, description(files)) == 1
    assert all(occurrences(messages, lore(files, uid)) == 1 for uid in ("0", "1", "2", "3"))
    assert occurrences(messages, ENHANCE) == 0  # enhanceDefinitions is disabled in the order for 100001
    assert messages[-1].id == "i1"  # the jailbreak prompt is empty, so nothing follows the chat
    check_conversation(messages, first=desc + 1)
    check_annotations(result)


def test_core_request_follows_prompt_order_100001_with_every_part_switched_on(files):
    preset, book = variant(files)
    result = assemble(build("builtin-st", preset, files["character"], book))
    messages = result.request.messages
    ids = [m.id for m in messages]
    main = index_of(messages, MAIN)
    before = [index_of(messages, lore(files, uid)) for uid in ("0", "3")]
    desc = index_of(messages, description(files))
    enhance = index_of(messages, ENHANCE)
    aux = index_of(messages, "AUX for Seraphina.")
    after = index_of(messages, lore(files, "1"))
    phi = index_of(messages, "PHI: stay Seraphina and answer Alex.")
    assert main == 0
    assert main < min(before) and max(before) < desc < enhance < aux < after < ids.index("h1")
    assert ids.index("i1") < phi == len(messages) - 1
    assert occurrences(messages, lore(files, "2")) == 0  # disabled entry
    assert all(messages[i].role == "system" for i in (main, *before, desc, enhance, aux, after, phi))
    check_conversation(messages, first=after + 1)
    check_annotations(result)


def test_core_backend_requires_the_core_extension(files):
    request = build("builtin-st", files["preset"], files["character"], files["worldbook"])
    request["host"]["core_available"] = False
    with pytest.raises(AssemblyError) as caught:
        assemble(request)
    assert caught.value.code == "REQUEST_ASSEMBLY_CORE_REQUIRED" and caught.value.status == 409


def test_png_card_assembles_like_the_json_card(files, shared_fixtures):
    card = import_character((shared_fixtures / "sillytavern" / "st_card_Seraphina.png").read_bytes())
    assert card.name == CHAR
    assert card.description == files["character"]["data"]["description"]
    from_json = assemble(build("builtin-st", files["preset"], files["character"], files["worldbook"]))
    from_png = assemble(build("builtin-st", files["preset"], card, files["worldbook"]))
    assert [(m.role, m.content) for m in from_png.request.messages] == [
        (m.role, m.content) for m in from_json.request.messages]


# native (standard) ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", NATIVE)
def test_native_request_is_one_system_message_then_the_conversation(files, strategy):
    result = assemble(build(strategy, files["preset"], files["character"], files["worldbook"]))
    messages = result.request.messages
    assert result.backend == "native"
    assert [m.role for m in messages].count("system") == 1 and messages[0].role == "system"
    assert [m.id for m in messages[1:]] == ["h1", "h2", "i1"]
    system = flat(messages[0].content)
    assert system.startswith(MAIN)
    wi = [system.index(flat(lore(files, uid))) for uid in ("0", "1", "2", "3")]
    assert max(wi) < system.index(description(files))
    assert occurrences(messages, description(files)) == 1
    assert occurrences(messages, ENHANCE) == 0
    check_conversation(messages, first=1)
    check_annotations(result)


@pytest.mark.parametrize("strategy", NATIVE)
def test_native_places_world_info_and_post_history_by_the_preset(files, strategy):
    preset, book = variant(files)
    result = assemble(build(strategy, preset, files["character"], book))
    messages = result.request.messages
    system = flat(messages[0].content)
    order = [system.index(flat(text)) for text in (MAIN, lore(files, "0"), description(files), ENHANCE,
                                                    "AUX for Seraphina.", lore(files, "1"))]
    assert order == sorted(order)
    assert occurrences(messages, lore(files, "2")) == 0
    phi = "PHI: stay Seraphina and answer Alex."
    if strategy == "builtin-native-slots":
        # after the history slot: a user pre-step after the input, with its role change reported (A.8.1 step 9)
        assert [m.id for m in messages[1:4]] == ["h1", "h2", "i1"]
        assert messages[-1].role == "user" and messages[-1].content == phi and messages[-1].delivery == "pre-step"
        assert any(d.code == "NATIVE_ROLE_ADJUSTED" for d in result.diagnostics)
    else:
        # roles first: a system prompt stays system, so it joins the head
        assert phi in messages[0].content and [m.id for m in messages[1:]] == ["h1", "h2", "i1"]
    check_conversation(messages, first=1)
    check_annotations(result)


# inputs ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
def test_assemble_does_not_mutate_its_inputs(files, strategy):
    preset, book = variant(files)
    request = build(strategy, preset, files["character"], book)
    before = copy.deepcopy(request)
    untouched = copy.deepcopy(files)
    assemble(request)
    assert request == before
    assert files == untouched
