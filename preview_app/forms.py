"""The forms of the session, preview, compare and golden pages. They check shapes and say which field is wrong;
the services decide everything else (and raise the same error shape when they refuse)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from assembly.catalogue import BUILTIN_NAMES
from assembly.request import MAX_CONTEXT_WINDOW
from assembly.strategy import strategy_backend
from assembly.tokens import ENCODINGS
from preview_app.macro_variables import MACRO_ENGINE_WORDS
from preview_app.previews import chat_variables
from preview_app.services import (
    EVENT_ROLES,
    MAX_MACRO_VARIABLES,
    author_note_settings,
    clock_checked,
    extension_prompt_settings,
    host_settings,
    macro_variables_checked,
)
from preview_app.token_window import model_picker_choices
from strategies_app.forms import generation_choices
from strategies_app.models import Character, Persona, Preset, RegexScript, WorldBook
from strategies_app.presenters import strategy_name
from strategies_app.selectors import visible_strategies
from studio.choice_widgets import PlainCheckboxes, PlainSelect
from studio.errors import ServiceError
from studio.input_boundary import StrictJSONField
from studio.wording import ENGINE_WORDS

SYSTEM_UPDATE_CHOICES = [("head", _("head: the system prompt is re-sent at the top of every request")),
                         ("in-history", _("in-history: a changed system prompt is recorded in the history"))]


NOTE_POSITION_CHOICES = [("in_chat", _("In the chat, at a depth")), ("before_main", _("Before the main prompt")),
                         ("after_main", _("After the main prompt"))]
MACRO_ENGINE_CHOICES = list(MACRO_ENGINE_WORDS.items())
NOTE_ROLE_CHOICES = [(role, ENGINE_WORDS["role"][role]) for role in ("system", "user", "assistant")]


class JSONListField(StrictJSONField):  # the input boundary: no NaN, NUL, surrogates, deep JSON
    """A JSON textarea that must hold a list (blank is an empty list)."""

    def __init__(self, *, item: str, **kwargs):
        self.item = item
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if value in (None, "", []):
            return ""
        return json.dumps(value, ensure_ascii=False, indent=1) if isinstance(value, list) else super().prepare_value(
            value)

    def clean(self, value):
        if value in (None, "") or (isinstance(value, str) and not value.strip()):
            return []
        parsed = super().clean(value)
        if not isinstance(parsed, list):
            raise forms.ValidationError(_("Expected a JSON list of %(item)s.") % {"item": self.item})
        return parsed


class JSONObjectField(StrictJSONField):
    """A JSON textarea that must hold an object (blank is an empty object)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if value in (None, "", {}):
            return ""
        # one name a line: a long value wraps under its own name instead of running into the next one
        return json.dumps(value, ensure_ascii=False, indent=1) if isinstance(value, dict) else super().prepare_value(
            value)

    def to_python(self, value):
        try:
            return super().to_python(value)
        except forms.ValidationError as error:
            if getattr(error, "code", None) != "invalid" or not isinstance(value, str):
                raise
            try:
                json.loads(value)
            except json.JSONDecodeError as bad:  # the field and where its text stops being JSON
                raise forms.ValidationError(
                    _("%(field)s: not valid JSON (line %(line)s, column %(column)s).")
                    % {"field": self.label, "line": bad.lineno, "column": bad.colno}, code="invalid") from None
            raise

    def clean(self, value):
        if value in (None, "") or (isinstance(value, str) and not value.strip()):
            return {}
        parsed = super().clean(value)
        if not isinstance(parsed, dict):
            raise forms.ValidationError(_("%(field)s: expected a JSON object of names and values.") % {
                "field": self.label})
        return parsed


class RegexScriptChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj) -> str:
        return str(obj) if not obj.disabled else _("%(name)s (disabled: runs nothing)") % {"name": obj}


class TellApartChoiceField(forms.ModelChoiceField):
    """A resource picker whose option names a resource by its name, and by its id too when another resource of
    the kind has the same name (a card imported twice), so the two can be told apart."""

    def label_from_instance(self, obj) -> str:
        shared = getattr(self, "_shared", None)
        if shared is None:
            counts = Counter(self.queryset.values_list("name", flat=True))
            shared = self._shared = {name for name, count in counts.items() if count > 1}
        return _("%(name)s (id %(id)s)") % {"name": obj.name, "id": obj.pk} if obj.name in shared else str(obj)


class SessionForm(forms.Form):
    """A session's name, resources, host settings and current input."""

    name = forms.CharField(label=_("Name"), max_length=200)
    preset = TellApartChoiceField(label=_("Preset"), queryset=Preset.objects.all(), required=False,
                                  empty_label=_("(none)"), widget=PlainSelect)
    character = TellApartChoiceField(label=_("Character"), queryset=Character.objects.all(), required=False,
                                     empty_label=_("(none)"), widget=PlainSelect)
    persona = forms.ModelChoiceField(label=_("Persona"), queryset=Persona.objects.all(), required=False,
                                     empty_label=_("(none)"), widget=PlainSelect)
    world_books = forms.ModelMultipleChoiceField(label=_("World books"), queryset=WorldBook.objects.all(),
                                                 required=False, widget=PlainCheckboxes)
    world_info_activation = forms.ChoiceField(
        label=_("World info activation"), initial="book", required=False, choices=[
            ("book", _("as each book says (a book without a setting: every enabled entry)")),
            ("keywords", _("keyword scan, as SillyTavern does")),
            ("all", _("every enabled entry (the host chose them)"))])
    chat_lore = forms.ModelChoiceField(
        label=_("Chat lore: the world book bound to this chat"), queryset=WorldBook.objects.all(), required=False,
        empty_label=_("(none)"), widget=PlainSelect,
        help_text=_("Read before every other book, as SillyTavern reads a chat's own book."))
    card_lore = forms.BooleanField(
        label=_("Use the character card's own world book as character lore"), required=False,
        help_text=_("As SillyTavern does once the card's book is imported and linked; a selected book with the same "
                    "name is not loaded twice."))
    regex_scripts = RegexScriptChoiceField(
        label=_("Regex scripts (global)"), queryset=RegexScript.objects.all(), required=False,
        widget=PlainCheckboxes,
        help_text=_("SillyTavern's global regex scripts this chat runs, in the resources page's order, before the "
                    "preset's and the card's own scripts (builtin-st)."))
    core_available = forms.BooleanField(label=_("The host has the advanced (core) backend"), required=False)
    native_available = forms.BooleanField(label=_("The host offers standard (native) system-prompt assembly"),
                                          required=False, initial=True)
    system_prompt_update = forms.ChoiceField(label=_("How the host records a changed system prompt"),
                                             choices=SYSTEM_UPDATE_CHOICES, initial="head")
    official_sections = JSONListField(
        label=_("Official sections"), item=_("sections"),
        help_text=_('The host\'s own system prompt sections, e.g. [{"name": "base", "text": "Work in {{cwd}}"}].'))
    contexts = JSONListField(
        label=_("Runtime contexts"), item=_("contexts"),
        help_text=_('Runtime-context sections, e.g. [{"name": "sandbox:policy", "text": "..."}].'))
    variables = JSONObjectField(
        label=_("Variables"),
        help_text=_('Values for {{variables}} in host sections and custom text, e.g. {"cwd": "/tmp"}.'))
    current_input = forms.CharField(label=_("Current input (the user message this turn sends)"), required=False,
                                    strip=False, widget=forms.Textarea(attrs={"rows": 3}))
    note_content = forms.CharField(label=_("Note text"), required=False, strip=False,
                                   widget=forms.Textarea(attrs={"rows": 2}),
                                   help_text=_("Leave blank for no author's note. Macros such as {{char}} work."))
    note_position = forms.ChoiceField(label=_("Position"), choices=NOTE_POSITION_CHOICES, initial="in_chat",
                                      required=False)
    note_depth = forms.IntegerField(label=_("Depth (messages from the end)"), min_value=0, max_value=10000,
                                    initial=4, required=False)
    note_role = forms.ChoiceField(label=_("Role"), choices=NOTE_ROLE_CHOICES, initial="system",
                                  required=False)
    note_interval = forms.IntegerField(label=_("Insertion frequency (0 = off)"), min_value=0,
                                       max_value=10000, initial=1, required=False)
    note_allow_wi_scan = forms.BooleanField(label=_("World info scans the note for keywords"), required=False)
    extension_prompts = JSONListField(
        label=_("Extension prompts"), item=_("extension prompts"),
        help_text=_('Other extensions\' prompts, e.g. [{"key": "1_memory", "content": "Summary: ...", "position": '
                    '"in_chat", "depth": 2}] (position in_chat, before_main or after_main; role; scan).'))
    macro_engine = forms.ChoiceField(
        label=_("Macro engine"), choices=MACRO_ENGINE_CHOICES, initial="legacy", required=False,
        help_text=_("SillyTavern's two macro engines: the legacy one, or Macros 2.0 with nested macros and "
                    "{{if}} / {{else}}."))
    local_variables = JSONObjectField(
        label=_("Chat variables"),
        help_text=_('This chat\'s variables, kept in its chat file as SillyTavern keeps them, e.g. {"hp": 10}: '
                    '{{getvar::hp}} reads one, {{setvar::hp::9}} changes it.'))
    global_variables = JSONObjectField(
        label=_("Global variables"),
        help_text=_('Variables every chat shares in SillyTavern, e.g. {"day": 3}: {{getglobalvar::day}} reads '
                    'one.'))

    clock = forms.CharField(
        label=_("Time macros read"), required=False, max_length=40,
        widget=forms.TextInput(attrs={"placeholder": "2026-12-06T15:05+08:00", "spellcheck": "false"}),
        help_text=_("The date and time {{time}}, {{date}}, {{weekday}}, {{datetimeformat ...}} and {{idle_duration}} "
                    "read, e.g. 2026-12-06T15:05 (an offset such as +08:00 may follow; none: UTC). Leave blank: not "
                    "set (left as written)."))

    HOST_FIELDS = ("core_available", "native_available", "system_prompt_update", "official_sections", "contexts",
                   "variables")
    NOTE_FIELDS = ("content", "position", "depth", "role", "interval", "allow_wi_scan")

    @classmethod
    def initial_for(cls, session) -> dict[str, Any]:
        host = session.host or {}
        return {
            "name": session.name, "preset": session.preset_id, "character": session.character_id,
            "persona": session.persona_id, "world_books": [b.pk for b in session.world_books.all()],
            "core_available": host.get("core_available", False),
            "native_available": host.get("native_available", True),
            "system_prompt_update": host.get("system_prompt_update", "head"),
            "official_sections": host.get("official_sections") or [], "contexts": host.get("contexts") or [],
            "variables": host.get("variables") or {}, "current_input": session.current_input,
            **{f"note_{name}": value for name, value in (session.author_note or {}).items()
               if name in cls.NOTE_FIELDS},
            "extension_prompts": session.extension_prompts or [],
            "world_info_activation": session.world_info_activation, "card_lore": session.card_lore,
            "chat_lore": session.chat_lore_id, "regex_scripts": [r.pk for r in session.regex_scripts.all()],
            "macro_engine": session.macro_engine, "local_variables": chat_variables(session),
            "global_variables": session.global_variables or {}, "clock": session.clock,
        }

    def clean(self):
        data = super().clean()
        if not all(name in data for name in self.HOST_FIELDS):
            return data  # a host field already has its error
        try:
            data["host"] = host_settings({name: data[name] for name in self.HOST_FIELDS})
        except ServiceError as error:
            # "host.official_sections.0.text: Field required" -> the official_sections field
            path = error.detail.get("path", "")
            field = path.split(".")[1] if path.count(".") >= 1 else None
            self.add_error(field if field in self.fields else None, error.message)
        self._clean_author_note(data)
        self._clean_macro_variables(data)
        if "clock" in data:
            try:
                data["clock"] = clock_checked(data["clock"])
            except ServiceError:
                self.add_error("clock", _("%(field)s: expected a date and time such as 2026-12-06T15:05 (an offset such "
                                          "as +08:00 may follow; none: UTC).") % {"field": self.fields["clock"].label})
        if "extension_prompts" in data:
            try:
                data["extension_prompts"] = extension_prompt_settings(data["extension_prompts"])
            except ServiceError as error:
                self.add_error("extension_prompts", error.message)
        return data

    VARIABLE_FIELDS = {"local": "local_variables", "global": "global_variables"}

    def _clean_macro_variables(self, data: dict[str, Any]) -> None:
        if not all(field in data for field in self.VARIABLE_FIELDS.values()):
            return  # a variables field already has its error
        for field in self.VARIABLE_FIELDS.values():  # the refusals a typed object can meet, in the page's language
            label = self.fields[field].label
            if "" in data[field]:
                self.add_error(field, _("%(field)s: a variable name cannot be empty.") % {"field": label})
                return
            if len(data[field]) > MAX_MACRO_VARIABLES:
                self.add_error(field, _("%(field)s: at most %(count)s variables.") % {
                    "field": label, "count": MAX_MACRO_VARIABLES})
                return
        try:
            data["macro_variables"] = macro_variables_checked(
                {scope: data[field] for scope, field in self.VARIABLE_FIELDS.items()})
        except ServiceError as error:
            # "macro_variables.local.hp: expected a finite number" -> the chat variables field
            scope = error.detail.get("path", "").split(".")[1:2]
            self.add_error(self.VARIABLE_FIELDS.get(scope[0] if scope else "", "local_variables"), error.message)

    def _clean_author_note(self, data: dict[str, Any]) -> None:
        if not all(f"note_{name}" in data for name in self.NOTE_FIELDS):
            return  # a note field already has its error
        try:
            # a blank setting takes SillyTavern's default (the field's initial value)
            data["author_note"] = author_note_settings({
                name: self.fields[f"note_{name}"].initial if data[f"note_{name}"] in (None, "") else data[f"note_{name}"]
                for name in self.NOTE_FIELDS})
        except ServiceError as error:
            field = "note_" + error.detail.get("path", "").rpartition(".")[2]
            self.add_error(field if field in self.fields else "note_content", error.message)

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"name": data["name"], "preset": data["preset"], "character": data["character"],
                "persona": data["persona"], "world_books": list(data["world_books"]), "host": data["host"],
                "current_input": data["current_input"], "author_note": data["author_note"],
                "extension_prompts": data["extension_prompts"],
                "world_info_activation": data["world_info_activation"] or "book", "card_lore": data["card_lore"],
                "chat_lore": data["chat_lore"], "regex_scripts": list(data["regex_scripts"]),
                "macro_engine": data["macro_engine"] or "legacy", "macro_variables": data["macro_variables"],
                "clock": data["clock"]}


# The built-ins a new session can start with, each explained in one line (the default first).
STARTING_STRATEGIES = (
    ("builtin-st", _("SillyTavern's own prompt order (preset slots, world info, depth injections): what a "
                     "SillyTavern user sees. Needs the host's advanced backend, ticked below.")),
    ("builtin-native-slots", _("The preset's slots in order, sent through the host's standard backend: works on "
                               "any host.")),
    ("builtin-native-roles", _("Grouped by role (system first, then the chat) through the standard backend: for "
                               "hosts that want one system message.")),
)
ASSEMBLY_OFF = "off"


def _builtin_name(slug: str) -> str:
    """A built-in's bilingual name ("zh / en"), which `strategy_name` reads in the page's language."""
    names = BUILTIN_NAMES[slug]
    return f"{names['zh']} / {names['en']}"


class SessionCreateForm(SessionForm):
    """A new session picks the strategy it starts with (so its first preview works) and may start its history with
    the character's greeting, as a new SillyTavern chat does."""

    strategy = forms.ChoiceField(label=_("Strategy"), widget=forms.RadioSelect, initial="builtin-st")
    greeting = forms.BooleanField(
        label=_("Start the history with the character's greeting (its first message)"), required=False,
        help_text=_("SillyTavern expands its macros, such as {{user}}, when it sends the request."))

    def __init__(self, *args, remembered: dict[str, Any] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        builtin = dict(STARTING_STRATEGIES)
        # the name in the page's language: a copy of a built-in says "(copy)" in that language too
        others = [(s.slug, _("%(name)s: your studio's strategy, its latest saved revision.")
                   % {"name": strategy_name(s.name)})
                  for s in visible_strategies().filter(builtin=False, revisions__isnull=False).distinct()
                  .order_by("name").only("slug", "name")]
        self.fields["strategy"].choices = (
            [(slug, f"{strategy_name(_builtin_name(slug))}: {text}") for slug, text in builtin.items()] + others
            + [(ASSEMBLY_OFF, _("off: send the conversation unchanged (no strategy yet)."))])
        self._start_with(remembered)

    def _start_with(self, remembered: dict[str, Any] | None) -> None:
        """The user's last new session's strategy, with host backends that run it (a core strategy on a host with
        the advanced backend), when it is still offered."""
        if not isinstance(remembered, dict) or remembered.get("strategy") not in dict(self.fields["strategy"].choices):
            return
        slug = remembered["strategy"]
        backend = None if slug == ASSEMBLY_OFF else strategy_backend(
            visible_strategies().filter(slug=slug).values_list("draft", flat=True).first() or {})
        self.initial["strategy"] = slug
        for flag in ("core_available", "native_available"):
            if isinstance(remembered.get(flag), bool):
                self.initial[flag] = remembered[flag]
        if backend == "core":
            self.initial["core_available"] = True
        elif backend == "native":
            self.initial["native_available"] = True

    @property
    def starts_sillytavern(self) -> bool:
        """Whether the strategy chosen (posted, else the form's starting one) places in SillyTavern order."""
        slug = self.data.get("strategy") if self.is_bound else self.initial.get("strategy", "builtin-st")
        if not slug or slug == ASSEMBLY_OFF:
            return False
        draft = visible_strategies().filter(slug=slug).values_list("draft", flat=True).first() or {}
        return draft.get("placement") == "st"

    @property
    def sillytavern_slugs(self) -> list[str]:
        """The strategies offered that place in SillyTavern order: choosing one folds dsh's host settings away."""
        offered = {str(value) for value, _label in self.fields["strategy"].choices} if "strategy" in self.fields else set()
        return [slug for slug in visible_strategies().filter(draft__placement="st").values_list("slug", flat=True)
                if slug in offered]

    @property
    def remembered_choice(self) -> dict[str, Any]:
        """What the next new-session form starts with: this one's strategy and host backends."""
        return {"strategy": self.cleaned_data["strategy"], "core_available": self.cleaned_data["core_available"],
                "native_available": self.cleaned_data["native_available"]}

    def clean(self):
        data = super().clean()
        character = data.get("character")
        if data.get("greeting") and (character is None or not character.first_mes.strip()):
            self.add_error("greeting", _("Choose a character whose card has a first message."))
        if data.get("strategy") == "builtin-st" and not data.get("core_available"):
            self.add_error("strategy", _("%(name)s needs the host's advanced backend: tick “The host has the "
                                         "advanced (core) backend” or choose a standard strategy.") % {
                "name": strategy_name(_builtin_name("builtin-st"))})
        return data

    def service_fields(self) -> dict[str, Any]:
        return {**super().service_fields(), "greeting": self.cleaned_data["greeting"]}

    @property
    def strategy_slug(self) -> str | None:
        chosen = self.cleaned_data["strategy"]
        return None if chosen == ASSEMBLY_OFF else chosen


class EventForm(forms.Form):
    """One history message; tool calls on assistant messages, a tool call id on tool results."""

    role = forms.ChoiceField(label=_("Role"), choices=[(r, ENGINE_WORDS["role"].get(r, r)) for r in EVENT_ROLES])
    content = forms.CharField(label=_("Content"), required=False, strip=False,
                              widget=forms.Textarea(attrs={"rows": 3}))
    name = forms.CharField(label=_("Name (optional)"), required=False, max_length=200)
    tool_calls = JSONListField(label=_("Tool calls (assistant, JSON)"), item=_("tool calls"),
                               help_text=_('e.g. [{"id": "call_1", "type": "function", "function": {"name": '
                                           '"lookup", "arguments": "{}"}}]'))
    tool_call_id = forms.CharField(label=_("Answers tool call id (tool)"), required=False, max_length=200)

    def clean_tool_calls(self):
        calls = self.cleaned_data.get("tool_calls") or []
        if not all(isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"] for call in calls):
            raise forms.ValidationError(_("Each tool call must be an object with a string id."))
        return calls or None

    def clean(self):
        data = super().clean()
        if data.get("role") == "tool" and not data.get("tool_call_id"):
            self.add_error("tool_call_id", _("A tool result needs the id of the call it answers."))
        if data.get("tool_calls") and data.get("role") != "assistant":
            self.add_error("tool_calls", _("Only assistant messages make tool calls."))
        if "content" in data and not data["content"].strip() and not data.get("tool_calls"):
            self.add_error("content", _("A message needs some text (only an assistant message that makes tool calls "
                                        "may have none)."))
        return data

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"role": data["role"], "content": data["content"], "name": data["name"],
                "tool_calls": data["tool_calls"], "tool_call_id": data["tool_call_id"]}


class MoveForm(forms.Form):
    direction = forms.ChoiceField(choices=[("up", _("up")), ("down", _("down"))])

    @property
    def offset(self) -> int:
        return -1 if self.cleaned_data["direction"] == "up" else 1


class ApplyForm(forms.Form):
    """`off`, `<strategy id>` (its latest saved revision) or `<strategy id>@<sha>`."""

    choice = forms.CharField(label=_("Strategy to apply"), max_length=200)


class StrategyApplyForm(forms.Form):
    """A revision of one strategy (default: its latest) for some of the sessions the user may change."""

    revision = forms.CharField(required=False, max_length=64)
    sessions = forms.TypedMultipleChoiceField(coerce=int, choices=(), error_messages={
        "required": _("sessions: choose at least one session")})

    def __init__(self, *args, sessions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sessions"].choices = [(session.pk, session.name) for session in sessions]


class CommitForm(forms.Form):
    reply = forms.CharField(label=_("Assistant reply"), required=False, strip=False,
                            widget=forms.Textarea(attrs={"rows": 3}))
    expected_seq = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)


class ComposerForm(forms.Form):
    """The session page's composer: the next user message, and the reply typed when the turn is committed."""

    content = forms.CharField(label=_("Your next message"), required=False, strip=False,
                              widget=forms.Textarea(attrs={"rows": 3}))
    reply = forms.CharField(label=_("Assistant reply (you type it; leave it empty to commit only your message)"),
                            required=False, strip=False, widget=forms.Textarea(attrs={"rows": 2}))
    expected_seq = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=[("preview", "preview"), ("commit", "commit")], required=False)


GENERATION_CHOICES = generation_choices()  # SillyTavern's words, the engine's codes as values


class PreviewOptionsForm(forms.Form):
    """How the preview asks (engine.md §1 `generation`, `tokenizer`, `model`) and a context budget to check it against
    (§8). Blank fields keep the defaults: a normal generation, o200k_base, no model, no budget. A model picks its own
    tokenizer unless one is chosen too."""

    generation = forms.ChoiceField(label=_("Generation type"), choices=GENERATION_CHOICES, required=False)
    quiet_prompt = forms.CharField(label=_("Quiet prompt (quiet generations)"), required=False, max_length=10000)
    model = forms.ChoiceField(label=_("Model"), choices=model_picker_choices, required=False,
                              help_text=_("Counts with the model's tokenizer and chat framing, against its window."))
    # A blank first option, so a submitted form leaves the picked model's own tokenizer in place.
    tokenizer = forms.ChoiceField(label=_("Tokenizer"), choices=[("", _("— the model's, else o200k_base —"))] + [
        (e, e) for e in ENCODINGS], required=False)
    start_reply_with = forms.CharField(
        label=_("Start reply with"), required=False, max_length=10000, strip=False,
        help_text=_("SillyTavern's Start Reply With: the text the reply must begin with, sent as the request's last "
                    "assistant message (SillyTavern's order only)."))
    context_window = forms.IntegerField(label=_("Context window (tokens)"), required=False, min_value=1,
                                        max_value=MAX_CONTEXT_WINDOW)
    reserve_output = forms.IntegerField(label=_("Reserved for the reply (tokens)"), required=False, min_value=0,
                                        max_value=MAX_CONTEXT_WINDOW)
    apply_budget = forms.BooleanField(
        label=_("Apply the eviction plan"), required=False,
        help_text=_("Leave out what the plan drops, so the request shown is the one that fits the window."))

    EXPECTED = {"generation": "one of normal, continue, impersonate, swipe, regenerate, quiet",
                "quiet_prompt": "a text of at most 10,000 characters",
                "start_reply_with": "a text of at most 10,000 characters",
                "tokenizer": "one of " + ", ".join(ENCODINGS),
                "model": "a model of the catalogue",
                "context_window": f"a whole number of tokens from 1 to {MAX_CONTEXT_WINDOW}",
                "reserve_output": f"a whole number of tokens from 0 to {MAX_CONTEXT_WINDOW}"}
    TURN_FIELDS = ("generation", "quiet_prompt", "start_reply_with", "model", "tokenizer")
    BUDGET_FIELDS = ("context_window", "reserve_output", "apply_budget")

    def budget(self) -> dict[str, Any] | None:
        window = self.cleaned_data.get("context_window")
        if not window:
            return None
        budget: dict[str, Any] = {"context_window": window,
                                  "reserve_output": self.cleaned_data.get("reserve_output") or 0}
        if self.cleaned_data.get("apply_budget"):
            budget["apply"] = True
        return budget

    def request_fields(self) -> dict[str, Any]:
        """The engine request's fields these options set (none when the form is unbound or invalid)."""
        if not self.is_bound or not self.is_valid():
            return {}
        data, fields = self.cleaned_data, {}
        if data.get("generation") and data["generation"] != "normal" or data.get("quiet_prompt") or data.get(
                "start_reply_with"):
            fields["generation"] = {"type": data.get("generation") or "normal",
                                    **({"quiet_prompt": data["quiet_prompt"]} if data.get("quiet_prompt") else {}),
                                    **({"start_reply_with": data["start_reply_with"]}
                                       if data.get("start_reply_with") else {})}
        if data.get("tokenizer"):
            fields["tokenizer"] = data["tokenizer"]
        if data.get("model"):
            fields["model"] = data["model"]
        if self.budget():
            fields["budget"] = self.budget()
        return fields

    def query(self, *, without: tuple[str, ...] = ()) -> dict[str, str]:
        """The non-default options as query parameters (for links and the hidden fields of the other forms)."""
        if not self.is_bound or not self.is_valid():
            return {}
        data = self.cleaned_data
        values = {"generation": data.get("generation") if data.get("generation") != "normal" else "",
                  "quiet_prompt": data.get("quiet_prompt") or "", "start_reply_with": data.get("start_reply_with") or "",
                  "model": data.get("model") or "", "tokenizer": data.get("tokenizer") or ""}
        budget = self.budget()
        if budget:
            values.update(context_window=str(budget["context_window"]), reserve_output=str(budget["reserve_output"]),
                          apply_budget="on" if budget.get("apply") else "")
        return {k: v for k, v in values.items() if v and k not in without}

    def first_error(self) -> tuple[str, str]:
        """The first invalid field and what it expects, for answers in the API's error shape."""
        field = next(iter(self.errors))
        return field, self.EXPECTED.get(field, "a valid value")

    def hidden_for_turn(self) -> dict[str, str]:
        return self.query(without=self.TURN_FIELDS)

    def hidden_for_budget(self) -> dict[str, str]:
        return self.query(without=self.BUDGET_FIELDS)


class PinForm(forms.Form):
    session = forms.IntegerField(min_value=1)
    strategy = forms.SlugField(max_length=80)
    revision = forms.CharField(max_length=64)


class ParityForm(forms.Form):
    """The parity page's input: pasted text or an uploaded file (read through `studio.http`'s capped readers)."""

    sent = forms.CharField(label=_("What SillyTavern sent"), required=False, strip=False,
                           help_text=_("A chat-completion request body ({\"messages\": [...], ...}) as SillyTavern's "
                                       "network log or a logging proxy shows it, or a bare messages array."),
                           widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}))
    file = forms.FileField(label=_("Or upload it as a JSON file"), required=False,
                           help_text=_("At most 5 MiB. A file is used instead of the pasted text."))
