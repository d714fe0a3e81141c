"""Is a golden snapshot still true? (web.md screen 5)

A golden stands for "what this session sends with this strategy", approved by QA at one saved revision, the one
it records (`GoldenSnapshot.revision`). Its status checks it against a fresh run of the session with that same
revision, so saving a new revision never makes it differ: only a change of the session, its resources or the engine
does. Whether the strategy's latest revision would change it is a separate check with its own alignment and diff,
shown beside the status. The status also says whether the session still runs the approved revision.

The goldens page runs the engine once per golden (quality.md, Performance): the latest revision's check is its own fragment
(`golden_status(..., check_latest=True)`), and the approved revision's run it is compared against is kept in
Django's cache by its whole engine request (when there is a newer revision), so the fragment loaded after the page
runs only the latest revision.

A golden is stored as JSON (`GoldenSnapshot.result`), so the checks stay on documents: each fresh run is dumped once
and compared as parsed JSON (equal documents answer at once). Only a differing check builds its diffs
and its alignment, when they are read: the page's bounded part diff, the full unified diff (`goldens check`, the
API) and the message alignment (which validates typed messages from both documents).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import TypeAdapter

from assembly import AssemblyError
from assembly.results import RequestMessage
from preview_app.compare import Alignment, align_messages
from preview_app.json_diff import PartDiff, documents_equal, full_diff, part_diff
from preview_app.models import GoldenSnapshot
from preview_app.previews import session_request, strategy_document
from strategies_app.models import StrategyRevision
from studio.engine_runs import assemble


@dataclass
class RevisionCheck:
    """The golden (or the approved revision's run) against a fresh run of its session with one revision."""

    revision: StrategyRevision
    before: dict[str, Any] = field(repr=False)  # what the fresh run is checked against
    fresh: dict[str, Any] = field(repr=False)  # the fresh result JSON, or the engine's error JSON
    labels: tuple[str, str] = ("approved", "now")
    same: bool = field(init=False)

    def __post_init__(self) -> None:
        self.same = documents_equal(self.before, self.fresh)

    @property
    def status(self) -> str:
        return "matches" if self.same else "differs"

    @cached_property
    def diff(self) -> list[str]:
        """The unified diff of the whole result JSON (empty when it matches)."""
        return [] if self.same else full_diff(self.before, self.fresh, self.labels)

    @cached_property
    def page_diff(self) -> PartDiff:
        """The differing parts only, bounded: what the goldens page shows."""
        return part_diff(self.before, self.fresh, self.labels)

    @cached_property
    def alignment(self) -> Alignment:
        return align_messages(stored_messages(self.before), stored_messages(self.fresh))

    @property
    def error(self) -> dict[str, Any] | None:
        return self.fresh if self.fresh.get("ok") is False else None

    @cached_property
    def causes(self) -> tuple[str, ...]:
        """What differs, read from the two documents' items: "chat" (the history and the input), "resources" (every
        other item: preset, card, persona, world info, the strategy's own text), "other" (the same items, another
        answer: counts, diagnostics, the engine), or "error" (the fresh run was refused)."""
        if self.same:
            return ()
        if self.error is not None:
            return ("error",)
        found = tuple(part for part, chat in (("chat", True), ("resources", False))
                      if _items(self.before, chat=chat) != _items(self.fresh, chat=chat))
        return found or ("other",)


CHAT_MODULES = frozenset({"history", "input"})


def _items(result: dict[str, Any], *, chat: bool) -> list[tuple[Any, ...]]:
    return [(node.get("module"), node.get("role"), node.get("text")) for node in result.get("nodes") or []
            if (node.get("module") in CHAT_MODULES) == chat]


@dataclass
class GoldenStatus:
    golden: GoldenSnapshot
    approved: RevisionCheck  # against the revision the golden approved: the status
    newer: StrategyRevision | None  # the strategy's latest revision, when that is a newer one than the approved
    latest: RevisionCheck | None = None  # the newer revision's check, when it was asked for (`check_latest`)

    @property
    def status(self) -> str:
        return self.approved.status

    @property
    def checked_revision(self) -> StrategyRevision:
        return self.approved.revision

    @property
    def fresh(self) -> dict[str, Any]:
        return self.approved.fresh

    @property
    def diff(self) -> list[str]:
        return self.approved.diff

    @property
    def page_diff(self) -> PartDiff:
        return self.approved.page_diff

    @property
    def alignment(self) -> Alignment:
        return self.approved.alignment

    @property
    def error(self) -> dict[str, Any] | None:
        return self.approved.error

    @property
    def causes(self) -> tuple[str, ...]:
        """Why the approved revision's run differs now; the revision is the approved one, so never the strategy."""
        return self.approved.causes

    @property
    def applied(self) -> str:
        """What the session runs now, against the golden: "approved" (its applied revision is the approved one),
        "other-revision" (another revision of the same strategy), "other-strategy", or "off" (assembly off)."""
        session = self.golden.session
        if session.applied_revision_id == self.golden.revision_id:
            return "approved"
        if session.applied_strategy_id is None:
            return "off"
        if session.applied_strategy_id == self.golden.revision.strategy_id:
            return "other-revision"
        return "other-strategy"

    @property
    def latest_changes(self) -> bool:
        return self.latest is not None and self.latest.status == "differs"


_STORED_MESSAGES = TypeAdapter(list[RequestMessage])


def stored_messages(result: dict[str, Any]) -> list[RequestMessage]:
    """The request messages of a result document (none in an error document), read back and checked."""
    return _STORED_MESSAGES.validate_python((result.get("request") or {}).get("messages") or [])


def _run(golden: GoldenSnapshot, revision: StrategyRevision) -> dict[str, Any]:
    """The fresh result JSON of the golden's session with `revision` (a run asked before, e.g. the latest-revision
    fragment after the goldens page, is read from the studio's result cache)."""
    document = strategy_document(golden.revision.strategy, revision.document)
    try:
        return assemble(session_request(golden.session, document)).model_dump(mode="json")
    except AssemblyError as error:
        return error.to_json()


def golden_status(golden: GoldenSnapshot, latest: StrategyRevision | None = None, *,
                  check_latest: bool = True) -> GoldenStatus:
    """Check one golden against a fresh run with its approved revision; when the strategy has a newer revision and
    `check_latest`, also what running that one instead would change (its run against the approved revision's run,
    so a change of the session is not counted twice). `latest` is the strategy's latest revision when the caller
    already has it."""
    latest = latest or golden.revision.strategy.revisions.first() or golden.revision
    newer = latest if latest.pk != golden.revision_id else None
    approved = RevisionCheck(golden.revision, golden.result, _run(golden, golden.revision))
    status = GoldenStatus(golden, approved, newer)
    if newer is not None and check_latest:
        status.latest = RevisionCheck(newer, approved.fresh, _run(golden, newer),
                                      ("approved revision", "latest revision"))
    return status


def golden_statuses(goldens) -> list[GoldenStatus]:
    """Check many goldens against their approved revisions (one run each; the newer revisions are named, not run),
    looking each strategy's latest revision up once."""
    goldens = list(goldens)
    strategy_ids = {g.revision.strategy_id for g in goldens}
    latest: dict[int, StrategyRevision] = {}
    for revision in StrategyRevision.objects.filter(strategy_id__in=strategy_ids).select_related("strategy"):
        latest.setdefault(revision.strategy_id, revision)  # revisions are ordered newest first
    return [golden_status(g, latest.get(g.revision.strategy_id), check_latest=False) for g in goldens]
