"""preview_app's side of `strategies_app.session_previews`: the sessions the strategy editor and revisions page
preview a draft on, and the "apply to sessions" panel they show."""

from __future__ import annotations

from typing import Any

from preview_app.access import editable_sessions
from preview_app.compare import align_messages
from preview_app.models import Session
from preview_app.previews import session_request, strategy_document
from preview_app.selectors import preview_session, session_picker, sessions_by_applied_strategy
from strategies_app.models import Strategy
from strategies_app.selectors import recent_revisions
from studio.paging import list_head


class StrategySessions:
    align = staticmethod(align_messages)  # the compare view's alignment: the editor's "what changed"

    def chosen(self, raw: Any, strategy: Strategy, remembered: Any = None) -> Session | None:
        return preview_session(raw, strategy, remembered)

    def picker(self):
        return session_picker()

    def request(self, strategy: Strategy, document: dict[str, Any], session: Session | None) -> dict[str, Any]:
        # without a session: an empty request on which nothing is placed and both backends are available
        if session is not None:
            # a strategy shapes chat completion: a text-completion session is previewed as its chat request
            return session_request(session, strategy_document(strategy, document), chat=True)
        return {"strategy": strategy_document(strategy, document), "host": {"core_available": True}}

    def applied_by_strategy(self, strategy_ids: list[int]) -> dict[int, list[Session]]:
        return sessions_by_applied_strategy(strategy_ids)

    def apply_panel(self, user, strategy: Strategy, results: list[dict[str, Any]] | None = None,
                    search: str = "") -> dict[str, Any]:
        return apply_panel(user, strategy, results, search)

    def applied(self, session: Session) -> tuple[Strategy, dict[str, Any]] | None:
        if session.applied_document is None or session.applied_strategy is None:
            return None
        return session.applied_strategy, session.applied_document


APPLY_LISTED = 50  # sessions the apply panel offers at once (a checkbox each); its search finds the others


def apply_panel(user, strategy: Strategy, results: list[dict[str, Any]] | None = None,
                search: str = "") -> dict[str, Any]:
    """The "apply to sessions" panel: the first `APPLY_LISTED` sessions `user` may change whose name holds `search`
    and how many there are, the revisions to choose from, and the results of the last apply
    (`session_views.apply_to_sessions`)."""
    sessions = editable_sessions(user).order_by("name", "id").only("pk", "name")
    if search:
        sessions = sessions.filter(name__icontains=search)
    listed, count = list_head(sessions, APPLY_LISTED)
    return {"apply_sessions": listed, "apply_count": count,
            "apply_search": search, "apply_revisions": recent_revisions(strategy), "apply_results": results,
            "strategy": strategy}
