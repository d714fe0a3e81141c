"""Which kind of SillyTavern file an upload is, from its content: the import page's default choice, and what a
wrong choice is explained with."""

from __future__ import annotations

import json
from typing import Any

from assembly.sillytavern.charx import is_charx
from assembly.sillytavern.png import PNG_SIGNATURE
from assembly.sillytavern.text_presets import detect_text_preset

# kind -> what the import page calls it in explanations
KIND_NAMES = {"preset": "chat-completion preset", "character": "character card", "worldbook": "world book",
              "persona": "persona", "regex": "regex script file", "strategy": "studio strategy",
              "chat": "chat log", "group": "group chat definition",
              "template": "text-completion template"}

_PRESET_KEYS = frozenset({"prompts", "prompt_order", "chat_completion_source", "openai_max_context",
                          "openai_max_tokens", "temp_openai"})
_CARD_KEYS = frozenset({"first_mes", "mes_example", "personality", "scenario"})


def _is_group(value: Any) -> bool:
    """A group definition (`groups/*.json`): its members' avatars and its chats; it also carries `chat_metadata`."""
    return isinstance(value, dict) and isinstance(value.get("members"), list) and (
        "chats" in value or "chat_id" in value or "generation_mode" in value)


def _is_chat_header(value: Any) -> bool:
    """The first line of a SillyTavern chat file (`.jsonl`): the names and the chat's metadata, no `mes`."""
    return isinstance(value, dict) and "mes" not in value and not _is_group(value) and (
        "chat_metadata" in value or {"user_name", "character_name"} <= set(value))


def _is_chat_message(value: Any) -> bool:
    return isinstance(value, dict) and "mes" in value and ("is_user" in value or "name" in value)


def detect_upload(raw: bytes) -> str | None:
    """An upload's bytes -> its kind (as `detect_kind`), also telling a SillyTavern chat `.jsonl`: a header line
    then one message object a line, which is not one JSON document."""
    if raw.startswith(PNG_SIGNATURE) or is_charx(raw):
        return detect_kind(raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    try:
        return detect_kind(json.loads(text))
    except (ValueError, RecursionError):
        pass
    return "chat" if _is_chat_lines(text) else None


def _is_chat_lines(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]  # as SillyTavern splits a chat file
    try:
        items = [json.loads(line) for line in lines]
    except (ValueError, RecursionError):
        return False
    if not items or not (_is_chat_header(items[0]) or _is_chat_message(items[0])):
        return False
    return all(_is_chat_message(item) for item in items[1:])


def _is_regex(value: Any) -> bool:
    return isinstance(value, dict) and "findRegex" in value


def detect_kind(content: Any) -> str | None:
    """`content` (PNG/zip bytes, or parsed JSON) -> preset, character, worldbook, persona, regex, strategy, chat,
    template (a text-completion template or master export), or None when nothing tells."""
    if isinstance(content, bytes | bytearray):
        return "character"  # PNG and CharX uploads are cards (a card's book is imported by choosing world book)
    if isinstance(content, list):
        if content and all(_is_regex(item) for item in content):
            return "regex"
        if content and all(isinstance(item, dict) and ("mes" in item or "chat_metadata" in item) for item in content):
            return "chat"
        return None
    if not isinstance(content, dict):
        return None
    keys = set(content)
    if _is_group(content):
        return "group"
    if _is_chat_header(content) or _is_chat_message(content):  # a chat file of one line (header or one message)
        return "chat"
    if "oai_settings" in keys or keys & _PRESET_KEYS:
        return "preset"
    data = content.get("data")
    if str(content.get("spec", "")).startswith("chara_card") or keys & _CARD_KEYS or (
            isinstance(data, dict) and set(data) & _CARD_KEYS):
        return "character"
    if "entries" in keys:
        return "worldbook"
    if _is_regex(content):
        return "regex"
    if "rules" in keys and "placement" in keys:
        return "strategy"
    if detect_text_preset(content) is not None:  # instruct / context / sysprompt / reasoning, or a master export
        return "template"
    if "power_user" in keys or ("description" in keys and ("position" in keys or "name" in keys)):
        return "persona"
    return None
