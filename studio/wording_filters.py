"""Template filters over `studio.wording`, registered as template builtins (config/settings.py): a page shows the
engine's codes in words with `{{ value|engine_word:"role" }}` while its `data-*` hooks keep the code."""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from studio import wording
from studio.refusal_lines import refusal_line as line_of

register = template.Library()


@register.filter
def engine_word(code, vocabulary: str) -> str:
    return wording.engine_word(vocabulary, code)


@register.filter
def history_entry(status) -> str:
    """`{{ message.history_status|history_entry }}`: what the host keeps of a request message, as the full preview's
    history entry column says it ("kept: already in history")."""
    return str(wording.HISTORY_STATUS_WORDS.get(status, status))


@register.filter
def node_names(names) -> list[str]:
    """Engine node names with their field in words (`wording.node_name`)."""
    return [wording.node_name(name) for name in names or ()]


@register.filter
def node_name(name) -> str:
    return wording.node_name(name)


@register.filter
def grouped(number) -> str:
    """A whole number with its thousands grouped by commas ("512,340") in every language, as the folded-row line
    (`history_window.run_words`) writes them: Django's Chinese format groups by nothing."""
    if isinstance(number, bool) or not isinstance(number, int):
        return number
    return f"{number:,}"


@register.filter
def term(shown, slug: str) -> str:
    """`{{ words|term:"pre-step" }}`: the words linked to their glossary line, the line as hover text."""
    from studio.glossary import term_link

    return term_link(slug, str(shown))


@register.filter
def code_meaning(code) -> str:
    """An error or diagnostic code's plain-language meaning, in the page's language."""
    return wording.meaning(str(code))


@register.simple_tag
def colon() -> str:
    """The colon after a label, as the page's language writes it: ": " in English, the full-width "：" (no space) in
    Chinese. Templates write `{% translate "Preview" %}{% colon %}{{ name }}`, never an ASCII colon after words."""
    return wording.label_colon()


@register.filter
def listed(items) -> str:
    """`{{ names|listed }}`: the items joined as the page's language lists them (", " or "、")."""
    return wording.list_words(items or ())


@register.filter
def refusal_line(error) -> str:
    """`{{ error|refusal_line }}`: a refusal's line (`CodedError.to_json`) in the page's language where the catalogue
    has its words (`studio.refusal_lines`), marked as English where it is shown as the engine wrote it."""
    line = line_of(error or {})
    place, path = _place_of(error)
    if place and line.lang is None and line.text.startswith(path):
        # the page names the refusal's path in its own words (the preset editor: a prompt as its row shows it)
        return format_html("{}{}", place, _with_code(line.text[len(path):], line.codes))
    text = _with_code(line.text, line.codes)
    return format_html('<span lang="{}">{}</span>', line.lang, text) if line.lang else text


def _place_of(error) -> tuple[str | None, str]:
    """A page's words for the refusal's path (`error["place"]`, markup its view made safe) and that path."""
    if not isinstance(error, dict) or not error.get("place"):
        return None, ""
    detail = error.get("detail")
    path = detail.get("path") if isinstance(detail, dict) else None
    return (error["place"], path) if isinstance(path, str) and path else (None, "")


_BACKTICKED = re.compile(r"`([^`\n]+)`")


def _with_code(text: str, codes: tuple[str, ...]) -> str:
    """`text` escaped, with what it sets in backticks and the field names a translated line lists (`codes`) as
    code, as the page shows names elsewhere."""
    if "`" not in text and not codes:
        return text
    named = re.compile("|".join(map(re.escape, sorted(set(codes), key=len, reverse=True)))) if codes else None
    parts = []
    for index, piece in enumerate(_BACKTICKED.split(text)):
        if index % 2:  # the text between a pair of backticks
            parts.append(format_html("<code>{}</code>", piece))
            continue
        last = 0
        for found in named.finditer(piece) if named is not None else ():
            parts += [conditional_escape(piece[last:found.start()]), format_html("<code>{}</code>", found.group())]
            last = found.end()
        parts.append(conditional_escape(piece[last:]))
    return mark_safe("".join(parts))  # noqa: S308 (each part is escaped)
