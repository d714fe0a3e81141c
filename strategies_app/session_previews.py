"""The sessions the strategy pages preview a draft on, as a port: strategies_app says what it needs of sessions,
the app that owns sessions (`preview_app`, in its `AppConfig.ready`) registers the provider. So the editor's live
preview, its session picker and the apply panel work without strategies_app importing preview_app.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from assembly import AssemblyError, AssemblyResult
from strategies_app.models import Strategy
from studio.engine_runs import assemble


class PreviewSession(Protocol):
    """What the strategy pages read of a session themselves."""

    pk: int
    name: str
    preset_id: int | None


class SessionPreviews(Protocol):
    def chosen(self, raw: Any, strategy: Strategy, remembered: Any = None) -> PreviewSession | None:
        """The session a preview runs on: the one asked for (`raw`: a pk from the query, the form or the user's
        pick for this strategy), else `remembered` (the user's last session) when its host runs the strategy, else
        one the strategy is applied to, else the first that runs it; None when there are no sessions."""

    def picker(self) -> Any:
        """Every session by name, for the preview's session picker (pk and name)."""

    def request(self, strategy: Strategy, document: dict[str, Any], session: PreviewSession | None) -> dict[str, Any]:
        """The engine request of `document` (a draft or revision of `strategy`) on `session`."""

    def align(self, a: list[Any], b: list[Any]) -> Any:
        """Two requests' messages aligned as the compare view aligns them (`rows` with their `changes`, `counts`)."""

    def applied_by_strategy(self, strategy_ids: list[int]) -> dict[int, list[PreviewSession]]:
        """Strategy pk (of `strategy_ids`) -> the first few sessions it is applied to, by name."""

    def applied(self, session: PreviewSession) -> tuple[Strategy, dict[str, Any]] | None:
        """The strategy applied to `session` and its applied document; None when assembly is off."""

    def apply_panel(self, user, strategy: Strategy, results: list[dict[str, Any]] | None = None,
                    search: str = "") -> dict[str, Any]:
        """The template context of the "apply to sessions" panel (`strategies/apply.html#apply`): the sessions
        whose name holds `search`, a bounded number of them."""


_provider: SessionPreviews | None = None


def register(provider: SessionPreviews) -> None:
    global _provider
    _provider = provider


def session_previews() -> SessionPreviews:
    if _provider is None:
        raise ImproperlyConfigured("no installed app provides sessions to preview strategies on (preview_app does)")
    return _provider


class DraftPreviews:
    """The engine runs of one editor request, one per draft, on `session`'s request (read once). A write checks the
    stored draft (its locks, a block move's blocks) and the page after it shows the new one; a run is shared wherever
    both look at the same draft (a refused write, the checked block move), and the studio's result cache
    (studio/result_cache.py) answers a request asked before: the draft before a write is the one the page showed, so
    a write runs the engine once.
    `model` (a catalogue name) counts the request with its tokenizer and framing against its window, as the preview
    page's model picker does."""

    def __init__(self, strategy: Strategy, session: PreviewSession | None, *, model: str | None = None,
                 generation: str | None = None):
        self._strategy, self._session, self.model = strategy, session, model
        self.generation = generation if generation != "normal" else None  # normal is the engine's default
        self._base: dict[str, Any] | None = None  # the session's request, its strategy replaced per draft
        self._runs: dict[str, AssemblyResult | AssemblyError] = {}
        self._shown: dict[str, tuple[AssemblyResult | None, dict[str, Any] | None]] = {}

    def request(self, draft: dict[str, Any]) -> dict[str, Any]:
        if self._base is None:
            base = session_previews().request(self._strategy, draft, self._session)
            self._base = {**base, **({"model": self.model} if self.model else {}),
                          **({"generation": {"type": self.generation}} if self.generation else {})}
            return self._base
        return {**self._base, "strategy": {**draft, "id": self._strategy.slug}}

    def run(self, draft: dict[str, Any]) -> AssemblyResult:
        """The result of `draft`; the engine's refusal raises (again, for a draft already refused)."""
        key = json.dumps(draft, ensure_ascii=False, sort_keys=True)  # jsonb (PostgreSQL) reorders keys
        if key not in self._runs:
            self._runs[key] = self._assembled(self.request(draft))
        found = self._runs[key]
        if isinstance(found, AssemblyError):
            raise found
        return found

    @staticmethod
    def _assembled(request: dict[str, Any]) -> AssemblyResult | AssemblyError:
        try:
            return assemble(request)
        except AssemblyError as error:
            return error

    def shown(self, draft: dict[str, Any]) -> tuple[AssemblyResult | None, dict[str, Any] | None]:
        """(result, refusal JSON) of `draft`: what the editor shows (its presenters read the result)."""
        key = json.dumps(draft, ensure_ascii=False, sort_keys=True)  # jsonb (PostgreSQL) reorders keys
        if key not in self._shown:
            try:
                self._shown[key] = self.run(draft), None
            except AssemblyError as error:
                self._shown[key] = None, error.to_json()
        return self._shown[key]


def draft_preview(strategy: Strategy, document: dict[str, Any], session: PreviewSession | None):
    """(result, refusal JSON): the engine run of `document` on `session` the strategy pages show."""
    return DraftPreviews(strategy, session).shown(document)
