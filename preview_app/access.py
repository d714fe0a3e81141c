"""Session lookups with their permission checks (see strategies_app.access for the rules)."""

from __future__ import annotations

from preview_app.models import GoldenSnapshot, Session
from strategies_app.access import require
from strategies_app.errors import forbidden, not_found

EDIT_SESSION = "preview_app.edit_session"
EDIT_ANY_SESSION = "preview_app.edit_any_session"
APPROVE_GOLDEN = "preview_app.approve_golden"


def session_for_read(pk) -> Session:
    found = Session.objects.select_related("preset", "character", "persona", "applied_strategy",
                                           "applied_revision").filter(pk=pk).first() if str(pk).isdecimal() else None
    if found is None:
        raise not_found("session", pk)
    return found


def session_for_edit(user, pk) -> Session:
    require(user, EDIT_SESSION, "edit sessions")
    session = session_for_read(pk)
    if session.owner_id != user.pk and not user.has_perm(EDIT_ANY_SESSION):
        raise forbidden(f"session {pk} belongs to another user")
    return session


def golden_for_read(pk) -> GoldenSnapshot:
    found = GoldenSnapshot.objects.filter(pk=pk).first() if str(pk).isdecimal() else None
    if found is None:
        raise not_found("golden snapshot", pk)
    return found
