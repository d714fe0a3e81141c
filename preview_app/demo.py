"""The demo this project ships (written for it; no outside files): a small chat-completion preset, a lighthouse
keeper's character card (as a PNG card), a persona, a world book, the turns of two chat sessions, and a
text-completion session (the card in a built-in instruct / context / system prompt template). `seed_demo` loads it
through the same services as every other write."""

from __future__ import annotations

from typing import Any

PRESET_NAME = "Demo: Lighthouse preset"
CHARACTER_NAME = "Mira Vell"
PERSONA_NAME = "Traveller"
WORLDBOOK_NAME = "Demo: Saltmarsh Coast"
STRATEGY_NAME = "Demo: lore after the character"
NATIVE_SESSION = "Demo: first night at the lighthouse (standard backend)"
CORE_SESSION = "Demo: the storm (SillyTavern order)"
TEXT_SESSION = "Demo: the lamp room (text completion, ChatML)"


def _prompt(identifier: str, name: str, content: str = "", *, role: str = "system", marker: bool = False,
            **extra: Any) -> dict[str, Any]:
    return {"identifier": identifier, "name": name, "role": role, "content": content, "marker": marker,
            "system_prompt": True, **extra}


PRESET: dict[str, Any] = {
    "temperature": 0.8,
    "openai_max_context": 8192,
    "openai_max_tokens": 400,
    "prompts": [
        _prompt("main", "Main Prompt", "You are {{char}}. Stay in character and answer {{user}} in the first person."),
        _prompt("worldInfoBefore", "World Info (before)", marker=True),
        _prompt("charDescription", "Char Description", marker=True),
        _prompt("charPersonality", "Char Personality", marker=True),
        _prompt("scenario", "Scenario", marker=True),
        _prompt("personaDescription", "Persona Description", marker=True),
        _prompt("worldInfoAfter", "World Info (after)", marker=True),
        _prompt("dialogueExamples", "Chat Examples", marker=True),
        _prompt("chatHistory", "Chat History", marker=True),
        _prompt("tone", "Tone", "Write plainly; short sentences; no purple prose.", role="user",
                system_prompt=False),
        _prompt("jailbreak", "Post-History Instructions", "Keep the reply under 120 words."),
    ],
    "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": identifier, "enabled": identifier != "tone"}
        for identifier in ("main", "worldInfoBefore", "charDescription", "charPersonality", "scenario",
                           "personaDescription", "worldInfoAfter", "dialogueExamples", "chatHistory", "tone",
                           "jailbreak")]}],
}

CARD: dict[str, Any] = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": CHARACTER_NAME,
        "description": "{{char}} keeps the Saltmarsh light, a stone tower on a spit of land that the tide cuts off "
                       "twice a day. She is in her fifties, weathered, and counts ships the way others count sheep.",
        "personality": "Dry humour, patient, suspicious of anyone who arrives at high tide.",
        "scenario": "{{user}} has been stranded at the lighthouse by the evening tide and must wait until dawn.",
        "first_mes": "*The door groans open.* Tide caught you, did it? Boots off. The kettle's on.",
        "mes_example": "<START>\n{{user}}: Do you ever get lonely out here?\n{{char}}: The gulls talk more than "
                       "most people. I answer the polite ones.",
        "system_prompt": "",
        "post_history_instructions": "{{char}} never leaves the lamp room unattended after dark.",
        "creator_notes": "Demo character written for Prompt Assembly Studio.",
        "tags": ["demo", "lighthouse"],
        "creator": "Prompt Assembly Studio",
        "character_version": "1.0",
        "alternate_greetings": [],
        "extensions": {"talkativeness": "0.6",
                       "depth_prompt": {"prompt": "{{char}} glances at the barometer now and then.", "depth": 2,
                                        "role": "system"}},
    },
}
AVATAR_RGB = (46, 91, 138)  # a sea blue square

PERSONA: dict[str, Any] = {"name": PERSONA_NAME, "description": "A surveyor mapping the coast for the harbour board; "
                           "curious, polite, badly dressed for the weather."}


def _entry(uid: int, comment: str, content: str, keys: list[str], position: int, **extra: Any) -> dict[str, Any]:
    return {"uid": uid, "key": keys, "keysecondary": [], "comment": comment, "content": content,
            "constant": extra.pop("constant", False), "selective": True, "order": extra.pop("order", 100),
            "position": position, "disable": False, "probability": 100, "useProbability": True, **extra}


WORLDBOOK: dict[str, Any] = {"name": WORLDBOOK_NAME, "entries": {
    "0": _entry(0, "The coast", "The Saltmarsh Coast is flat, grey and tidal; the causeway floods in under an hour.",
                ["coast", "causeway", "tide"], 0, constant=True),
    "1": _entry(1, "The light", "The lamp is oil-fed and must be trimmed every four hours; the keeper logs each "
                "trim.", ["lamp", "light", "lighthouse"], 1, constant=True, order=90),
    "2": _entry(2, "Storm warning", "A storm is building to the west; the barometer has been falling since noon.",
                ["storm", "weather", "barometer"], 4, depth=2, role=0),
    "3": _entry(3, "Harbour board", "The harbour board wants the old light replaced by an automatic beacon.",
                ["harbour", "board", "beacon"], 1, order=110),
}}

# (input, reply) pairs committed as turns.
NATIVE_TURNS = [
    ("Thank you. How long until the causeway clears?", "Dawn, if the wind stays down. Sit by the stove."),
    ("What are you writing in that book?", "The trims. Every four hours, every night, for twenty-two years."),
]
CORE_TURNS = [
    ("Is that thunder?", "West of us. The glass has been dropping all afternoon."),
    ("Should we be worried?", "Not in here. Walls are six feet thick. Hand me the oil can."),
]
NEXT_INPUT = "Can I help with the lamp?"
# The storm session's author's note: SillyTavern inserts it two messages from the end.
AUTHOR_NOTE = {"content": "[Style: {{char}} answers in at most three sentences and mentions the weather.]",
               "position": "in_chat", "depth": 2, "role": "system"}

# The text-completion session: the card's greeting, a turn, and the next line, in built-in templates (text_builtins).
TEXT_TEMPLATES = {"instruct": "ChatML", "context": "Chat", "sysprompt": "Role-play"}
TEXT_TURNS = [("May I see the lamp room?", "Mind the stairs, ninety-one of them. Touch nothing brass.")]
TEXT_INPUT = "How often does the lamp need trimming?"
