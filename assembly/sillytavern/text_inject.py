"""Extension prompts for text completion: SillyTavern's `getExtensionPrompt` (the prompts of one place joined in key
order) and `doChatInject` (the in-chat ones: the author's note, the character's note, the persona, world info at
depth, the story string and other extensions' prompts, grouped by depth and role and inserted into the chat)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assembly.sillytavern.text_macros import substitute_params

MAX_INJECTION_DEPTH = 1000
_ROLE_ORDER = ("system", "user", "assistant")


@dataclass(frozen=True)
class InChatPrompt:
    key: str  # SillyTavern's extension-prompt key: prompts of one depth and role are joined in key order
    text: str
    depth: int
    role: str
    source: str


@dataclass
class ChatItem:
    """A message of SillyTavern's `coreChat`: who speaks, the text, and where it came from."""

    name: str
    mes: str
    is_user: bool
    source: str
    narrator: bool = False
    injected: bool = False


def _js_key(key: str) -> list[int]:
    return [ord(c) for c in key]  # JavaScript's default sort compares UTF-16 code units


def joined_prompts(prompts: list[InChatPrompt], *, user: str, char: str,
                   macros: Any = None) -> tuple[str, list[InChatPrompt]]:
    """`getExtensionPrompt` without its wrapping: the prompts with text, in key order, each trimmed, joined by a
    newline, macros substituted. Returns the text and the prompts it holds, in that order."""
    here = sorted((p for p in prompts if p.text), key=lambda p: _js_key(p.key))
    return (substitute_params("\n".join(p.text.strip() for p in here), user, char, macros=macros)
            if here else ""), here


def inject_in_chat(chat: list[ChatItem], prompts: list[InChatPrompt], *, user: str, char: str,
                   continuing: bool, macros: Any = None) -> tuple[list[ChatItem], list[int]]:
    """`doChatInject`: per depth (0..1000) and role (system, user, assistant), the prompts joined by a newline,
    macros substituted, leading whitespace trimmed; each non-empty one inserted `depth` messages from the end
    (plus those inserted before; a continue counts depth 0 as 1). Returns the chat oldest first and where the
    injected messages went, counted from the newest."""
    newest_first = list(reversed(chat))
    inserted = 0
    indices: list[int] = []
    for depth in sorted({p.depth for p in prompts if 0 <= p.depth <= MAX_INJECTION_DEPTH}):
        group: list[ChatItem] = []
        for role in _ROLE_ORDER:
            text, here = joined_prompts([p for p in prompts if p.depth == depth and p.role == role], user=user,
                                        char=char, macros=macros)
            text = text.lstrip()
            if text:
                name = {"system": "", "user": user, "assistant": char}[role]
                group.append(ChatItem(name=name, mes=text, is_user=role == "user",
                                      source="+".join(p.source for p in here), narrator=role == "system",
                                      injected=True))
        if group:
            at = min((1 if continuing and depth == 0 else depth) + inserted, len(newest_first))
            newest_first[at:at] = group
            indices += range(at, at + len(group))
            inserted += len(group)
    return list(reversed(newest_first)), indices
