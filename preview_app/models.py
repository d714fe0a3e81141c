"""Sessions that strategies are previewed on: the resources and host settings, the current input, the durable
history (`SessionEvent`), the applied strategy snapshot, and approved golden results.

The applied selection is a copy of a revision's document (`applied_document`), so saving a draft never changes a
session; null means assembly is off. Rows are written only through `preview_app.services`.
"""

from django.conf import settings
from django.db import models

from strategies_app.models import (
    Character,
    KeyOrderJSONField,
    Persona,
    Preset,
    RegexScript,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
)


def default_host() -> dict:
    return {"core_available": False, "official_sections": [], "contexts": [], "variables": {},
            "system_prompt_update": "head"}


class Session(models.Model):
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="studio_sessions")
    preset = models.ForeignKey(Preset, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    character = models.ForeignKey(Character, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    persona = models.ForeignKey(Persona, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    world_books = models.ManyToManyField(WorldBook, blank=True, related_name="+")
    host = models.JSONField(default=default_host, blank=True,
                            help_text="engine.md host settings: core_available, official_sections, contexts, "
                                      "variables, system_prompt_update")
    current_input = models.TextField(blank=True)
    author_note = models.JSONField(null=True, blank=True,
                                   help_text="the chat's author's note in the engine's shape (content, position, "
                                             "depth, role, interval, allow_wi_scan); null = none")
    world_info_activation = models.CharField(
        max_length=10, default="book", choices=[("book", "as each book says"), ("keywords", "keyword scan"),
                                                ("all", "every enabled entry")],
        help_text="how the world books' entries activate: each book's own setting, SillyTavern's keyword scan, or "
                  "every enabled entry")
    chat_lore = models.ForeignKey(WorldBook, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                  help_text="the world book bound to this chat (SillyTavern's chat lore, read first)")
    card_lore = models.BooleanField(default=False, help_text="use the character card's embedded world book as "
                                                             "character lore (as SillyTavern does once it is linked)")
    extension_prompts = models.JSONField(default=list, blank=True,
                                         help_text="other extensions' prompts (summary, vectors, ...) in the engine's "
                                                   "shape: [{key, content, position, depth, role, scan}]")
    regex_scripts = models.ManyToManyField(
        RegexScript, blank=True, related_name="+",
        help_text="the global regex scripts this chat runs, in their own order (sort order, then name), before the "
                  "preset's and the card's")
    applied_strategy = models.ForeignKey(Strategy, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="sessions")
    applied_revision = models.ForeignKey(StrategyRevision, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="sessions")
    applied_document = models.JSONField(null=True, blank=True)
    chat_file = KeyOrderJSONField(
        default=dict, blank=True,
        help_text="what the last imported SillyTavern chat file carried beyond its messages (its header line, the "
                  "rest of chat_metadata, hidden lines, CRLF line ends), given back on export")
    chance_seed = models.PositiveBigIntegerField(
        null=True, blank=True,
        help_text="the seed of the chat's chance (world-info probability and inclusion-group picks); null = none yet")
    completion = models.CharField(
        max_length=4, default="chat", choices=[("chat", "chat completion"), ("text", "text completion")],
        help_text="chat completion (a list of messages, built by the applied strategy) or SillyTavern's text "
                  "completion (one prompt string, built by builtin-st with the templates below)")
    instruct_template = models.ForeignKey(TextTemplate, null=True, blank=True, on_delete=models.SET_NULL,
                                          related_name="+", limit_choices_to={"kind": "instruct"})
    context_template = models.ForeignKey(TextTemplate, null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="+", limit_choices_to={"kind": "context"})
    sysprompt_template = models.ForeignKey(TextTemplate, null=True, blank=True, on_delete=models.SET_NULL,
                                           related_name="+", limit_choices_to={"kind": "sysprompt"},
                                           help_text="the system prompt; none = SillyTavern's system prompt off")
    instruct_enabled = models.BooleanField(default=True, help_text="SillyTavern's instruct mode on or off")
    text_settings = models.JSONField(
        default=dict, blank=True,
        help_text="text completion's other settings (text-completion.md resources.text_settings: max_context, "
                  "amount_gen, token_padding, user_prompt_bias, ...); absent ones take SillyTavern's defaults")
    macro_engine = models.CharField(
        max_length=6, default="legacy", choices=[("legacy", "legacy"), ("v2", "Macros 2.0 (experimental)")],
        help_text="SillyTavern's macro engine for this chat's requests: the legacy one or Macros 2.0 "
                  "(power_user.experimental_macro_engine)")
    global_variables = models.JSONField(
        default=dict, blank=True,
        help_text="SillyTavern's global macro variables (extension_settings.variables.global) as they stand before "
                  "the next generation; the chat's own variables live in chat_file's metadata (chat_metadata."
                  "variables), as SillyTavern keeps them")
    clock = models.CharField(
        max_length=64, blank=True, default="",
        help_text="the moment SillyTavern's time and date macros read ({{time}}, {{date}}, ...), sent as the "
                  "request's generation.now (ISO 8601 with its UTC offset); blank = not set: they stay as written")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        permissions = [
            ("edit_session", "Create and edit own sessions, their history and their applied strategy"),
            ("edit_any_session", "Edit every user's sessions"),
            ("approve_golden", "Approve golden snapshots"),
        ]

    def __str__(self) -> str:
        return self.name


class SessionEvent(models.Model):
    """One durable history message, in `seq` order: user / assistant / tool messages, system updates, runtime-context
    snapshots and pre-step messages; `source` says where it came from."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    message_id = models.CharField(max_length=200)
    role = models.CharField(max_length=10, choices=[(r, r) for r in ("system", "user", "assistant", "tool")])
    content = models.TextField(blank=True)
    name = models.CharField(max_length=200, blank=True)
    source = models.JSONField(default=dict, blank=True)
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="unique_event_seq"),
            models.UniqueConstraint(fields=["session", "message_id"], name="unique_event_message_id"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.role}"


class GoldenSnapshot(models.Model):
    """An approved preview result of a session with one strategy revision, checked against later runs."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="goldens")
    revision = models.ForeignKey(StrategyRevision, on_delete=models.PROTECT, related_name="goldens")
    result = models.JSONField()
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    approved_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "-approved_at"]
        constraints = [models.UniqueConstraint(fields=["session", "revision"], name="unique_golden")]

    def __str__(self) -> str:
        return f"{self.session} @ {self.revision}"
