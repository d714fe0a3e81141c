"""The chat part of SillyTavern's text-completion prompt (`Generate()` from the injections to
`getCombinedPrompt`): messages formatted, kept within the budget newest first (injections first), examples added
while they fit, the last line, and the final string with each span's source."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assembly.sillytavern.text_budget import estimate_tokens
from assembly.sillytavern.text_inject import ChatItem, inject_in_chat
from assembly.sillytavern.text_instruct import Force, format_chat_message, last_line, message_parts
from assembly.sillytavern.text_macros import substitute_params
from assembly.sillytavern.text_gather import TextParts
from assembly.sillytavern.text_templates import TextTemplates

_MAX_TRIM_ROUNDS = 100_000


@dataclass
class Span:
    source: str
    text: str


@dataclass
class _Loop:
    """The state `Generate()` keeps while it fills the context."""

    chat2: list[str]
    sources: list[str]
    injected: list[int]
    is_user: list[bool]
    cycle: str = ""
    cycle_source: str = ""
    kept: dict[int, str] = field(default_factory=dict)


def _format(item: ChatItem, templates: TextTemplates, parts: TextParts, force: Force) -> str:
    name = item.name if item.is_user else (item.name or parts.char)
    if not templates.instruct_on:
        return f"{name}: {item.mes}\n" if item.name and not item.narrator else f"{item.mes}\n"
    return format_chat_message(templates.instruct, name, item.mes, is_user=item.is_user, is_narrator=item.narrator,
                               force=force, user=parts.user, char=parts.char)


def _continued(item: ChatItem, templates: TextTemplates, parts: TextParts) -> str:
    """The continued message without its suffix (cut right after its text)."""
    name = item.name if item.is_user else (item.name or parts.char)
    if not templates.instruct_on:
        return f"{name}: {item.mes}" if item.name and not item.narrator else item.mes
    head, body, _suffix = message_parts(templates.instruct, name, item.mes, is_user=item.is_user,
                                        is_narrator=item.narrator, force="last", user=parts.user, char=parts.char)
    return head + body


def _chat2(chat: list[ChatItem], injected: list[int], templates: TextTemplates, parts: TextParts,
           generation: str) -> _Loop:
    instruct_on = templates.instruct_on
    count = len(chat)
    last_user = max((j for j, c in enumerate(chat) if c.is_user), default=-1)
    chat2, sources, is_user = [""] * count, [""] * count, [False] * count
    loop = _Loop(chat2=chat2, sources=sources, injected=injected, is_user=is_user)
    for j, item in enumerate(chat):
        i = count - 1 - j
        force: Force = None
        if instruct_on and j == 0:
            force = "first"
        if instruct_on and j == last_user and generation != "impersonate":
            force = "last"
        chat2[i] = _format(item, templates, parts, force)
        sources[i] = item.source
        if i == 0 and generation == "continue":
            chat2[i] = _continued(item, templates, parts)
        is_user[i] = item.is_user
    return loop


def build_prompt(parts: TextParts, templates: TextTemplates, *, generation: str, raw_chat: list[dict[str, Any]]
                 ) -> tuple[str, list[Span]]:
    """The final prompt string and its spans (source, text), in order."""
    settings, context, instruct = templates.settings, templates.context, templates.instruct
    instruct_on, continuing = templates.instruct_on, generation == "continue"
    impersonate = generation == "impersonate"
    user, char = parts.user, parts.char
    budget = settings["max_context"] - settings["amount_gen"]
    padding = settings["token_padding"]
    chat, injected = inject_in_chat(parts.chat, parts.in_chat, user=user, char=char, continuing=continuing)
    if parts.post_history:
        note = ChatItem(name="", mes=parts.post_history, is_user=True, source="post_history")
        at = 1 if continuing and chat else 0  # counted from the newest
        chat.insert(len(chat) - at, note)
        if not continuing:
            injected = [i + 1 for i in injected]
    loop = _chat2(chat, injected, templates, parts, generation)
    chat_start = substitute_params(context["chat_start"] + "\n", user, char) if context["chat_start"] else ""
    alignment = ""
    if instruct_on and instruct["user_alignment_message"]:
        alignment = format_chat_message(instruct, user, substitute_params(instruct["user_alignment_message"], user,
                                                                          char),
                                        is_user=True, is_narrator=False, force="first", user=user, char=char)
    last_user_is_newest = bool(raw_chat) and raw_chat[-1]["role"] == "user"

    def modify_last(text: str) -> str:
        if instruct_on and not continuing:
            text += last_line(instruct, name=user if impersonate else char, impersonate=impersonate,
                              bias=parts.bias, user=user, char=char)
        if not instruct_on and impersonate and not continuing:
            text += ("" if text.endswith("\n") else "\n") + user + ":"
        if not instruct_on and parts.force_name2 and not (len(raw_chat) == 1 and continuing):
            text += "" if text.endswith("\n") else "\n"
            if not continuing or not last_user_is_newest:
                text += f"{char}:"
        return text

    pinned = "".join(parts.examples) if settings["pin_examples"] else None
    if continuing and len(loop.chat2) > 1:
        loop.cycle, loop.cycle_source = loop.chat2.pop(0), loop.sources.pop(0)
        loop.is_user.pop(0)
        loop.injected = [i - 1 for i in loop.injected if i > 0]
    chat_string = chat_start
    count = estimate_tokens("".join([parts.story, pinned or "", alignment, chat_string, modify_last(""),
                                     loop.cycle]).replace("\r", ""), padding)
    last_added = 0
    stopped = False
    for index in loop.injected:
        if index >= len(loop.chat2):
            continue
        count += estimate_tokens(loop.chat2[index])
        if count < budget:
            chat_string += loop.chat2[index]
            loop.kept[index] = loop.chat2[index]
            last_added = max(last_added, index)
        else:
            stopped = True
            break
    for index, item in enumerate(loop.chat2):
        if stopped:
            break
        if index in loop.kept:
            continue
        count += estimate_tokens(item)
        if count < budget:
            chat_string += item
            loop.kept[index] = item
            last_added = max(last_added, index)
        else:
            break
    kept = sorted(loop.kept)
    messages = [(loop.sources[i], loop.kept[i]) for i in reversed(kept)]  # oldest first
    # the oldest kept message (the newest when none is kept, as SillyTavern starts from index 0) is not the user's
    if alignment and not (last_added < len(loop.is_user) and loop.is_user[last_added]):
        messages.insert(0, ("alignment", alignment))
        chat_string += alignment  # so the examples' count below has it twice, as SillyTavern's has
    count = estimate_tokens("".join([parts.story, pinned or "", alignment, chat_string, modify_last(""),
                                     loop.cycle]).replace("\r", ""), padding)
    fitting = 0
    if pinned is None:
        for example in parts.examples:
            count += estimate_tokens(example)
            if count < budget:
                fitting += 1
            else:
                break
    if messages and not continuing and (not instruct_on or instruct["wrap"]):
        source, text = messages[-1]
        messages[-1] = (source, re.sub(r"\n$", "", text, count=1))
    messages, fitting = _set_prompt(messages, modify_last, continuing=continuing)(parts, templates, chat_start,
                                                                                  loop, fitting, pinned, budget)
    examples = pinned if pinned is not None else "".join(parts.examples[:fitting])
    if not instruct_on and not impersonate and parts.bias.strip() and messages:
        source, text = messages[-1]
        bias = parts.bias.lstrip()
        messages[-1] = (source, text + (bias if text[-1:].isspace() else " " + bias))
    spans = [Span("story_string", parts.story), Span("examples", examples), Span("chat_start", chat_start),
             *(Span(s, t) for s, t in messages), Span(loop.cycle_source or "continued", loop.cycle)]
    spans = [s for s in spans if s.text]
    for span in spans:
        span.text = span.text.replace("\r", "")
        if settings["collapse_newlines"]:
            span.text = re.sub(r"\n+", "\n", span.text)
    prompt = "".join(s.text for s in spans)
    if settings["collapse_newlines"]:
        prompt = re.sub(r"\n+", "\n", prompt)
    return prompt, spans


def _set_prompt(messages: list[tuple[str, str]], modify_last: Any, *, continuing: bool) -> Any:
    """`setPromptString` (the last line added to the newest message) and, for a continue, `checkPromptSize`:
    while the whole prompt is over the budget, one example less, then the oldest message out."""

    def run(parts: TextParts, templates: TextTemplates, chat_start: str, loop: _Loop, fitting: int,
            pinned: str | None, budget: int) -> tuple[list[tuple[str, str]], int]:
        padding = templates.settings["token_padding"]
        current = list(messages)

        def set_prompt() -> None:
            if current:
                source, text = current[-1]
                current[-1] = (source, modify_last(text))

        set_prompt()
        if not loop.cycle:
            return current, fitting
        for _ in range(_MAX_TRIM_ROUNDS):
            examples = pinned if pinned is not None else "".join(parts.examples[:fitting])
            prompt = "".join([parts.story, examples, chat_start, "".join(t for _s, t in current), "\n",
                              modify_last(""), loop.cycle]).replace("\r", "")
            if estimate_tokens(prompt, padding) <= budget:
                break
            if fitting > 0:
                fitting -= 1
            elif current:
                current.pop(0)
            else:
                break
            set_prompt()
        return current, fitting

    return run
