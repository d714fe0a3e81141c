"""`{% with shown=messages|page_flash %}`: the messages the page's top flash shows. One tagged "composer" is shown by
the session page's composer instead (inside the chat htmx swaps), so the page without JavaScript says it once."""

from django import template

register = template.Library()

COMPOSER_TAG = "composer"  # the extra tag session_views.session_say gives the commit notice


@register.filter
def page_flash(messages) -> list:
    return [message for message in messages if COMPOSER_TAG not in message.tags.split()]
