"""The session page's composer preview: the request the typed message would send, assembled in place (compact:
one line per message with what the host keeps of it), so a designer can chat turn after turn without leaving the
page. The full preview page stays one link away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from assembly.errors import CodedError
from preview_app.macro_variables import MacroVariablesPanel, macro_variables_panel
from preview_app.models import Session, SessionEvent
from preview_app.presenters import error_context
from preview_app.previews import session_request, strategy_document
from preview_app.result_display import Row, display
from studio.engine_runs import assemble


@dataclass(frozen=True)
class ComposerPreview:
    rows: list[Row]
    tokens: int
    error: dict[str, Any] | None = None
    variables: MacroVariablesPanel | None = None  # when the request's macros read or change a variable


def composer_preview(session: Session) -> ComposerPreview | None:
    """The applied strategy's request for the session as it stands (None: assembly is off, nothing to assemble)."""
    if session.applied_document is None:
        return None
    document = strategy_document(session.applied_strategy, session.applied_document)
    try:
        result = assemble(session_request(session, document))
    except CodedError as error:
        return ComposerPreview(rows=[], tokens=0, error=error_context(error))
    return ComposerPreview(rows=display(result).rows, tokens=result.tokens.total,
                           variables=macro_variables_panel(result))


def commit_notice(created: list[SessionEvent], *, replied: bool) -> str:
    """What a committed turn appended, in the history's numbering: the typed message, the reply and any host
    records stored with them (system updates, context snapshots, pre-step messages)."""
    reply = created[-1] if replied and created else None
    rest = created[:-1] if reply is not None else created
    message = next((e for e in rest if e.role == "user" and (e.source or {}).get("kind", "user") == "user"), None)
    records = [e for e in rest if e is not message]
    if message is not None and reply is not None:
        words = _("Turn committed: your message and the reply are now history #%(message)s and #%(reply)s.") % {
            "message": message.seq, "reply": reply.seq}
    elif message is not None:
        words = _("Turn committed: your message is now history #%(message)s.") % {"message": message.seq}
    elif reply is not None:
        words = _("Turn committed: the reply is now history #%(reply)s.") % {"reply": reply.seq}
    else:
        words = _("Turn committed.")
    if records:
        words = _("%(turn)s %(records)s") % {"turn": words, "records": ngettext("The host also stored %(count)s record with it: %(seqs)s.",
                                "The host also stored %(count)s records with it: %(seqs)s.", len(records)) % {
            "count": len(records), "seqs": ", ".join(f"#{e.seq}" for e in records)}}
    return words
