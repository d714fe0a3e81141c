"""`{% load token_window %}`: the window bar and the across-models table of a result (preview_app.token_window)."""

from django import template

from preview_app import token_window

register = template.Library()


@register.filter
def window_view(result):
    return token_window.window_view(result)


@register.filter
def across_models(result):
    return token_window.across_models(result)


@register.simple_tag
def model_picker_choices():
    """`{% model_picker_choices as choices %}`: the model picker's options where no form renders it (the editor)."""
    return token_window.model_picker_choices()
