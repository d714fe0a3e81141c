"""`{{ run|run_words }}`: a folded run of history in words (studio.history_window)."""

from django import template

from studio.history_window import run_words as _run_words

register = template.Library()


@register.filter
def run_words(run) -> str:
    return _run_words(run)
