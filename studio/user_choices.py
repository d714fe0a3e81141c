"""What a user last chose, remembered across logins, so that the editor and the new-session form default to a session
and strategy that work together: a selector reads a pick, a service stores one in one short transaction, writing
only when it changed."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from studio.models import UserChoices

EDITOR_SESSION = "editor:{slug}"  # the session the editor previews a strategy on
LAST_SESSION = "session"  # the last session the user previewed a strategy on
NEW_SESSION = "new-session"  # {"strategy": slug, "core_available": bool, "native_available": bool}
MAX_CHOICES = 200  # the editor keys grow with the strategies a user opened: past this many, others are dropped


def user_choices(user) -> dict[str, Any]:
    """Every remembered pick of the user ({} for anonymous users and users without choices)."""
    if not getattr(user, "is_authenticated", False):
        return {}
    return UserChoices.objects.filter(user=user).values_list("choices", flat=True).first() or {}


def user_choice(user, key: str) -> Any:
    """The user's remembered pick for `key`, or None."""
    return user_choices(user).get(key)


def user_choice_remember(*, user, values: dict[str, Any]) -> None:
    """Store `values` (key -> pick) among the user's choices; nothing is written when every pick is already so."""
    if not getattr(user, "is_authenticated", False) or not values:
        return
    with transaction.atomic():
        row, _ = UserChoices.objects.select_for_update().get_or_create(user=user)
        if all(row.choices.get(key) == value for key, value in values.items()):
            return
        choices = {key: value for key, value in row.choices.items() if key not in values}
        choices.update(values)
        if len(choices) > MAX_CHOICES:  # the new picks stay; others go (jsonb keeps no insertion order)
            others = [key for key in choices if key not in values][:max(0, MAX_CHOICES - len(values))]
            choices = {key: choices[key] for key in [*others, *values][-MAX_CHOICES:]}
        row.choices = choices
        row.save(update_fields=["choices", "updated_at"])
