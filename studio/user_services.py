"""Writes to studio users (web.md, Users and permissions): a role is one of the groups qa, designer, admin (admins
are also staff, so `/admin/` stays theirs). Keyword-only, one transaction each; bad input raises `ServiceError`
naming the field before anything is written."""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from studio.errors import ServiceError, invalid

ROLES = ("qa", "designer", "admin")


def user_role(user) -> str | None:
    """The user's studio role (the highest group they are in), or None."""
    names = {group.name for group in user.groups.all()}  # a list's users come with their groups (prefetched)
    return next((role for role in reversed(ROLES) if role in names), None)


def is_studio_admin(user) -> bool:
    return user.is_active and (user.is_superuser or user.groups.filter(name="admin").exists())


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise invalid("role", "one of " + ", ".join(ROLES))
    return role


def _set_role(user, role: str) -> None:
    """The role decides: a superuser made qa or designer loses the superuser flag (it would keep every permission)."""
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    user.groups.add(Group.objects.get(name=role))
    user.is_staff = role == "admin"
    user.is_superuser = user.is_superuser and role == "admin"
    user.save(update_fields=["is_staff", "is_superuser"])


def _active_admins():
    """The active users who can manage users (the admin group or superusers), their rows locked for this
    transaction so two demotions cannot each leave the other as the last admin."""
    model = get_user_model()
    admins = model.objects.filter(Q(groups__name="admin") | Q(is_superuser=True), is_active=True).values("pk")
    return model.objects.select_for_update().filter(pk__in=admins)


def user_sessions_end(*, user) -> None:
    """Log `user` out everywhere: their stored sessions are deleted, so an old session cookie never works again
    (not after a reactivation either)."""
    ended = [s.pk for s in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
             if s.get_decoded().get(SESSION_KEY) == str(user.pk)]
    Session.objects.filter(pk__in=ended).delete()


@transaction.atomic
def user_create(*, username: str, password: str, role: str):
    """A new active user with `role`."""
    username = username.strip()
    model = get_user_model()
    if not username or len(username) > 150:
        raise invalid("username", "a user name of 1 to 150 characters")
    try:  # the model's own rule (letters, digits and @ . + - _), so that the Django admin can edit the user later
        model.username_validator(username)
    except ValidationError:
        raise invalid("username", "letters, digits and @ . + - _ only") from None
    # "Ona" beside "ona" is two accounts nobody can tell apart at the login form
    taken = model.objects.filter(username__iexact=username).values_list("username", flat=True).first()
    if taken is not None:
        raise ServiceError("CONFLICT", f"username: {taken!r} is taken", status=409,
                           detail={"path": "username", "reason": "username_taken", "username": taken})
    _check_role(role)
    try:
        validate_password(password, model(username=username))
    except ValidationError as error:
        raise ServiceError("INPUT_INVALID", "password: " + " ".join(error.messages),
                           detail={"path": "password"}) from None
    user = model.objects.create_user(username, password=password)
    _set_role(user, role)
    return user


@transaction.atomic
def user_role_update(*, actor, user, role: str):
    """Give `user` the role `role`; the last active admin cannot be demoted."""
    _check_role(role)
    if role != "admin" and is_studio_admin(user) and not _active_admins().exclude(pk=user.pk).exists():
        raise ServiceError("CONFLICT", "role: the last admin cannot be demoted (make another user admin first)",
                           status=409, detail={"path": "role", "reason": "last_admin_demoted"})
    _set_role(user, role)
    return user


@transaction.atomic
def user_deactivate(*, actor, user):
    """Stop `user` logging in (kept, with their work); never yourself, never the last admin."""
    if user.pk == actor.pk:
        raise ServiceError("CONFLICT", "user: you cannot deactivate yourself", status=409,
                           detail={"path": "user", "reason": "self_deactivated"})
    if is_studio_admin(user) and not _active_admins().exclude(pk=user.pk).exists():
        raise ServiceError("CONFLICT", "user: the last admin cannot be deactivated", status=409,
                           detail={"path": "user", "reason": "last_admin_deactivated"})
    user.is_active = False
    user.save(update_fields=["is_active"])
    user_sessions_end(user=user)
    return user


@transaction.atomic
def user_reactivate(*, actor, user):
    """Let a deactivated `user` log in again, with the role and work they had."""
    if user.is_active:
        raise ServiceError("CONFLICT", "user: already active", status=409,
                           detail={"path": "user", "reason": "already_active"})
    user.is_active = True
    user.save(update_fields=["is_active"])
    return user
