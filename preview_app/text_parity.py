"""The parity check of a text-completion session: the prompt string SillyTavern sent (pasted as it is, or the
backend's JSON body: `prompt` with `stop` / `stop_sequence` / `stopping_strings`, as KoboldCpp, llama.cpp and
text-generation-webui receive it) beside the prompt builtin-st builds, with the first difference and the lines
that differ, and the stop strings when the body carries them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from preview_app.text_preview import shown_stop
from studio.errors import invalid

CONTEXT_CHARS = 80
STOP_KEYS = ("stop", "stop_sequence", "stopping_strings")  # the stop strings' key in each backend's body


@dataclass(frozen=True)
class SentText:
    prompt: str
    stop: tuple[str, ...] | None = None  # None: not given
    notes: tuple[str, ...] = ()


def read_sent_text(value: Any, *, path: str = "sent") -> SentText:
    """A pasted prompt string, or a backend body (JSON object with `prompt`): the prompt and its stop strings."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{"):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth: a prompt string
                parsed = None
            if isinstance(parsed, dict) and "prompt" in parsed:
                return read_sent_text(parsed, path=path)
        if not value:
            raise invalid(path, "the prompt string SillyTavern sent, or its request body")
        return SentText(prompt=value.replace("\r\n", "\n"))
    if not isinstance(value, dict) or not isinstance(value.get("prompt"), str):
        raise invalid(f"{path}.prompt", "the prompt string")
    stop, notes = None, []
    for key in STOP_KEYS:
        if key in value:
            found = value[key]
            if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
                raise invalid(f"{path}.{key}", "a list of strings")
            stop = tuple(found)
            break
    other = sorted(k for k in value if k not in ("prompt", *STOP_KEYS))
    if other:
        notes.append(_("not compared (sampling and backend settings): %(keys)s") % {"keys": ", ".join(other)})
    return SentText(prompt=value["prompt"], stop=stop, notes=tuple(notes))


@dataclass
class TextParity:
    identical: bool
    prompt_same: bool
    at: int | None  # the first differing character, None when the prompts are the same
    line: int | None  # its line (1-based)
    assembled_around: str
    sent_around: str
    stop_same: bool | None  # None: the body carried no stop strings
    assembled_stop: list[str]
    sent_stop: list[str] | None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "identical": self.identical, "prompt_same": self.prompt_same, "at": self.at,
                "line": self.line, "assembled": self.assembled_around, "sent": self.sent_around,
                "stop_same": self.stop_same, "assembled_stop": self.assembled_stop, "sent_stop": self.sent_stop,
                "notes": self.notes}


def _first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    limit = min(len(a), len(b))
    return next((i for i in range(limit) if a[i] != b[i]), limit)


def _around(text: str, at: int) -> str:
    start = max(0, at - CONTEXT_CHARS)
    return ("…" if start else "") + shown_stop(text[start:at + CONTEXT_CHARS]) + \
        ("…" if at + CONTEXT_CHARS < len(text) else "")


def text_parity(prompt: str, stop: list[str], sent: SentText) -> TextParity:
    """The studio's prompt and stop strings against what was sent."""
    at = _first_difference(prompt, sent.prompt)
    stop_same = None if sent.stop is None else list(sent.stop) == list(stop)
    return TextParity(
        identical=at is None and stop_same is not False, prompt_same=at is None, at=at,
        line=None if at is None else prompt.count("\n", 0, at) + 1,
        assembled_around="" if at is None else _around(prompt, at),
        sent_around="" if at is None else _around(sent.prompt, at), stop_same=stop_same,
        assembled_stop=list(stop), sent_stop=None if sent.stop is None else list(sent.stop), notes=list(sent.notes))
