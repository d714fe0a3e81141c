"""Which strategy a preview or one side of a comparison runs, written as one short string.

- `applied` (or empty): the session's applied strategy snapshot;
- `<strategy id>`: that strategy's working draft;
- `<strategy id>@<revision sha>`: that saved revision;
- `<revision sha>` (64 hex digits): the saved revision with that sha.

The same strings fill the pickers of the preview and compare pages (`choice_options`), so a pick can always be turned
back into the preview's bookmarkable `?strategy=&revision=` query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from preview_app.models import Session
from preview_app.previews import strategy_document
from strategies_app.access import revision_for_read, strategy_for_read
from strategies_app.models import Strategy, StrategyRevision
from strategies_app.presenters import strategy_name
from strategies_app.revision_notes import revision_note
from strategies_app.selectors import visible_revisions_by_strategy, visible_strategies
from studio.errors import ServiceError

APPLIED = "applied"
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class Choice:
    spec: str  # the canonical string (see the module docstring)
    label: str
    document: dict[str, Any]  # the strategy document to assemble with, `id` set to the strategy's slug
    strategy: Strategy | None
    revision: StrategyRevision | None  # None: a working draft

    @property
    def query(self) -> dict[str, str]:
        """The preview's query parameters for this choice ({} for the applied one)."""
        if self.spec == APPLIED:
            return {}
        query = {"strategy": self.strategy.slug}
        if self.revision is not None:
            query["revision"] = self.revision.revision
        return query


def _applied(session: Session) -> Choice:
    if session.applied_document is None:
        raise ServiceError("SESSION_ASSEMBLY_OFF", f"session {session.pk}: no strategy is applied (assembly is off); "
                           "choose a strategy", status=409, detail={"path": "strategy"})
    label = _("applied: %(strategy)s @ %(revision)s") % {
        "strategy": strategy_name(session.applied_strategy.name), "revision": session.applied_revision.revision[:12]}
    return Choice(APPLIED, label, strategy_document(session.applied_strategy, session.applied_document),
                  session.applied_strategy, session.applied_revision)


def _revision_choice(strategy: Strategy, revision: StrategyRevision) -> Choice:
    return Choice(f"{strategy.slug}@{revision.revision}", f"{strategy_name(strategy.name)} @ {revision.revision[:12]}",
                  strategy_document(strategy, revision.document), strategy, revision)


def _draft_choice(strategy: Strategy) -> Choice:
    return Choice(strategy.slug, _("%(strategy)s (working draft)") % {"strategy": strategy_name(strategy.name)},
                  strategy_document(strategy, strategy.draft), strategy, None)


def resolve_choice(session: Session, spec: str | None) -> Choice:
    """The choice a spec string names (see the module docstring); unknown names are 404, bad shapes 400."""
    spec = (spec or "").strip()
    if spec in ("", APPLIED):
        return _applied(session)
    if "@" in spec:
        slug, sha = spec.split("@", 1)
        strategy = strategy_for_read(slug)
        return _revision_choice(strategy, revision_for_read(strategy, sha))
    if _SHA.match(spec):
        revision = StrategyRevision.objects.select_related("strategy").filter(revision=spec).first()
        if revision is None:
            raise ServiceError("NOT_FOUND", f"revision {spec!r} does not exist", status=404, detail={"id": spec})
        return _revision_choice(revision.strategy, revision)
    return _draft_choice(strategy_for_read(spec))


def query_choice(session: Session, strategy: str | None, revision: str | None) -> Choice:
    """The preview's `?strategy=&revision=`: no strategy is the applied one; a strategy without revision its draft."""
    if strategy:
        return resolve_choice(session, f"{strategy}@{revision}" if revision else strategy)
    if revision:
        raise ServiceError("INPUT_INVALID", "revision: give strategy=<id> with it", detail={"path": "revision"})
    return _applied(session)


@dataclass
class Option:
    value: str
    label: str


@dataclass
class OptionGroup:
    label: str
    options: list[Option]


def choice_options(session: Session) -> list[OptionGroup]:
    """Everything a picker offers: the applied strategy, then per visible strategy its draft and saved revisions
    (two queries, however many strategies there are)."""
    groups: list[OptionGroup] = []
    if session.applied_document is not None:
        groups.append(OptionGroup(_("Applied to this session"), [Option(APPLIED, _applied(session).label)]))
    revisions = visible_revisions_by_strategy()
    for strategy in visible_strategies().only("id", "slug", "name", "builtin"):
        shown = strategy_name(strategy.name)  # pickers name strategies as the lists do; the group gives the id
        options = [Option(strategy.slug, _("%(strategy)s (working draft)") % {"strategy": shown})]
        for revision in revisions.get(strategy.pk, []):
            note = f" · {revision_note(revision.note)}" if revision.note else ""
            options.append(Option(f"{strategy.slug}@{revision.revision}",
                                  f"{shown} @ {revision.revision[:12]}{note}"))
        badge = " · " + _("built-in") if strategy.builtin else ""
        groups.append(OptionGroup(f"{shown} ({strategy.slug}){badge}", options))
    return groups
