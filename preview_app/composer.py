"""The session page's composer preview: the request the typed message would send, assembled in place (compact:
one line per message with what the host keeps of it), so a designer can chat turn after turn without leaving the
page. The full preview page stays one link away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assembly import assemble
from assembly.errors import CodedError
from preview_app.models import Session
from preview_app.presenters import error_context
from preview_app.previews import session_request, strategy_document
from preview_app.result_display import Row, display


@dataclass(frozen=True)
class ComposerPreview:
    rows: list[Row]
    tokens: int
    error: dict[str, Any] | None = None


def composer_preview(session: Session) -> ComposerPreview | None:
    """The applied strategy's request for the session as it stands (None: assembly is off, nothing to assemble)."""
    if session.applied_document is None:
        return None
    document = strategy_document(session.applied_strategy, session.applied_document)
    try:
        result = assemble(session_request(session, document))
    except CodedError as error:
        return ComposerPreview(rows=[], tokens=0, error=error_context(error))
    return ComposerPreview(rows=display(result).rows, tokens=result.tokens.total)
