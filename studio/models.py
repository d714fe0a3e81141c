"""The studio's own rows: what a user last chose, kept across logins."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class UserChoices(models.Model):
    """A user's remembered picks, one row per user: `choices` maps a purpose to the pick, e.g. `editor:<strategy
    slug>` -> the session the editor previews it on, `session` -> the last session the user worked on, and
    `new-session` -> the strategy and host backends the last new session started with."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="studio_choices")
    choices = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user's remembered choices"
        verbose_name_plural = "users' remembered choices"

    def __str__(self) -> str:
        return f"choices of {self.user_id}"
