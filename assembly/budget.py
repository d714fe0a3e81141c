"""Selecting context material within a capacity budget (engine.md §3, generalising seed 002).

The goal of the turn always goes in first and must fit on its own. The remaining items are filtered (an irrelevant
item never goes in, whatever the room) and then taken greedily: by descending `priority`, ties in input order, each
item taken when its cost fits in what is left, otherwise skipped as `over_budget` and the walk goes on to the next one
(a smaller item further down may still fit). Costs are whatever unit the caller counts in: the seed's hand-countable
units, or token counts from `count_tokens`.

Every argument is checked before anything is selected, so a bad cost anywhere in the list fails the whole call:
`limit`, `goal_cost` and every `cost` are non-negative `int` (bool and float are rejected even when integral).

Result (`BudgetSelection`):
- `selected`: the goal first (`kind` "goal", `index` None), then the items in the order they were taken (descending
  priority); each keeps its input `index`, so a caller that wants input order sorts by it.
- `skipped`: the items left out, in input order, each with `reason` `irrelevant` or `over_budget`.
- `limit`, `used` (goal included) and `remaining` (`limit - used`).

Items are mappings or objects with `text` (str), `cost`, `relevant` (bool), optional `priority` (a finite int or
float, default 0) and optional `id` (str). Inputs are read, never modified.

Error codes (`BudgetError.code`, `status` 400; the message names the item by id or index and the field):
- BUDGET_INVALID_LIMIT, BUDGET_INVALID_GOAL_COST, BUDGET_INVALID_COST: not a non-negative int.
- BUDGET_INVALID_GOAL: the goal is not a string.
- BUDGET_INVALID_ITEMS: `items` is not a list of items.
- BUDGET_INVALID_ITEM: an item lacks a required field, or `text`, `relevant`, `priority` or `id` has the wrong type.
- BUDGET_GOAL_TOO_LARGE: `goal_cost` exceeds `limit`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assembly.errors import CodedError
from assembly.reading import describe

_MISSING = object()


class BudgetError(CodedError):
    """A budget argument is invalid or the goal does not fit; nothing was selected."""

    def __init__(self, code: str, message: str, *, field: str | None = None, index: int | None = None,
                 status: int = 400, **detail: Any):
        super().__init__(code, message, status=status, detail={"field": field, "index": index, **detail})
        self.field = field
        self.index = index


class BudgetEntry(BaseModel):
    """The goal or one item, as the selection saw it."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["goal", "item"]
    index: int | None  # position in `items`; None for the goal
    id: str | None = None
    text: str
    cost: int
    priority: int | float = 0


class SkippedEntry(BudgetEntry):
    reason: Literal["irrelevant", "over_budget"]


class BudgetSelection(BaseModel):
    model_config = ConfigDict(frozen=True)

    selected: list[BudgetEntry]
    skipped: list[SkippedEntry]
    limit: int
    used: int
    remaining: int


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _read(item: Any, field: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(field, _MISSING)
    return getattr(item, field, _MISSING)


def _checked_item(item: Any, index: int) -> tuple[BudgetEntry, bool]:
    """Validate one item; returns its entry and whether it is relevant."""
    raw_id = _read(item, "id")
    label = f"item {raw_id!r} (#{index})" if isinstance(raw_id, str) else f"item #{index}"

    def fail(code: str, field: str, expected: str, got: Any) -> BudgetError:
        shown = "nothing (the field is missing)" if got is _MISSING else describe(got)
        return BudgetError(code, f"{label}: {field} must be {expected}, got {shown}", field=field, index=index)

    if raw_id is _MISSING or raw_id is None:
        item_id = None
    elif isinstance(raw_id, str):
        item_id = raw_id
    else:
        raise fail("BUDGET_INVALID_ITEM", "id", "a string", raw_id)
    text = _read(item, "text")
    if not isinstance(text, str):
        raise fail("BUDGET_INVALID_ITEM", "text", "a string", text)
    cost = _read(item, "cost")
    if not _is_count(cost):
        raise fail("BUDGET_INVALID_COST", "cost", "a non-negative integer", cost)
    relevant = _read(item, "relevant")
    if type(relevant) is not bool:
        raise fail("BUDGET_INVALID_ITEM", "relevant", "true or false", relevant)
    priority = _read(item, "priority")
    if priority is _MISSING or priority is None:
        priority = 0
    elif type(priority) not in (int, float) or not -sys.float_info.max <= priority <= sys.float_info.max:
        # compared, not math.isfinite(): that converts an int to float and overflows past 1e308
        raise fail("BUDGET_INVALID_ITEM", "priority", "a finite number", priority)
    entry = BudgetEntry(kind="item", index=index, id=item_id, text=text, cost=cost, priority=priority)
    return entry, relevant


def select_within_budget(goal: str, items: Sequence[Any], limit: int, *, goal_cost: int) -> BudgetSelection:
    """Keep the goal, then the relevant items by descending priority while they fit in `limit`."""
    if not _is_count(limit):
        raise BudgetError("BUDGET_INVALID_LIMIT", f"limit must be a non-negative integer, got {describe(limit)}", field="limit")
    if not _is_count(goal_cost):
        raise BudgetError("BUDGET_INVALID_GOAL_COST", f"goal_cost must be a non-negative integer, got {describe(goal_cost)}",
                          field="goal_cost")
    if not isinstance(goal, str):
        raise BudgetError("BUDGET_INVALID_GOAL", f"goal must be a string, got {type(goal).__name__}", field="goal")
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise BudgetError("BUDGET_INVALID_ITEMS", f"items must be a list of items, got {type(items).__name__}",
                          field="items")
    checked = [_checked_item(item, index) for index, item in enumerate(items)]
    if goal_cost > limit:
        raise BudgetError("BUDGET_GOAL_TOO_LARGE", f"the goal costs {goal_cost}, more than the whole limit {limit}",
                          field="goal_cost", goal_cost=goal_cost, limit=limit)

    remaining = limit - goal_cost
    selected = [BudgetEntry(kind="goal", index=None, text=goal, cost=goal_cost)]
    skip_reasons: dict[int, str] = {}
    candidates = []
    for entry, relevant in checked:
        if relevant:
            candidates.append(entry)
        else:
            skip_reasons[entry.index] = "irrelevant"
    # sorted() is stable, so equal priorities keep their input order.
    for entry in sorted(candidates, key=lambda candidate: -candidate.priority):
        if entry.cost <= remaining:
            selected.append(entry)
            remaining -= entry.cost
        else:
            skip_reasons[entry.index] = "over_budget"

    skipped = [SkippedEntry(**entry.model_dump(), reason=skip_reasons[entry.index])
               for entry, _ in checked if entry.index in skip_reasons]
    return BudgetSelection(selected=selected, skipped=skipped, limit=limit, used=limit - remaining,
                           remaining=remaining)
