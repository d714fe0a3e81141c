"""The chat part of SillyTavern's text-completion prompt (`Generate()` from the injections to
`getCombinedPrompt`): messages formatted, kept within the budget newest first (injections first), examples added
while they fit, the last line, and the final string with each span's source."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assembly.sillytavern.text_budget import estimate_tokens, fill_chat, fitting_examples
from assembly.sillytavern.text_gather import TextParts
from assembly.sillytavern.text_inject import ChatItem, inject_in_chat
from assembly.sillytavern.text_instruct import Force, format_chat_message, last_line, message_parts
from assembly.sillytavern.text_macros import substitute_params
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


def _format(item: ChatItem, templates: TextTemplates, parts: TextParts, force: Force) -> str:
    name = item.name if item.is_user else (item.name or parts.char)
    if not templates.instruct_on:
        return f"{name}: {item.mes}\n" if item.name and not item.narrator else f"{item.mes}\n"
    return format_chat_message(templates.instruct, name, item.mes, is_user=item.is_user, is_narrator=item.narrator,
                               force=force, user=parts.user, char=parts.char, macros=parts.macros)


def _continued(item: ChatItem, templates: TextTemplates, parts: TextParts) -> str:
    """The continued message without its suffix (cut right after its text)."""
    name = item.name if item.is_user else (item.name or parts.char)
    if not templates.instruct_on:
        return f"{name}: {item.mes}" if item.name and not item.narrator else item.mes
    head, body, _suffix = message_parts(templates.instruct, name, item.mes, is_user=item.is_user,
                                        is_narrator=item.narrator, force="last", user=parts.user, char=parts.char,
                                        macros=parts.macros)
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


def _prepared(parts: TextParts, templates: TextTemplates, generation: str) -> _Loop:
    """The chat with its injections and post-history instructions, formatted newest first; for a continue the
    newest message taken out as the text to continue."""
    continuing = generation == "continue"
    chat, injected = inject_in_chat(parts.chat, parts.in_chat, user=parts.user, char=parts.char, macros=parts.macros,
                                    continuing=continuing)
    if parts.post_history:
        note = ChatItem(name="", mes=parts.post_history, is_user=True, source="post_history")
        chat.insert(len(chat) - (1 if continuing and chat else 0), note)
        # the places of the injected messages, as SillyTavern's oracle answers show them: pushed down by the note
        # appended after the newest message, left as they were by a continue's note before the continued one
        if not continuing:
            injected = [i + 1 for i in injected]
    loop = _chat2(chat, injected, templates, parts, generation)
    if continuing and len(loop.chat2) > 1:  # with only one message it stays in the chat
        loop.cycle, loop.cycle_source = loop.chat2.pop(0), loop.sources.pop(0)
        loop.is_user.pop(0)
        loop.injected = [i - 1 for i in loop.injected if i > 0]
    return loop


@dataclass(frozen=True)
class _LastLine:
    """`modifyLastPromptLine`: what ends the newest message (instruct's last line, or `User:` / `Char:`)."""

    parts: TextParts
    templates: TextTemplates
    generation: str
    chat_length: int
    newest_is_user: bool

    def __call__(self, text: str) -> str:
        parts, instruct_on = self.parts, self.templates.instruct_on
        continuing, impersonate = self.generation == "continue", self.generation == "impersonate"
        if instruct_on and not continuing:
            text += last_line(self.templates.instruct, name=parts.user if impersonate else parts.char,
                              impersonate=impersonate, bias=parts.bias, user=parts.user, char=parts.char,
                              macros=parts.macros)
        if not instruct_on and impersonate and not continuing:
            text += ("" if text.endswith("\n") else "\n") + parts.user + ":"
        if not instruct_on and parts.force_name2 and not (self.chat_length == 1 and continuing):
            text += "" if text.endswith("\n") else "\n"
            if not continuing or not self.newest_is_user:
                text += f"{parts.char}:"
        return text


def _alignment(parts: TextParts, templates: TextTemplates) -> str:
    instruct = templates.instruct
    if not (templates.instruct_on and instruct["user_alignment_message"]):
        return ""
    text = substitute_params(instruct["user_alignment_message"], parts.user, parts.char, macros=parts.macros)
    return format_chat_message(instruct, parts.user, text, is_user=True, is_narrator=False, force="first",
                               user=parts.user, char=parts.char, macros=parts.macros)


def build_prompt(parts: TextParts, templates: TextTemplates, *, generation: str, raw_chat: list[dict[str, Any]]
                 ) -> tuple[str, list[Span]]:
    """The final prompt string and its spans (source, text), in order."""
    settings, context = templates.settings, templates.context
    budget, padding = settings["max_context"] - settings["amount_gen"], settings["token_padding"]
    loop = _prepared(parts, templates, generation)
    chat_start = substitute_params(context["chat_start"] + "\n", parts.user, parts.char, macros=parts.macros) \
        if context["chat_start"] else ""
    alignment = _alignment(parts, templates)
    modify_last = _LastLine(parts, templates, generation, len(raw_chat),
                            bool(raw_chat) and raw_chat[-1]["role"] == "user")
    pinned = "".join(parts.examples) if settings["pin_examples"] else None

    def whole_count(chat_string: str) -> int:
        return estimate_tokens("".join([parts.story, pinned or "", alignment, chat_string, modify_last(""),
                                        loop.cycle]).replace("\r", ""), padding)

    kept, oldest, taken = fill_chat(loop.chat2, loop.injected, whole_count(chat_start), budget)
    messages = [(loop.sources[i], kept[i]) for i in sorted(kept, reverse=True)]  # oldest first
    # the oldest kept message (the newest when none is kept: SillyTavern starts from place 0) is not the user's
    if alignment and not (oldest < len(loop.is_user) and loop.is_user[oldest]):
        messages.insert(0, ("alignment", alignment))
        taken += alignment  # so the examples' count has it twice, as SillyTavern's has
    fitting = 0 if pinned is not None else fitting_examples(parts.examples, whole_count(chat_start + taken), budget)
    if messages and generation != "continue" and (not templates.instruct_on or templates.instruct["wrap"]):
        source, text = messages[-1]
        messages[-1] = (source, re.sub(r"\n$", "", text, count=1))
    newest = messages[-1] if messages else None
    messages, fitting = _set_prompt(messages, fitting, parts=parts, pinned=pinned, chat_start=chat_start,
                                    cycle=loop.cycle, modify_last=modify_last, padding=padding, budget=budget)
    if not templates.instruct_on and generation != "impersonate" and parts.bias.strip() and messages:
        source, text = messages[-1]
        bias = parts.bias.lstrip()
        messages[-1] = (source, text + (bias if text[-1:].isspace() else " " + bias))
    if pinned is not None:
        examples = [Span("examples", pinned)]
    else:
        examples = [Span(s, t) for s, t in zip(parts.examples_sources[:fitting], parts.examples[:fitting],
                                                strict=True)]
    spans = [Span(parts.story_source, parts.story), *examples,
             Span("chat_start", chat_start), *_message_spans(messages, newest),
             Span(loop.cycle_source or "continued", loop.cycle)]
    return _joined([s for s in spans if s.text], collapse=settings["collapse_newlines"])


def _message_spans(messages: list[tuple[str, str]], newest: tuple[str, str] | None) -> list[Span]:
    """One span a message; what the last line (and Start Reply With) added to the newest is a span of its own."""
    spans = [Span(s, t) for s, t in messages]
    if newest is not None and messages and messages[-1][0] == newest[0] and messages[-1][1].startswith(newest[1]):
        spans[-1:] = [Span(newest[0], newest[1]), Span("last_line", messages[-1][1][len(newest[1]):])]
    return spans


def _joined(spans: list[Span], *, collapse: bool) -> tuple[str, list[Span]]:
    """The prompt with `\r` removed and, if asked, newline runs collapsed (in the spans as well)."""
    for span in spans:
        span.text = span.text.replace("\r", "")
        if collapse:
            span.text = re.sub(r"\n+", "\n", span.text)
    prompt = "".join(s.text for s in spans)
    return (re.sub(r"\n+", "\n", prompt) if collapse else prompt), spans


def _set_prompt(messages: list[tuple[str, str]], fitting: int, *, parts: TextParts, pinned: str | None,
                chat_start: str, cycle: str, modify_last: _LastLine, padding: int, budget: int
                ) -> tuple[list[tuple[str, str]], int]:
    """`setPromptString` (the last line added to the newest message) and, for a continue, `checkPromptSize`:
    while the whole prompt is over the budget, one example less, then the oldest message out (the last line is
    added again each round, as SillyTavern does)."""
    current = list(messages)

    def set_prompt() -> None:
        if current:
            source, text = current[-1]
            current[-1] = (source, modify_last(text))

    set_prompt()
    for _ in range(_MAX_TRIM_ROUNDS if cycle else 0):
        examples = pinned if pinned is not None else "".join(parts.examples[:fitting])
        prompt = "".join([parts.story, examples, chat_start, "".join(t for _s, t in current), "\n",
                          modify_last(""), cycle]).replace("\r", "")
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
