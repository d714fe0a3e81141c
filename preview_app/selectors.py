"""Reads of sessions, their history and goldens for the pages (writes are in `services`, lookups that check
permissions in `access`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Max, Min, QuerySet, Window
from django.db.models.functions import RowNumber

from assembly.strategy import strategy_backend
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from strategies_app.models import Strategy, StrategyRevision
from studio.input_boundary import is_row_id
from studio.paging import related_count


def listed_sessions(search: str = "") -> QuerySet[Session]:
    """The sessions page: the sessions whose name holds `search` (every one for ""), with their owner, card, applied
    strategy and their message and golden counts (`related_count`: one join of both read a row for every pair of a
    session's messages and goldens)."""
    sessions = Session.objects.select_related("owner", "character", "applied_strategy", "applied_revision").annotate(
        message_count=related_count(SessionEvent, "session"), golden_count=related_count(GoldenSnapshot, "session"))
    return sessions.filter(name__icontains=search) if search else sessions


def sessions_with_applied() -> QuerySet[Session]:
    """Every session with its applied strategy and revision (the API's session list)."""
    return Session.objects.select_related("applied_strategy", "applied_revision")


def sessions_with_strategy() -> QuerySet[Session]:
    return Session.objects.select_related("applied_strategy", "owner")


def golden_count() -> int:
    return GoldenSnapshot.objects.count()


HISTORY_WINDOW = 50  # messages a session page shows at once; the rest is one "show older" click away


@dataclass(frozen=True)
class HistoryWindow:
    """The newest messages before `before` (all the newest when None), oldest first as a chat reads, and where the
    history starts and ends, so the page can say what it left out without loading it."""

    events: list[SessionEvent]
    total: int
    first_seq: int
    last_seq: int
    older: int  # messages before this window

    @property
    def older_before(self) -> int | None:
        """The `before` of the next older window, or None when this window reaches the start."""
        if self.events and self.events[0].seq > self.first_seq:
            return self.events[0].seq
        return None


def history_window(session: Session, *, before: int | None = None, size: int = HISTORY_WINDOW) -> HistoryWindow:
    """At most `size` messages with seq < `before`, newest kept: never the whole of a long history."""
    stats = session.events.aggregate(total=Count("id"), first=Min("seq"), last=Max("seq"))
    rows = session.events.order_by("-seq")
    if before is not None:
        rows = rows.filter(seq__lt=before)
    events = list(rows[:size])[::-1]
    older = session.events.filter(seq__lt=events[0].seq).count() if events else 0
    return HistoryWindow(events=events, total=stats["total"], first_seq=stats["first"] or 0,
                         last_seq=stats["last"] or 0, older=older)


def last_seq(session: Session) -> int:
    """The seq of the session's last message (0 for an empty history): what a commit form says it saw."""
    return session.events.order_by("-seq").values_list("seq", flat=True).first() or 0


def golden_of(session: Session, revision: StrategyRevision) -> GoldenSnapshot | None:
    """Whether (and by whom) a revision is pinned; its stored result (megabytes on a long session) is not read."""
    return (GoldenSnapshot.objects.filter(session=session, revision=revision).select_related("approved_by")
            .defer("result").first())


def listed_goldens() -> QuerySet[GoldenSnapshot]:
    return GoldenSnapshot.objects.select_related("session", "revision__strategy", "approved_by").order_by(
        "session", "-approved_at", "-id")


def preview_session(raw: Any, strategy: Strategy, remembered: Any = None) -> Session | None:
    """The session a strategy page previews on: the one asked for (`raw`: a pk, from the query or the user's pick
    for this strategy), else `remembered` (the user's last session) when its host runs the strategy, else one the
    strategy is applied to, else the first whose host runs it."""
    sessions = Session.objects.select_related("preset", "character", "persona", "applied_strategy")
    if raw and is_row_id(raw):
        found = sessions.filter(pk=raw).first()
        if found is not None:
            return found
    if remembered and is_row_id(remembered):
        found = sessions.filter(pk=remembered).first()
        if found is not None and runs_backend(found.host, strategy_backend(strategy.draft)):
            return found
    return sessions.filter(applied_strategy=strategy).first() or _runnable_session(sessions, strategy)


# How many sessions the fallback looks through for one whose host runs the strategy (bounded: a page never scans a
# large table); past it, the first session.
RUNNABLE_SCAN = 200


def runs_backend(host: dict[str, Any] | None, backend: str) -> bool:
    """Whether a session's host settings offer `backend` (engine.md host: `core_available`, `native_available`)."""
    host = host or {}
    return bool(host.get("core_available")) if backend == "core" else host.get("native_available", True) is not False


def _runnable_session(sessions, strategy: Strategy) -> Session | None:
    """The first session (by name) whose host runs the strategy's backend, so a preview opens on a request the
    engine can assemble; else the first session."""
    backend = strategy_backend(strategy.draft)
    ordered = sessions.order_by("name", "id")
    return next((s for s in ordered[:RUNNABLE_SCAN] if runs_backend(s.host, backend)), None) or ordered.first()


def session_picker() -> QuerySet[Session]:
    return Session.objects.order_by("name", "id").only("pk", "name")


APPLIED_NAMED = 3  # sessions the strategy list names for each strategy; it counts the others


def sessions_by_applied_strategy(strategy_ids: list[int]) -> dict[int, list[Session]]:
    """For each of `strategy_ids`, the first `APPLIED_NAMED` sessions (by name) it is applied to: one query, however
    many sessions use a strategy."""
    first = Session.objects.filter(applied_strategy__in=strategy_ids).annotate(rank=Window(
        RowNumber(), partition_by=F("applied_strategy"), order_by=[F("name").asc(), F("id").asc()]))
    named: dict[int, list[Session]] = defaultdict(list)
    for session in first.filter(rank__lte=APPLIED_NAMED).only("pk", "name", "applied_strategy_id").order_by("name", "id"):
        named[session.applied_strategy_id].append(session)
    return named
