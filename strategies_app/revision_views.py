"""The revisions page of a strategy (web.md screen 2): its saved revisions, the diff of two of them (or of one and
the working draft) as documents and as the requests they assemble on a session, and the apply panel."""

from __future__ import annotations

from typing import Any

from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from assembly.strategy import strategy_revision
from strategies_app import presenters
from strategies_app.access import can_create_strategies, can_edit_strategy
from strategies_app.models import Strategy
from strategies_app.selectors import revision_by_prefix, strategy_or_404, strategy_revisions
from strategies_app.session_previews import PreviewSession, draft_preview, session_previews


def _side(strategy: Strategy, choice: str) -> tuple[str, str, dict[str, Any]] | None:
    """'draft' or a revision sha (or a prefix of at least 6) -> (the full choice, label, document)."""
    if choice == "draft":
        return "draft", _("working draft (version %(version)s)") % {"version": strategy.version}, strategy.draft
    found = revision_by_prefix(strategy, choice)
    if found is None:
        return None
    return found.revision, _("revision %(revision)s") % {"revision": found.revision[:12]}, found.document


def _request_lines(strategy: Strategy, document: dict[str, Any], session: PreviewSession | None) -> list[str]:
    return presenters.request_lines(*draft_preview(strategy, document, session))


def _default_sides(revision_rows: list, draft_revision: str) -> tuple[str, str]:
    """What the diff form compares first: an unsaved draft against the latest revision, else the latest revision
    against the one before it (never a side against itself while two different documents exist)."""
    if not revision_rows:
        return "draft", "draft"
    latest = revision_rows[0].revision
    if latest != draft_revision or len(revision_rows) == 1:
        return latest, "draft"
    return revision_rows[1].revision, latest


@require_GET
def revisions(request, slug):
    strategy = strategy_or_404(slug)
    revision_rows = strategy_revisions(strategy)
    previews = session_previews()
    session = previews.chosen(request.GET.get("session"), strategy)
    context: dict[str, Any] = {"strategy": strategy, "revisions": revision_rows, "session": session,
                               "sessions": previews.picker(),
                               "can_edit": can_edit_strategy(request.user, strategy),
                               "can_copy": can_create_strategies(request.user),
                               "draft_revision": strategy_revision(strategy.draft),
                               **previews.apply_panel(request.user, strategy)}
    default_a, default_b = _default_sides(revision_rows, context["draft_revision"])
    a_choice, b_choice = request.GET.get("a") or default_a, request.GET.get("b") or default_b
    context.update(a=a_choice, b=b_choice)
    status = 200
    if "a" in request.GET or "b" in request.GET:
        a, b = _side(strategy, a_choice), _side(strategy, b_choice)
        if a is None or b is None:
            context["diff_error"] = _("Choose two revisions of this strategy (or its draft) to compare.")
            status = 404
        else:
            (a_key, a_label, a_document), (b_key, b_label, b_document) = a, b
            context.update(a=a_key, b=b_key)
            document_diff = presenters.line_diff(presenters.document_lines(a_document),
                                                 presenters.document_lines(b_document), a_label, b_label)
            request_diff = presenters.line_diff(_request_lines(strategy, a_document, session),
                                                _request_lines(strategy, b_document, session), a_label, b_label)
            context["diff"] = {"a": a_label, "b": b_label, "same": a_document == b_document,
                               "document": document_diff, "request": request_diff}
    return render(request, "strategies/revisions.html", context, status=status)
