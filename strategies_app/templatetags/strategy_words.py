"""`{{ name|one_language }}`: a strategy name in the page's language (a built-in's bilingual name, or a copy's)."""

from django import template

from strategies_app.presenters import strategy_name

register = template.Library()


@register.filter
def one_language(name: str) -> str:
    return strategy_name(name or "")
