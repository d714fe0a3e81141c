"""Choice widgets that write their options themselves, in Django's own markup: Django renders a template per option
(about 0.1 ms each), so a session form offering a studio's hundreds of personas, cards and world books took a
quarter of a second to write."""

from __future__ import annotations

from django import forms
from django.forms.utils import flatatt
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


class PlainSelect(forms.Select):
    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]
        parts = []
        for group_name, options, _index in widget["optgroups"]:
            written = format_html_join("", '\n  <option value="{}"{}>{}</option>', (
                (option["value"], flatatt(option["attrs"]), option["label"]) for option in options))
            parts.append(format_html('\n  <optgroup label="{}">{}\n  </optgroup>', group_name, written)
                         if group_name else written)
        return format_html('<select name="{}"{}>{}\n</select>', widget["name"], flatatt(widget["attrs"]),
                           SafeString("".join(parts)))


def _checkboxes(widget: forms.CheckboxSelectMultiple, name, value, attrs) -> SafeString:
    """The widget's checkboxes, each in a div with its label; a group's in a div of its own under its name."""
    context = widget.get_context(name, value, attrs)["widget"]
    parts = []
    for group_name, options, _index in context["optgroups"]:
        boxes = format_html_join("", '<div>\n    <label{}><input type="{}" name="{}" value="{}"{}>\n {}</label>\n\n</div>', (
            (flatatt({"for": option["attrs"]["id"]} if option["attrs"].get("id") else {}), widget.input_type,
             option["name"], option["value"], flatatt(option["attrs"]), option["label"]) for option in options))
        parts.append(format_html("\n  <div><label>{}</label>{}\n  </div>", group_name, boxes) if group_name else boxes)
    own = context["attrs"].get("id")
    return format_html("<div{}>{}\n</div>", flatatt({"id": own} if own else {}), SafeString("".join(parts)))


class PlainCheckboxes(forms.CheckboxSelectMultiple):
    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        return _checkboxes(self, name, value, attrs)
