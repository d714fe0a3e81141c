"""Filters of the text-completion pages."""

from django import template

from preview_app.text_preview import shown_stop as _shown_stop

register = template.Library()


@register.filter
def shown_stop(value: str) -> str:
    """A stop string with its newlines visible (`\\n`)."""
    return _shown_stop(value)
