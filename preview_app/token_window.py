"""Presenters of a result's tokens against the context window (web.md screen 3): the bar, and the same request counted by
every encoding the engine ships ("across models"). Pure: they read the AssemblyResult and the model catalogue."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.translation import gettext as _

from assembly.model_catalogue import (
    FRAMINGS,
    FramedMessage,
    ModelEntry,
    encoding_entry,
    model_choices,
    model_entry,
    request_total,
)
from assembly.results import AssemblyResult, TokenSummary
from assembly.tokens import ENCODINGS, count_tokens
from preview_app.goldens import GoldenStatus, stored_messages


@dataclass(frozen=True)
class WindowView:
    """The request total against the window: the bar's three parts (percent of the window) and its numbers."""

    request_total: int
    context_window: int | None
    reply_reserve: int
    fits: bool | None
    over_by: int
    used_percent: float
    reserve_percent: float
    source: str  # what set the window, the whole phrase in words ("window from ..."; "" when none did)
    tokenizer: str
    exact: bool
    model: str | None
    content_total: int | None = None  # the messages' own text, without the chat format's framing (None: not known)
    prompt_string: bool = False  # a text-completion prompt: one string, no chat framing to bill


def _percent(part: int, whole: int) -> float:
    return round(min(100.0, 100 * part / whole), 2) if whole else 0.0


def window_view(result: AssemblyResult) -> WindowView:
    return tokens_window(result.tokens)


def tokens_window(tokens: TokenSummary) -> WindowView:
    """The bar of a result's token summary (a stored result's too: a golden's fresh run)."""
    window, reserve = tokens.context_window, tokens.reply_reserve or 0
    over_by = max(0, tokens.request_total + reserve - window) if window else 0
    used = _percent(tokens.request_total, window) if window else 0.0
    # whole phrases: the Chinese joins its words to what set the window as each needs (a space before a Latin word)
    sources = {"budget": _("window from the budget you set"),
               "preset": _("window from the SillyTavern preset's context size"),
               "model": _("window from the model's context window")}
    return WindowView(
        request_total=tokens.request_total, context_window=window, reply_reserve=reserve, fits=tokens.fits,
        over_by=over_by, used_percent=used,
        reserve_percent=min(_percent(reserve, window), round(100 - used, 2)) if window else 0.0,
        source=sources.get(tokens.window_source or "", ""), tokenizer=tokens.tokenizer, exact=tokens.exact,
        model=tokens.model, content_total=tokens.total if tokens.total != tokens.request_total else None)


def model_window(messages: Iterable[FramedMessage], model: str) -> WindowView:
    """`messages` counted as `model` counts them, against its window: the bar of a request that was built for
    another tokenizer (a golden's fresh run), without running it again."""
    entry = model_entry(model)
    total = request_total(messages, entry.encoding, FRAMINGS[entry.framing])
    window = entry.context_window
    return tokens_window(TokenSummary(
        total=total, by_module={}, tokenizer=entry.encoding, model=model, family=entry.family, exact=entry.exact,
        framing=entry.framing, request_total=total, context_window=window, reply_reserve=entry.reply_reserve,
        window_source="model" if window else None,
        fits=None if window is None else total + (entry.reply_reserve or 0) <= window))


def golden_window(status: GoldenStatus, model: str | None) -> WindowView | None:
    """A golden's fresh run against the window: as `model` counts it when one is picked, else as it was counted;
    None when the engine refused it."""
    if status.error is not None:
        return None
    if model:
        return model_window(stored_messages(status.fresh), model)
    return tokens_window(TokenSummary.model_validate(status.fresh["tokens"]))


@dataclass(frozen=True)
class AcrossRow:
    encoding: str
    model: str
    request_total: int
    context_window: int
    reply_reserve: int
    fits: bool
    over_by: int
    current: bool  # the encoding the page counts with


def across_models(result: AssemblyResult) -> list[AcrossRow]:
    """The request's messages counted by every encoding, framed by its family, against its model's window; a
    text-completion prompt (one string, no chat framing) by the estimate it was built with and by every encoding,
    against the session's context size less the response length."""
    if result.request.prompt is not None:
        return _text_across(result)
    rows = []
    messages = result.request.messages
    for encoding in ENCODINGS:
        entry = encoding_entry(encoding)
        total = request_total(messages, encoding, FRAMINGS[entry.framing])
        window, reserve = entry.context_window or 0, entry.reply_reserve or 0
        over_by = max(0, total + reserve - window)
        rows.append(AcrossRow(encoding=encoding, model=entry.model, request_total=total, context_window=window,
                              reply_reserve=reserve, fits=not over_by, over_by=over_by,
                              current=encoding == result.tokens.tokenizer))
    return rows


def _text_across(result: AssemblyResult) -> list[AcrossRow]:
    tokens, prompt = result.tokens, result.request.prompt or ""
    window, reserve = tokens.context_window or 0, tokens.reply_reserve or 0
    counted = [(tokens.tokenizer, _("SillyTavern's “None / Estimated”"), tokens.request_total)]
    counted += [(encoding, encoding_entry(encoding).model, count_tokens(prompt, encoding)) for encoding in ENCODINGS]
    rows = []
    for encoding, model, total in counted:
        over_by = max(0, total + reserve - window)
        rows.append(AcrossRow(encoding=encoding, model=model, request_total=total, context_window=window,
                              reply_reserve=reserve, fits=not over_by, over_by=over_by,
                              current=encoding == tokens.tokenizer))
    return rows


def model_choice_label(entry: ModelEntry) -> str:
    """A picker option: the model, the tokenizer that counts it and whether that count is exact."""
    exactness = _("exact") if entry.exact else _("approximate")
    return f"{entry.model} · {entry.encoding} · {exactness}"


def model_picker_choices() -> list[tuple[str, str]]:
    return [("", _("— none (count with the tokenizer) —"))] + [
        (entry.model, model_choice_label(entry)) for entry in model_choices()]
