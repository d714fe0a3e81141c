"""Presenters of a text-completion result (text-completion.md): the prompt string as spans, each with the words of
its source (the context template's story string, a card field, a world-info entry, an example, a chat message and
its instruct sequences, an injection, the last line) and its tokens; the instruct sequences marked inside them; the
stop strings; the window bar (budget = max context - response length); and what was trimmed to fit.

Pure: they read the request and its result (and, for what was trimmed, the result of the same request with a
window nothing is trimmed from, which the view runs)."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from assembly import AssemblyResult
from preview_app.result_display import diagnostic_entries
from preview_app.token_window import WindowView, tokens_window
from strategies_app.text_templates import SEQUENCE_FIELDS
from studio.wording import excerpt

# source kind -> the colour class of its spans (`tsrc-<kind>` in text.css)
SOURCE_KINDS = ("story_string", "example", "examples", "chat_start", "message", "world_info", "author_note",
                "persona", "character", "post_history", "last_line", "alignment", "continued")
_MAX_NEEDLES = 80


@dataclass(frozen=True)
class Segment:
    text: str
    mark: str = ""  # "sequence" (an instruct sequence), "field" (a card or template field inside the story string)
    name: str = ""  # the instruct field or the card field
    label: str = ""


@dataclass
class SpanRow:
    index: int
    source: str
    kind: str  # colour: the first source's kind; a message's is message-<role>
    label: str
    tokens: int
    segments: list[Segment]
    excerpt: str
    sequences: list[str] = field(default_factory=list)  # instruct fields marked in it


@dataclass
class TextPreview:
    prompt: str
    rows: list[SpanRow]
    stop: list[str]
    window: WindowView
    total_tokens: int
    trimmed_messages: list[dict[str, str]]
    trimmed_examples: list[str]
    instruct_on: bool
    templates: list[tuple[str, str, int | None]]  # (kind, the template's name or "", its id): instruct, context, ...
    diagnostics: list[dict[str, Any]]  # preview_app.result_display.diagnostic_entries


def _field(value: Any, name: str, default: Any = "") -> Any:
    """A field of a resource as the request holds it: an engine model (a session's) or a JSON object."""
    return value.get(name, default) if isinstance(value, dict) else getattr(value, name, default)


def _entries(request: dict[str, Any]) -> dict[str, str]:
    """World-info uid -> the entry's name (its comment, else its uid)."""
    entries = _field(request["resources"].get("worldbook") or {}, "entries", ())
    if isinstance(entries, dict):  # SillyTavern's file: {"<uid>": entry}
        entries = list(entries.values())
    names = {}
    for entry in entries or ():
        uid = str(_field(entry, "uid", None))
        names[uid] = _field(entry, "comment", "") or uid
    return names


def _messages(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Message id -> {number, role, name, typed} for every message of the request's conversation."""
    conversation = request["conversation"]
    found = {}
    for number, message in enumerate([*conversation.get("history", ()), *conversation.get("input", ())], start=1):
        found[str(message.get("id"))] = {"number": number, "role": message.get("role", ""),
                                         "name": message.get("name") or "", "content": message.get("content", ""),
                                         "typed": message in conversation.get("input", ())}
    return found


def _part_label(part: str, request: dict[str, Any], messages: dict[str, dict[str, Any]],
                entries: dict[str, str]) -> str:
    kind, _sep, rest = part.partition(":")
    if kind == "message":
        message = messages.get(rest)
        if message is None:
            return _("message %(id)s") % {"id": rest}
        if message["typed"]:
            return _("the typed message (input)")
        who = message["name"] or message["role"]
        return _("message #%(number)s (%(who)s)") % {"number": message["number"], "who": who}
    if kind == "world_info":
        return _("world-info entry “%(name)s”") % {"name": entries.get(rest, rest)}
    if kind == "example":
        if rest.startswith("world_info:"):
            uid = rest.split(":", 1)[1]
            return _("example dialogue from world-info entry “%(name)s”") % {"name": entries.get(uid, uid)}
        return _("example dialogue (character card)")
    if kind == "character":
        return _("character's note (card depth prompt)")
    words = {"story_string": _("story string (context template)"), "examples": _("example dialogues (pinned)"),
             "chat_start": _("chat start (context template)"), "author_note": _("author's note"),
             "persona": _("persona description"), "post_history": _("post-history instructions"),
             "last_line": _("last line (instruct template, Start Reply With)"),
             "alignment": _("user alignment message (instruct template)"), "continued": _("the continued message")}
    return words.get(kind, part)


def source_label(source: str, request: dict[str, Any], messages=None, entries=None) -> str:
    """A span's source in words: "world-info entry “Gate” + author's note"."""
    messages = _messages(request) if messages is None else messages
    entries = _entries(request) if entries is None else entries
    return " + ".join(_part_label(part, request, messages, entries) for part in _parts(source))


def _parts(source: str) -> list[str]:
    """`author_note+world_info:5+world_info:6` -> its parts (a world-info uid may itself hold a colon)."""
    return [p for p in source.split("+") if p]


def _kind(source: str, messages: dict[str, dict[str, Any]]) -> str:
    first = _parts(source)[0] if source else ""
    kind, _sep, rest = first.partition(":")
    if kind == "message":
        role = (messages.get(rest) or {}).get("role", "user")
        return f"message-{role}"
    return kind if kind in SOURCE_KINDS else "other"


def _sequence_needles(instruct: dict[str, Any], user: str, char: str) -> list[tuple[str, str, str, str]]:
    """(text, mark, field, label) of every non-blank instruct sequence, with its {{name}} / {{user}} / {{char}}
    spellings as the prompt has them."""
    needles = []
    for name in SEQUENCE_FIELDS:
        value = instruct.get(name)
        if name == "stop_sequence" or not isinstance(value, str) or not value.strip():
            continue  # the stop sequence is a stop string, not a part of the prompt
        spellings = {value, value.rstrip("\n")}  # the newest message loses one trailing newline
        for speaker in (user, char, "System"):
            spellings.add(re.sub(r"\{\{name\}\}", speaker, value, flags=re.I))
        spellings = {re.sub(r"\{\{char\}\}", char, re.sub(r"\{\{user\}\}", user, s, flags=re.I), flags=re.I)
                     for s in spellings}
        needles += [(s, "sequence", name, _("instruct template: %(field)s") % {"field": name}) for s in spellings]
    return needles


def _field_needles(request: dict[str, Any], user: str, char: str) -> list[tuple[str, str, str, str]]:
    """The card's, persona's and system prompt's texts as they appear inside the story string."""
    resources = request["resources"]
    card = resources.get("character")
    persona = resources.get("persona")
    system = resources.get("system_prompt") or {}

    def text_of(value: Any, name: str) -> str:
        found = value.get(name) if isinstance(value, dict) else getattr(value, name, "")
        found = found if isinstance(found, str) else ""
        return re.sub(r"\{\{char\}\}", char, re.sub(r"\{\{user\}\}", user, found, flags=re.I), flags=re.I).strip()

    needles = [(text_of(card, name), "field", name, words) for name, words in (
        ("description", _("character card: description")), ("personality", _("character card: personality")),
        ("scenario", _("character card: scenario")))]
    needles.append((text_of(persona, "description"), "field", "persona", _("persona description")))
    if (resources.get("text_settings") or {}).get("sysprompt_enabled"):
        needles.append((text_of(system, "content"), "field", "system", _("system prompt")))
    return needles


# which instruct fields a span of each kind is made with: the name a sequence shared by several fields (ChatML's
# "<|im_end|>\n" ends user, character and system messages alike) is given in that span
_PREFERRED = {"message-user": ("input", "first_input", "last_input"),
              "message-assistant": ("output", "first_output", "last_output"),
              "message-system": ("system", "last_system"), "story_string": ("story_string",),
              "last_line": ("last_output", "output", "last_input", "input"),
              "alignment": ("first_input", "input")}


def _preferred(needles: list[tuple[str, str, str, str]], kind: str) -> list[tuple[str, str, str, str]]:
    prefixes = _PREFERRED.get(kind, ())
    return sorted(needles, key=lambda n: 0 if n[2].rsplit("_", 1)[0] in prefixes else 1)


def segments(text: str, needles: list[tuple[str, str, str, str]]) -> list[Segment]:
    """`text` cut where the needles occur (leftmost first; at one place the longest, then the earliest listed):
    marked segments between plain ones. Bounded: every round moves past one match, and a needle found nowhere
    further is dropped."""
    live = sorted(dict.fromkeys(n for n in needles if n[0].strip()), key=lambda n: -len(n[0]))[:_MAX_NEEDLES]
    out: list[Segment] = []
    pos = 0
    while pos < len(text) and live:
        best: tuple[int, tuple[str, str, str, str]] | None = None
        still = []
        for needle in live:
            at = text.find(needle[0], pos)
            if at == -1:
                continue
            still.append(needle)
            if best is None or at < best[0]:
                best = (at, needle)
        live = still
        if best is None:
            break
        at, (needle_text, mark, name, label) = best
        if at > pos:
            out.append(Segment(text[pos:at]))
        out.append(Segment(needle_text, mark, name, label))
        pos = at + len(needle_text)
    if pos < len(text):
        out.append(Segment(text[pos:]))
    return out


def shown_stop(value: str) -> str:
    """A stop string with its newlines and tabs visible (`\\n`), as JSON writes them."""
    return json.dumps(value, ensure_ascii=False)[1:-1]


def _trimmed(request: dict[str, Any], result: AssemblyResult, untrimmed: AssemblyResult | None,
             messages: dict[str, dict[str, Any]]) -> tuple[list[dict[str, str]], list[str]]:
    if untrimmed is None:
        return [], []
    sent = {part for span in result.request.spans or () for part in _parts(span.source)}
    could = [part for span in untrimmed.request.spans or () for part in _parts(span.source)]
    dropped = []
    for part in dict.fromkeys(could):
        if part.startswith("message:") and part not in sent:
            message = messages.get(part.split(":", 1)[1], {})
            dropped.append({"id": part.split(":", 1)[1], "label": _part_label(part, request, messages, {}),
                            "excerpt": excerpt(message.get("content", ""), 120)})
    kept_examples = [s for s in result.request.spans or () if s.source.startswith("example")]
    all_examples = [s for s in untrimmed.request.spans or () if s.source.startswith("example")]
    return dropped, [excerpt(s.text.strip(), 120) for s in all_examples[len(kept_examples):]]


def text_preview(request: dict[str, Any], result: AssemblyResult, *, untrimmed: AssemblyResult | None = None,
                 template_names: dict[str, str] | None = None) -> TextPreview:
    """The page's view of a text-completion result. `untrimmed`: the same request run with room for everything,
    to list the messages and examples the budget left out."""
    messages = _messages(request)
    entries = _entries(request)
    names = request.get("names") or {}
    user = names.get("user") or "User"
    card = request["resources"].get("character")
    char = names.get("char") or (card.get("name") if isinstance(card, dict) else getattr(card, "name", "")) or ""
    settings = request["resources"].get("text_settings") or {}
    instruct_on = bool(settings.get("instruct_enabled"))
    sequence_needles = _sequence_needles(request["resources"].get("instruct_template") or {}, user, char) \
        if instruct_on else []
    story_needles = _field_needles(request, user, char)
    rows = []
    for index, span in enumerate(result.request.spans or ()):
        kind = _kind(span.source, messages)
        needles = _preferred(sequence_needles, kind) + (story_needles if span.source == "story_string" else [])
        cut = segments(span.text, needles)
        if kind == "example":  # an example message is the user's or the character's: its opening sequence says
            opening = next((seg.name for seg in cut if seg.mark == "sequence"), "")
            speaker = {"input_sequence": "message-user", "output_sequence": "message-assistant"}.get(opening)
            if speaker is not None:
                cut = segments(span.text, _preferred(sequence_needles, speaker))
        rows.append(SpanRow(index=index, source=span.source, kind=kind,
                            label=source_label(span.source, request, messages, entries), tokens=span.tokens,
                            segments=cut, excerpt=excerpt(span.text.strip(), 80),
                            sequences=list(dict.fromkeys(s.name for s in cut if s.mark == "sequence"))))
    window = dataclasses.replace(tokens_window(result.tokens), source=_("the session's text-completion settings"),
                                 prompt_string=True)
    dropped, examples = _trimmed(request, result, untrimmed, messages)
    return TextPreview(prompt=result.request.prompt or "", rows=rows, stop=list(result.request.stop or ()),
                       window=window, total_tokens=result.tokens.request_total, trimmed_messages=dropped,
                       trimmed_examples=examples, instruct_on=instruct_on,
                       templates=[(kind, *_named((template_names or {}).get(kind))) for kind in
                                  ("instruct", "context", "sysprompt")],
                       diagnostics=diagnostic_entries(result))


def _named(value: Any) -> tuple[str, int | None]:
    """A template name, or a (name, id) pair, as (name, id)."""
    if isinstance(value, tuple):
        return value[0], value[1]
    return (value or ""), None


def untrimmed_request(request: dict[str, Any]) -> dict[str, Any]:
    """The same request with a window nothing is trimmed from (what it would send with room for everything)."""
    resources = request["resources"]
    settings = dict(resources.get("text_settings") or {})
    settings["max_context"] = int(settings.get("amount_gen", 512) or 0) + 10 ** 9
    return {**request, "resources": {**resources, "text_settings": settings}}
