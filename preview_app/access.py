"""The session policy and session lookups with their permission checks (see strategies_app.access for the rules):
the yes/no answer pages use to show controls, the raising check every write goes through, and the sessions a user
may change, all from one rule."""

from __future__ import annotations

from django.utils.translation import gettext as _

from preview_app.models import GoldenSnapshot, Session, SessionEvent
from strategies_app.access import require
from studio.errors import forbidden, not_found
from studio.input_boundary import is_row_id

EDIT_SESSION = "preview_app.edit_session"
EDIT_ANY_SESSION = "preview_app.edit_any_session"
APPROVE_GOLDEN = "preview_app.approve_golden"
# Goldens are QA's record: deleting one is the admin's (the model permission every admin has).
DELETE_GOLDEN = "preview_app.delete_goldensnapshot"


def session_for_read(pk) -> Session:
    found = Session.objects.select_related("preset", "character", "persona", "applied_strategy",
                                           "applied_revision").filter(pk=pk).first() if is_row_id(pk) else None
    if found is None:
        raise not_found("session", pk)
    return found


def can_create_sessions(user) -> bool:
    """Create or copy sessions, or apply strategies to one's sessions."""
    return user.has_perm(EDIT_SESSION)


def can_approve_goldens(user) -> bool:
    return user.has_perm(APPROVE_GOLDEN)


def can_delete_goldens(user) -> bool:
    return user.has_perm(DELETE_GOLDEN)


def _owns_or_edits_any(user, session: Session) -> bool:
    """The session policy beyond the role permission: one's own sessions, or any with `edit_any_session`."""
    return session.owner_id == user.pk or user.has_perm(EDIT_ANY_SESSION)


def can_edit_session(user, session: Session) -> bool:
    return user.has_perm(EDIT_SESSION) and _owns_or_edits_any(user, session)


def session_for_edit(user, pk) -> Session:
    require(user, EDIT_SESSION, "edit sessions")
    session = session_for_read(pk)
    if not _owns_or_edits_any(user, session):
        raise forbidden(_("session “%(name)s” belongs to another user: you can read it, or copy it to change your "
                          "own") % {"name": session.name})
    return session


def editable_sessions(user):
    """The sessions `user` may change, as a queryset (the same rule as `can_edit_session`)."""
    if user.has_perm(EDIT_ANY_SESSION):
        return Session.objects.all()
    if user.has_perm(EDIT_SESSION):
        return Session.objects.filter(owner=user)
    return Session.objects.none()


def golden_for_read(pk) -> GoldenSnapshot:
    found = GoldenSnapshot.objects.filter(pk=pk).first() if is_row_id(pk) else None
    if found is None:
        raise not_found("golden snapshot", pk)
    return found


def event_for_read(session: Session, seq: int, *, noun: str = "message") -> SessionEvent:
    """A message of `session` by seq (`noun`: what the 404 calls it; the API says "event")."""
    event = SessionEvent.objects.filter(session=session, seq=seq).first()
    if event is None:
        raise not_found(f"{noun} of session {session.pk}", seq)
    return event
