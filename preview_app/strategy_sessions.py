"""preview_app's side of `strategies_app.session_previews`: the sessions the strategy editor and revisions page
preview a draft on, and the "apply to sessions" panel they show."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from preview_app.access import editable_sessions
from preview_app.models import Session
from preview_app.previews import session_request, strategy_document
from strategies_app.models import Strategy
from strategies_app.selectors import recent_revisions


class StrategySessions:
    def chosen(self, raw: Any, strategy: Strategy) -> Session | None:
        sessions = Session.objects.select_related("preset", "character", "persona", "applied_strategy")
        if raw and str(raw).isdecimal():
            found = sessions.filter(pk=raw).first()
            if found is not None:
                return found
        return sessions.filter(applied_strategy=strategy).first() or sessions.first()

    def picker(self):
        return Session.objects.order_by("name", "id").only("pk", "name")

    def request(self, strategy: Strategy, document: dict[str, Any], session: Session | None) -> dict[str, Any]:
        # without a session: an empty request on which nothing is placed and both backends are available
        if session is not None:
            return session_request(session, strategy_document(strategy, document))
        return {"strategy": strategy_document(strategy, document), "host": {"core_available": True}}

    def applied_by_strategy(self) -> dict[int, list[Session]]:
        using: dict[int, list[Session]] = defaultdict(list)
        for session in Session.objects.filter(applied_strategy__isnull=False).only("pk", "name",
                                                                                   "applied_strategy_id"):
            using[session.applied_strategy_id].append(session)
        return using

    def apply_panel(self, user, strategy: Strategy, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return apply_panel(user, strategy, results)


def apply_panel(user, strategy: Strategy, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The "apply to sessions" panel: the sessions `user` may change, the revisions to choose from, and the results
    of the last apply (`session_views.apply_to_sessions`)."""
    return {"apply_sessions": editable_sessions(user).order_by("name", "id"),
            "apply_revisions": recent_revisions(strategy), "apply_results": results, "strategy": strategy}
