"""The models people run: name -> encoding, context window, reply reserve and chat framing (engine.md §3).

A name is matched as SillyTavern's `getTokenizerModel` matches it: lower-cased, the first row whose pattern it
contains wins (rows run from the most specific to the least), and a name no row knows falls back to SillyTavern's
default, `gpt-3.5-turbo`'s cl100k_base, labelled approximate. `exact` says whether the encoding is the model's own;
Claude and Gemini have no faithful tokenizer offline, so their rows say which encoding approximates them.

Framing is what the family's chat format adds around the messages, as its API counts a request:
- openai: the cookbook's count, 3 per message + the role's tokens, +1 and the name's tokens per name, 3 for the reply.
- llama3: `<|begin_of_text|>` once; per message `<|start_header_id|>` role `<|end_header_id|>` "\\n\\n" ... `<|eot_id|>`;
  the reply's header (llama_models.llama3.chat_format).
- chatml (Qwen): per message `<|im_start|>` role "\\n" ... `<|im_end|>` "\\n"; the reply's `<|im_start|>assistant\\n`.
- mistral: `<s>` once; `[INST]` ... `[/INST]` around user turns, `</s>` after assistant ones; a system prompt joins the
  last user turn with "\\n\\n" (mistral_common's instruct tokenizer; joined, its boundary can count a token or two
  otherwise than the parts alone).
- deepseek: `<｜begin▁of▁sentence｜>` once; `<｜User｜>` before user turns, `<｜Assistant｜>` ... `<｜end▁of▁sentence｜>`
  around assistant ones, `<｜Assistant｜>` for the reply (DeepSeek V3's chat template).
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from assembly.tokens import ENCODINGS, count_tokens


class Framing(BaseModel):
    """Tokens a chat format adds: once per request, per message of each role (plus the role's own tokens where the
    format spells the role out), per message name, and to open the reply."""

    model_config = ConfigDict(frozen=True)
    name: str
    per_request: int
    per_message: Mapping[str, int]
    role_text: Mapping[str, str] = {}  # text the format adds per message of a role, counted in the encoding
    role_tokens: bool
    per_name: int
    name_tokens: bool
    reply: int


FRAMINGS: dict[str, Framing] = {f.name: f for f in (
    Framing(name="openai", per_request=0, per_message={"system": 3, "user": 3, "assistant": 3, "tool": 3},
            role_tokens=True, per_name=1, name_tokens=True, reply=3),
    Framing(name="llama3", per_request=1, per_message={"system": 4, "user": 4, "assistant": 4, "tool": 4},
            role_tokens=True, per_name=0, name_tokens=False, reply=4),
    Framing(name="chatml", per_request=0, per_message={"system": 4, "user": 4, "assistant": 4, "tool": 4},
            role_tokens=True, per_name=0, name_tokens=False, reply=3),
    Framing(name="mistral", per_request=1, per_message={"system": 0, "user": 2, "assistant": 1, "tool": 2},
            role_text={"system": "\n\n"}, role_tokens=False, per_name=0, name_tokens=False, reply=0),
    Framing(name="deepseek", per_request=1, per_message={"system": 0, "user": 1, "assistant": 2, "tool": 2},
            role_tokens=False, per_name=0, name_tokens=False, reply=1),
)}

# The framing of each encoding's own family (a request that names an encoding and no model is framed by it).
ENCODING_FRAMING = {"o200k_base": "openai", "cl100k_base": "openai", "llama3": "llama3", "mistral-tekken": "mistral",
                    "mistral-v3": "mistral", "qwen2": "chatml", "deepseek": "deepseek"}

_DEFAULT_RESERVE = 1024


class ModelEntry(BaseModel):
    """A catalogue row: the name patterns it answers for and what the model counts with."""

    model_config = ConfigDict(frozen=True)
    model: str  # the row's own (canonical) model name
    patterns: tuple[str, ...]  # lower-case substrings; `^` first means the name must start with it
    family: str
    encoding: str
    framing: str
    context_window: int | None
    reply_reserve: int | None
    exact: bool
    approximated_by: str | None = None  # for approximate rows: which encoding stands in, in words


def _row(model: str, patterns: tuple[str, ...], family: str, encoding: str, window: int | None, *,
         exact: bool = True, reserve: int | None = _DEFAULT_RESERVE, framing: str | None = None) -> ModelEntry:
    return ModelEntry(model=model, patterns=patterns, family=family, encoding=encoding,
                      framing=framing or ENCODING_FRAMING[encoding], context_window=window,
                      reply_reserve=reserve if window is not None else None, exact=exact,
                      approximated_by=None if exact else encoding)


# Most specific first: the first row whose pattern the name contains wins.
CATALOGUE: tuple[ModelEntry, ...] = (
    _row("gpt-4.1", ("gpt-4.1",), "openai", "o200k_base", 1_047_576),
    _row("gpt-4.5", ("gpt-4.5",), "openai", "o200k_base", 128_000),
    _row("gpt-4o", ("gpt-4o", "chatgpt-4o"), "openai", "o200k_base", 128_000),
    _row("gpt-5", ("gpt-5",), "openai", "o200k_base", 400_000),
    _row("o3", ("^o1", "^o3", "^o4"), "openai", "o200k_base", 200_000),
    _row("gpt-4-turbo", ("gpt-4-turbo", "gpt-4-1106", "gpt-4-0125"), "openai", "cl100k_base", 128_000),
    _row("gpt-4-32k", ("gpt-4-32k",), "openai", "cl100k_base", 32_768),
    _row("gpt-4", ("gpt-4",), "openai", "cl100k_base", 8_192),
    _row("gpt-3.5-turbo", ("gpt-3.5-turbo",), "openai", "cl100k_base", 16_385),
    _row("llama-3.1-8b-instruct", ("llama-3.1", "llama3.1", "llama-3.2", "llama3.2", "llama-3.3", "llama3.3"),
         "llama3", "llama3", 131_072),
    _row("llama-3-8b-instruct", ("llama-3", "llama3"), "llama3", "llama3", 8_192),
    _row("mistral-nemo", ("nemo", "pixtral", "ministral"), "mistral", "mistral-tekken", 131_072),
    _row("mistral-small-3", ("mistral-small-3", "mistral-small-2501", "mistral-small-2503", "mistral-small-24b"),
         "mistral", "mistral-tekken", 32_768),
    _row("mixtral-8x22b", ("mixtral-8x22b",), "mistral", "mistral-v3", 65_536),
    _row("mistral-large-2407", ("mistral-large",), "mistral", "mistral-v3", 131_072),
    _row("mistral-7b-instruct-v0.3", ("mixtral", "mistral"), "mistral", "mistral-v3", 32_768),
    # Qwen 3.5 / 3.6 ship a new vocabulary that qwen2 only approximates.
    _row("qwen3.6", ("qwen3.5", "qwen3.6"), "qwen", "qwen2", 262_144, exact=False),
    _row("qwen2.5-7b-instruct", ("qwen", "qwq"), "qwen", "qwen2", 32_768),
    _row("deepseek-v4", ("deepseek-v4",), "deepseek", "deepseek", 1_048_576),
    _row("deepseek-chat", ("deepseek",), "deepseek", "deepseek", 131_072),
    _row("claude", ("claude",), "claude", "cl100k_base", 200_000, exact=False),
    _row("gemini", ("gemini", "learnlm"), "gemini", "o200k_base", 1_048_576, exact=False),
    _row("gemma", ("gemma",), "gemini", "o200k_base", 8_192, exact=False),
)

# SillyTavern's answer for a name it does not know: gpt-3.5-turbo's encoding; the window is the caller's to give.
FALLBACK = _row("gpt-3.5-turbo", (), "openai", "cl100k_base", None, exact=False)

# The model each encoding is shown with where a table lists every encoding once.
ENCODING_MODELS = {"o200k_base": "gpt-4o", "cl100k_base": "gpt-4", "llama3": "llama-3.1-8b-instruct",
                   "mistral-tekken": "mistral-nemo", "mistral-v3": "mistral-7b-instruct-v0.3",
                   "qwen2": "qwen2.5-7b-instruct", "deepseek": "deepseek-chat"}


def _matches(name: str, pattern: str) -> bool:
    if pattern.startswith("^"):
        # A prefix row also answers for a provider-prefixed name ("openai/o3-mini").
        return name.startswith(pattern[1:]) or name.rpartition("/")[2].startswith(pattern[1:])
    return pattern in name


def model_entry(model: str) -> ModelEntry:
    """The catalogue row of a model name (SillyTavern's best match), or the approximate fallback."""
    name = model.strip().lower()
    for entry in CATALOGUE:
        if any(_matches(name, pattern) for pattern in entry.patterns):
            return entry
    return FALLBACK


def encoding_entry(encoding: str) -> ModelEntry:
    """The row an encoding is shown with (its family's representative model)."""
    return _ENCODING_ENTRIES[encoding]


def model_choices() -> list[ModelEntry]:
    """One row per catalogue model, in catalogue order (the studio's picker)."""
    return list(CATALOGUE)


class FramedMessage(Protocol):
    role: str
    content: str
    name: str | None


def request_total(messages: Iterable[FramedMessage], encoding: str, framing: Framing) -> int:
    """The request as the model's API counts it: every message's content in `encoding` plus the chat format's own
    tokens (counts are cached, so the encoding the request was built with costs nothing again)."""
    messages = list(messages)
    return sum(count_tokens(m.content, encoding) for m in messages) + framing_total(messages, encoding, framing)


def _role_cost(role: str, encoding: str, framing: Framing) -> int:
    """What one message of `role` costs in the chat format, beside its content."""
    per_message = framing.per_message
    cost = per_message.get(role, max(per_message.values()))
    if framing.role_tokens:
        cost += count_tokens(role, encoding)
    if role in framing.role_text:
        cost += count_tokens(framing.role_text[role], encoding)
    return cost


def framing_total(messages: Iterable[FramedMessage], encoding: str, framing: Framing) -> int:
    """The tokens the chat format adds to these messages (`request_total` less their contents): for a caller that
    already holds the contents' count in `encoding`."""
    messages = messages if isinstance(messages, list) else list(messages)
    total = framing.per_request + framing.reply
    # the messages tallied by role; a role's cost is worked out once
    for role, count in Counter([m.role for m in messages]).items():
        total += _role_cost(role, encoding, framing) * count
    if framing.name_tokens:
        for message in messages:
            if message.name:
                total += framing.per_name + count_tokens(message.name, encoding)
    return total


assert set(ENCODING_FRAMING) == set(ENCODINGS) == set(ENCODING_MODELS)
# each encoding's row, matched once: every request without a model name reads it
_ENCODING_ENTRIES = {encoding: model_entry(name) for encoding, name in ENCODING_MODELS.items()}
