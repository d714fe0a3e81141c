"""The sessions the strategy pages preview a draft on, as a port: strategies_app says what it needs of sessions,
the app that owns sessions (`preview_app`, in its `AppConfig.ready`) registers the provider. So the editor's live
preview, its session picker and the apply panel work without strategies_app importing preview_app.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from assembly import AssemblyError, assemble
from strategies_app.models import Strategy


class PreviewSession(Protocol):
    """What the strategy pages read of a session themselves."""

    pk: int
    name: str
    preset_id: int | None


class SessionPreviews(Protocol):
    def chosen(self, raw: Any, strategy: Strategy) -> PreviewSession | None:
        """The session a preview runs on: the one asked for (`raw`: a pk from the query or form), else one the
        strategy is applied to, else the first; None when there are no sessions."""

    def picker(self) -> Any:
        """Every session by name, for the preview's session picker (pk and name)."""

    def request(self, strategy: Strategy, document: dict[str, Any], session: PreviewSession | None) -> dict[str, Any]:
        """The engine request of `document` (a draft or revision of `strategy`) on `session`."""

    def applied_by_strategy(self) -> dict[int, list[PreviewSession]]:
        """Strategy pk -> the sessions it is applied to."""

    def apply_panel(self, user, strategy: Strategy, results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The template context of the "apply to sessions" panel (`strategies/apply.html#apply`)."""


_provider: SessionPreviews | None = None


def register(provider: SessionPreviews) -> None:
    global _provider
    _provider = provider


def session_previews() -> SessionPreviews:
    if _provider is None:
        raise ImproperlyConfigured("no installed app provides sessions to preview strategies on (preview_app does)")
    return _provider


def draft_preview(strategy: Strategy, document: dict[str, Any], session: PreviewSession | None):
    """(result JSON, refusal JSON): the engine run of `document` on `session` the strategy pages show."""
    try:
        return assemble(session_previews().request(strategy, document, session)).model_dump(mode="json"), None
    except AssemblyError as error:
        return None, error.to_json()
