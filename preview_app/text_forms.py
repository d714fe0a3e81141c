"""The text-completion settings form of a session (chat or text completion, its templates, instruct on or off, the
context size and response length)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from strategies_app.models import TextTemplate


class TemplateChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: TextTemplate) -> str:
        # one sentence to translate: Chinese puts the word in full-width brackets, "ChatML（内置）"
        return str(_("%(name)s (built-in)") % {"name": obj.name}) if obj.builtin else obj.name


def _templates(kind: str, label, empty) -> TemplateChoice:
    return TemplateChoice(queryset=TextTemplate.objects.filter(kind=kind), required=False, label=label,
                          empty_label=empty)


class TextSettingsForm(forms.Form):
    completion = forms.ChoiceField(label=_("Completion"), help_text=_(
        "Chat completion sends the list of messages the applied strategy builds; text completion sends the one prompt "
        "string SillyTavern builds for a local model with the templates below."), choices=[
        ("chat", _("Chat completion (a list of messages)")),
        ("text", _("Text completion (one prompt string)"))])
    instruct_template = _templates("instruct", _("Instruct template"), _("— SillyTavern's defaults —"))
    instruct_enabled = forms.BooleanField(label=_("Instruct mode on"), required=False)
    context_template = _templates("context", _("Context template"), _("— SillyTavern's defaults —"))
    sysprompt_template = _templates("sysprompt", _("System prompt"), _("— none (system prompt off) —"))
    max_context = forms.IntegerField(label=_("Context size (tokens)"), min_value=1, max_value=10_000_000)
    amount_gen = forms.IntegerField(label=_("Response length (tokens)"), min_value=0, max_value=10_000_000)

    def clean(self):
        data = super().clean()
        if data.get("max_context") is not None and data.get("amount_gen") is not None \
                and data["amount_gen"] >= data["max_context"]:
            raise forms.ValidationError(_("The response length must be smaller than the context size."))
        return data
