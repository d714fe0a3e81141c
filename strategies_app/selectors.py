"""Reads of strategies, revisions and resources for the pages and the API (writes are in `services`)."""

from __future__ import annotations

import re

from django.db.models import BooleanField, Count, ExpressionWrapper, OuterRef, Q, QuerySet, Subquery
from django.http import Http404

from strategies_app.models import (
    Character,
    Persona,
    Preset,
    PromptEntry,
    RegexScript,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
    WorldBookEntry,
)
from studio.paging import related_count


def strategy_or_404(slug: str) -> Strategy:
    strategy = Strategy.objects.select_related("owner").filter(slug=slug).first()
    if strategy is None:
        raise Http404(f"strategy {slug!r} does not exist")
    return strategy


def visible_strategies() -> QuerySet[Strategy]:
    """Strategies the studio lists and offers (built-ins and the designers')."""
    return Strategy.objects.filter(visible=True)


def listed_strategies(search: str = "") -> QuerySet[Strategy]:
    """The strategy list of the page and the API: each visible strategy (whose name or id holds `search`, when one is
    given) with its latest revision (`latest_revision`, `latest_note`, `latest_at`) and how many sessions apply it
    (`session_count`)."""
    latest = StrategyRevision.objects.filter(strategy=OuterRef("pk")).order_by("-created_at", "-id")
    strategies = visible_strategies()
    if search:
        strategies = strategies.filter(Q(name__icontains=search) | Q(slug__icontains=search))
    return strategies.select_related("owner").annotate(
        latest_revision=Subquery(latest.values("revision")[:1]), latest_note=Subquery(latest.values("note")[:1]),
        latest_at=Subquery(latest.values("created_at")[:1]), session_count=Count("sessions", distinct=True)
    ).order_by(*Strategy._meta.ordering)  # a count's GROUP BY drops the model's ordering


def strategy_revisions(strategy: Strategy) -> list[StrategyRevision]:
    """The revisions page's list: newest first, with authors and how many sessions apply each."""
    # an aggregate drops Meta.ordering (Django 3.1+): the order is said again
    return list(strategy.revisions.select_related("author").annotate(session_count=Count("sessions"))
                .order_by("-created_at", "-id"))


def latest_revision(strategy: Strategy) -> StrategyRevision | None:
    return strategy.revisions.select_related("author").first()


def recent_revisions(strategy: Strategy) -> list[StrategyRevision]:
    """The revisions the apply panel offers."""
    return list(strategy.revisions.all()[:50])


def revision_by_prefix(strategy: Strategy, choice: str) -> StrategyRevision | None:
    """A revision of `strategy` by its sha or a prefix of at least 6 hex digits."""
    if not re.fullmatch(r"[0-9a-f]{6,64}", choice):
        return None
    return strategy.revisions.filter(revision__startswith=choice).first()


def visible_revisions_by_strategy() -> dict[int, list[StrategyRevision]]:
    """Strategy pk -> its saved revisions, newest first, for the strategy pickers (one query for all)."""
    revisions: dict[int, list[StrategyRevision]] = {}
    for revision in StrategyRevision.objects.filter(strategy__visible=True).only(
            "id", "strategy_id", "revision", "note", "created_at"):
        revisions.setdefault(revision.strategy_id, []).append(revision)
    return revisions


def preset_prompts(preset_id: int | None) -> dict[str, tuple[str, str]]:
    """A preset's prompts, identifier -> (name, falling back to the identifier; content); {} without a preset."""
    if preset_id is None:
        return {}
    return {identifier: (name or identifier, content) for identifier, name, content in
            PromptEntry.objects.filter(preset_id=preset_id).values_list("identifier", "name", "content")}


def resources_by_kind() -> dict[str, QuerySet]:
    return {"preset": Preset.objects.all(), "character": Character.objects.all(), "persona": Persona.objects.all(),
            "worldbook": WorldBook.objects.all(), "regex": RegexScript.objects.all(),
            "template": TextTemplate.objects.all()}


def resource_rows() -> list[tuple[str, QuerySet]]:
    """Every imported resource by kind, in the resource page's order; presets and world books count their items."""
    with_avatar = ExpressionWrapper(Q(avatar__isnull=False), output_field=BooleanField())
    return [
        ("preset", Preset.objects.select_related("owner").annotate(items=related_count(PromptEntry, "preset"))),
        ("character", Character.objects.select_related("owner").defer("avatar").annotate(has_avatar=with_avatar)),
        ("worldbook", WorldBook.objects.select_related("owner").annotate(items=related_count(WorldBookEntry, "book"))),
        ("persona", Persona.objects.select_related("owner")),
        ("template", TextTemplate.objects.select_related("owner")),
    ]


def regex_scripts() -> QuerySet[RegexScript]:
    """The global regex scripts in the order sessions run them (sort order, then name)."""
    return RegexScript.objects.select_related("owner")


def strategy_names_by_slug(slugs) -> dict[str, str]:
    """slug -> stored name of the strategies named by `slugs` (those that still exist)."""
    return dict(Strategy.objects.filter(slug__in=list(slugs)).values_list("slug", "name")) if slugs else {}
