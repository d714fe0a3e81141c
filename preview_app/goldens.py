"""Is a golden snapshot still true? (web.md screen 5)

A golden stands for "what this session sends with this strategy", approved by QA at one saved revision. It is
checked against a fresh run of the session with the strategy's latest saved revision, so both kinds of change fail
it: a new revision of the strategy that changes the request, and a change of the session, its resources or the
engine. The status says which revision was checked, the message-by-message alignment says what changed, and the
unified diff of the two result JSON documents shows every changed field.

A golden is stored as JSON (`GoldenSnapshot.result`), so the check stays on documents: the fresh run is dumped once
and diffed as JSON, and only the alignment reads typed messages (validated from both documents).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from assembly import AssemblyError, assemble
from assembly.results import RequestMessage
from preview_app.compare import Alignment, align_messages
from preview_app.models import GoldenSnapshot
from preview_app.previews import session_request, strategy_document
from strategies_app.models import StrategyRevision


@dataclass
class GoldenStatus:
    golden: GoldenSnapshot
    checked_revision: StrategyRevision
    fresh: dict[str, Any]  # the fresh result JSON, or the engine's error JSON
    diff: list[str]
    alignment: Alignment

    @property
    def status(self) -> str:
        return "matches" if not self.diff else "differs"

    @property
    def revision_moved(self) -> bool:
        return self.checked_revision.pk != self.golden.revision_id

    @property
    def error(self) -> dict[str, Any] | None:
        return self.fresh if self.fresh.get("ok") is False else None


def _messages(result: dict[str, Any]) -> list[RequestMessage]:
    """The request messages of a result document (none in an error document)."""
    return [RequestMessage.model_validate(m) for m in (result.get("request") or {}).get("messages") or []]


def result_diff(approved: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """Unified diff of two result JSON documents (keys sorted); empty when they are equal."""
    before = json.dumps(approved, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    after = json.dumps(fresh, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return list(difflib.unified_diff(before, after, "approved", "now", lineterm=""))


def golden_status(golden: GoldenSnapshot, latest: StrategyRevision | None = None) -> GoldenStatus:
    """Check one golden. `latest` is the strategy's latest revision when the caller already has it."""
    strategy = golden.revision.strategy
    checked = latest or strategy.revisions.first() or golden.revision
    try:
        fresh = assemble(session_request(golden.session, strategy_document(strategy, checked.document))).model_dump(
            mode="json")
    except AssemblyError as error:
        fresh = error.to_json()
    return GoldenStatus(golden, checked, fresh, result_diff(golden.result, fresh),
                        align_messages(_messages(golden.result), _messages(fresh)))


def golden_statuses(goldens) -> list[GoldenStatus]:
    """Check many goldens, looking each strategy's latest revision up once."""
    goldens = list(goldens)
    strategy_ids = {g.revision.strategy_id for g in goldens}
    latest: dict[int, StrategyRevision] = {}
    for revision in StrategyRevision.objects.filter(strategy_id__in=strategy_ids).select_related("strategy"):
        latest.setdefault(revision.strategy_id, revision)  # revisions are ordered newest first
    return [golden_status(g, latest.get(g.revision.strategy_id)) for g in goldens]
