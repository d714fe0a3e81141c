"""What designers work on: strategies (a working draft plus immutable revisions), the resource categories of the
position catalogue, and the SillyTavern resources (presets with ordered prompt entries, characters, personas, world
books with entries).

Resources keep the fields the studio edits as columns and everything else SillyTavern's file carried in one JSON
field (`*_fields`, `options`, `settings`), so an export gives back the file that was imported. Rows are written only
through `strategies_app.services`; models hold no behaviour beyond naming themselves.
"""

import json

from django.conf import settings
from django.db import models

ROLE_CHOICES = [("system", "system"), ("user", "user"), ("assistant", "assistant")]


class KeyOrderJSONField(models.JSONField):
    """A JSON object that keeps every key, at every depth, in the order it was written, on every database:
    PostgreSQL's jsonb keeps no key order, so the object is stored as its JSON text (a JSON string) and read back
    from it, and an export gives the file's order back. Rows written before (an object, or its top-level
    `[key, value]` pairs) read as they were stored. The column is JSONField's own (no schema change)."""

    def get_prep_value(self, value):
        if isinstance(value, dict):
            value = json.dumps(value, ensure_ascii=False, cls=self.encoder)
        return super().get_prep_value(value)

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, str) and value.startswith("{"):
            return json.loads(value, cls=self.decoder)
        if isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                                           for pair in value):
            return dict(value)
        return value


class Strategy(models.Model):
    """An assembly strategy: a working draft (normalized A.2 JSON) with a `version` counter for optimistic
    concurrency. Built-ins are read-only rows mirroring `assembly.strategy.builtin_strategies()`."""

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="strategies")
    builtin = models.BooleanField(default=False)
    visible = models.BooleanField(default=True, help_text="Built-ins an admin hides are left out of lists.")
    draft = models.JSONField()
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-builtin", "name", "slug"]
        verbose_name_plural = "strategies"
        permissions = [
            ("edit_strategy", "Create, edit and copy own strategies, save revisions"),
            ("edit_any_strategy", "Edit every user's strategies"),
            ("manage_resources", "Import, edit and delete resources"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class StrategyRevision(models.Model):
    """An immutable saved strategy document; `revision` is its sha256 (assembly.strategy.strategy_revision)."""

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="revisions")
    revision = models.CharField(max_length=64)
    document = models.JSONField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["strategy", "revision"], name="unique_revision_per_strategy")]

    def __str__(self) -> str:
        return f"{self.strategy.slug}@{self.revision[:12]}"


class ResourceCategory(models.Model):
    """A draggable category of the position catalogue (`module#position`), seeded from POSITION_CATALOGUE."""

    key = models.CharField(max_length=160, unique=True)
    module = models.CharField(max_length=80)
    position = models.CharField(max_length=80)
    name_en = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200)
    help_en = models.TextField(blank=True)
    help_zh = models.TextField(blank=True)
    sort_order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["sort_order"]
        verbose_name_plural = "resource categories"

    def __str__(self) -> str:
        return f"{self.key}: {self.name_en} / {self.name_zh}"


class Preset(models.Model):
    """A SillyTavern chat-completion preset. `options` is the preset file without its prompt definitions and without
    the prompt order of the global strategy (character 100001), which the entries hold."""

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    options = KeyOrderJSONField(default=dict, blank=True)
    has_prompt_order = models.BooleanField(default=True)
    # The first preset of an edited preset's line (its revision record in `options` says the same): the column the
    # line's revisions are looked up by, since `options` is stored as text.
    revision_of = models.PositiveIntegerField(null=True, blank=True, db_index=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class PromptEntry(models.Model):
    """One prompt of a preset. `position` is its place in the prompt order (the assembly order); `in_order` false
    means the preset defines the prompt but does not send it. `definition_index` keeps the file's definition order."""

    preset = models.ForeignKey(Preset, on_delete=models.CASCADE, related_name="entries")
    position = models.PositiveIntegerField(default=0)
    definition_index = models.PositiveIntegerField(default=0)
    identifier = models.TextField()
    name = models.TextField(blank=True)
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default="system")
    content = models.TextField(blank=True)
    marker = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True, help_text="Sent when in the order (the order's flag).")
    in_order = models.BooleanField(default=True)
    prompt_fields = KeyOrderJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["preset", "position", "id"]
        verbose_name_plural = "prompt entries"
        constraints = [models.UniqueConstraint(fields=["preset", "identifier"], name="unique_prompt_identifier")]

    def __str__(self) -> str:
        return self.name or self.identifier


class Character(models.Model):
    """A character card (V2/V3). `card_fields` holds the card's other data (tags, extensions, character book, ...);
    `avatar` the PNG image the card came in, if any."""

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    description = models.TextField(blank=True)
    personality = models.TextField(blank=True)
    scenario = models.TextField(blank=True)
    first_mes = models.TextField(blank=True)
    mes_example = models.TextField(blank=True)
    system_prompt = models.TextField(blank=True)
    post_history_instructions = models.TextField(blank=True)
    creator_notes = models.TextField(blank=True)
    card_fields = KeyOrderJSONField(default=dict, blank=True)
    avatar = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Persona(models.Model):
    """The user's persona (SillyTavern's persona description and its placement)."""

    name = models.CharField(max_length=200, default="User")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    description = models.TextField(blank=True)
    position = models.CharField(max_length=20, default="in_prompt")
    depth = models.PositiveIntegerField(default=2)
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default="system")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class WorldBook(models.Model):
    """A world book; `settings` holds the book's scan settings and other top-level keys."""

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    settings = KeyOrderJSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class WorldBookEntry(models.Model):
    """One world book entry in SillyTavern's native form; `entry_fields` holds everything but the edited columns
    (uid, keys, position number, depth, role, order, ...)."""

    book = models.ForeignKey(WorldBook, on_delete=models.CASCADE, related_name="entries")
    sort_order = models.PositiveIntegerField(default=0)
    comment = models.TextField(blank=True)
    content = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    entry_fields = KeyOrderJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["book", "sort_order", "id"]
        verbose_name_plural = "world book entries"

    def __str__(self) -> str:
        return self.comment or f"entry {self.entry_fields.get('uid', self.pk)}"


class RegexScript(models.Model):
    """A global SillyTavern regex script (its regex extension's file). The columns are what the studio shows and
    toggles; `script_fields` holds the rest of the file (id, trimStrings, runOnEdit, substituteRegex, depths, ...)
    so an export gives the file back. Sessions run the scripts they choose in this model's order: `sort_order` (the
    order admins give, as SillyTavern's list of global scripts), then the name."""

    name = models.CharField(max_length=200, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    sort_order = models.PositiveIntegerField(default=0)
    find_regex = models.TextField()
    replace_string = models.TextField(blank=True)
    placement = models.JSONField(default=list, blank=True)
    disabled = models.BooleanField(default=False)
    prompt_only = models.BooleanField(default=False)
    markdown_only = models.BooleanField(default=False)
    script_fields = KeyOrderJSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sort_order", "name", "id"]

    def __str__(self) -> str:
        return self.name or self.find_regex


class PendingUpload(models.Model):
    """A dry run's upload, kept under a random token so "Import it" imports the same bytes without picking the file
    again. In the database (not one process's memory) so any worker behind it finds it; it expires after
    `UPLOAD_TTL` and belongs to the user who uploaded it."""

    token = models.CharField(max_length=64, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    filename = models.CharField(max_length=255, blank=True)
    content = models.BinaryField()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.filename or self.token


TEXT_TEMPLATE_KINDS = [("instruct", "instruct"), ("context", "context"), ("sysprompt", "sysprompt"),
                       ("reasoning", "reasoning")]


class TextTemplate(models.Model):
    """One of SillyTavern's Advanced Formatting templates for text completion: an instruct template, a context
    template, a system prompt, or a reasoning template (kept as data: the prompt does not use it). `fields` is the
    file as SillyTavern wrote it, every key kept (the name too), so an export gives it back; `builtin` rows are the
    studio's own (read-only, seeded by `reference_data.ensure_text_templates`). The file's key order is kept too
    (`KeyOrderJSONField`), so the export is the file as it was written, on PostgreSQL as on SQLite."""

    kind = models.CharField(max_length=12, choices=TEXT_TEMPLATE_KINDS)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    fields = KeyOrderJSONField(default=dict, blank=True)
    builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "-builtin", "name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"
