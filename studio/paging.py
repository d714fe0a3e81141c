"""Long lists in pages (quality.md: no request may hold a worker): a list page shows at most `PER_PAGE` rows of its
query, the page a `?page=` number names (the first for one that is not a number or is below 1, the last past the
end), with links to the pages beside it that keep the rest of the query string."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, QueryDict

PER_PAGE = 100
SEARCH_CHARS = 100  # a name search longer than this is cut: no name is that long


@dataclass(frozen=True)
class ListPage:
    rows: list[Any]
    count: int  # rows in the whole list
    first: int  # the shown rows' numbers in it, from 1 (0 and 0 for an empty list)
    last: int
    previous_url: str | None
    next_url: str | None

    @property
    def paged(self) -> bool:
        return self.previous_url is not None or self.next_url is not None


def list_page(request: HttpRequest, rows: QuerySet | Sequence[Any], *, param: str = "page",
              per_page: int = PER_PAGE) -> ListPage:
    """The page of `rows` that `request.GET[param]` asks for (an ordered query: one COUNT and one LIMIT query)."""
    try:
        asked = int(request.GET.get(param, "1"))
    except ValueError:  # not a number (or one of thousands of digits)
        asked = 1
    page = Paginator(rows, per_page).get_page(max(asked, 1))  # past the end: the last page
    shown = list(page.object_list)

    def url(number: int) -> str:
        query = request.GET.copy()
        query[param] = str(number)
        return f"?{query.urlencode()}"

    count = page.paginator.count
    return ListPage(shown, count, page.start_index() if shown else 0, page.end_index() if shown else 0,
                    url(page.previous_page_number()) if page.has_previous() else None,
                    url(page.next_page_number()) if page.has_next() else None)


def list_head(rows: QuerySet, size: int) -> tuple[list[Any], int]:
    """A list's first `size` rows and how many it has (counted only when they are not all among the first)."""
    head = list(rows[:size])
    return head, len(head) if len(head) < size else rows.count()


def related_count(model, parent: str) -> Coalesce:
    """How many `model` rows point at a listed row through `parent`: a subquery the database runs for the rows of
    the page only (a join and GROUP BY counts every row of the list, and multiplies two counts' rows)."""
    rows = model.objects.filter(**{parent: OuterRef("pk")}).order_by().values(parent)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")), 0)


def search_text(data: QueryDict, param: str = "q") -> str:
    """The name search a list was asked for (`data`: the query, or a posted form that carries it on), trimmed and
    bounded; without NUL, which no stored name holds (PostgreSQL refuses it in a query)."""
    return data.get(param, "").replace("\x00", "").strip()[:SEARCH_CHARS]
