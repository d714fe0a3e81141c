"""The text-completion settings form of a session: chat or text completion, its templates, instruct on or off, the
context size and response length, and SillyTavern's other text-completion settings (text-completion.md, Request)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from assembly.sillytavern.text_templates import read_custom_stopping_strings
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
    token_padding = forms.IntegerField(
        label=_("Token padding"), min_value=-2048, max_value=2048, required=False,
        help_text=_("Tokens SillyTavern keeps free on top of the response length, for its own estimate's error."))
    user_prompt_bias = forms.CharField(
        label=_("Start reply with"), required=False, strip=False, max_length=10000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("The text the reply begins with: after the last prompt line in text completion, as the last "
                    "assistant message in chat completion (SillyTavern's order)."))
    custom_stopping_strings = forms.CharField(
        label=_("Custom stopping strings"), required=False, max_length=10000,
        help_text=_('A JSON array of strings, as SillyTavern keeps them: ["\\nUser:", "THE END"].'))
    pin_examples = forms.BooleanField(
        label=_("Keep the example dialogues however long the chat is"), required=False,
        help_text=_("SillyTavern's Example Messages Behavior, for chat and text completion alike."))
    strip_examples = forms.BooleanField(
        label=_("Leave the example dialogues out"), required=False,
        help_text=_("For chat and text completion alike, with the world info at the examples' positions."))
    collapse_newlines = forms.BooleanField(label=_("Collapse repeated blank lines"), required=False)
    prefer_character_prompt = forms.BooleanField(label=_("Prefer the card's system prompt"), required=False)
    prefer_character_jailbreak = forms.BooleanField(label=_("Prefer the card's post-history instructions"),
                                                    required=False)

    def clean_custom_stopping_strings(self) -> str:
        value = self.cleaned_data["custom_stopping_strings"]
        if not value.strip():
            return ""
        if read_custom_stopping_strings(value)[1] is not None:  # what SillyTavern would drop without a word
            raise forms.ValidationError(_("Write a JSON array of strings, such as [\"\\nUser:\"]: SillyTavern ignores "
                                          "anything else."))
        return value

    def clean(self):
        data = super().clean()
        if data.get("max_context") is not None and data.get("amount_gen") is not None \
                and data["amount_gen"] >= data["max_context"]:
            raise forms.ValidationError(_("The response length must be smaller than the context size."))
        return data
