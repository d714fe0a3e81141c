"""World info inclusion groups: SillyTavern 1.18's `filterByInclusionGroups`, one winner per group and pass.

The new matches of a pass (candidate order) are grouped by every name in their `group` field (split on ", ").
Groups are visited in JavaScript's object key order (integer-like names ascending, then the rest as met):

* group scoring first (entry `use_group_scoring`, else the book's): a scored member whose key score is below the
  group's best leaves;
* a group whose name equals the whole `group` field of an entry activated in an earlier pass loses every member.
  SillyTavern compares the field as written, so an active entry of "a,b" does not close group "a";
* a group of one keeps it; otherwise its first sticky member wins (worldinfo_timed), else the `group_override` member of highest `order` wins (ties: the earlier
  candidate), else SillyTavern's weighted roll (`worldinfo_chance`; unseeded, the member most likely to win
  it: the highest `group_weight`, ties to the earlier candidate).

Removing is SillyTavern's `newEntries.splice(newEntries.indexOf(entry), 1)`: removing an entry a previous group
already removed finds no index (-1) and takes the last remaining match instead. An entry in two groups that both
drop it therefore costs the pass another entry; `GroupLoss.in_place_of` names the entry that was meant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GroupLoss:
    match: Any  # the worldinfo_scan.Match that left the pass
    group: str
    winner: Any | None  # the Match that won the group; None: scoring, or an earlier pass already won it
    why: str
    in_place_of: Any | None = None  # the Match SillyTavern meant to remove (set when the splice missed it)


def object_key_order(names: Sequence[str]) -> list[str]:
    """Object.keys order: array-index-like names ascending, then the others in insertion order."""
    numeric = [n for n in names if n.isascii() and n.isdecimal() and (n == "0" or not n.startswith("0"))
               and len(n) <= 10 and int(n) < 2**32 - 1]  # an index has at most 10 digits
    chosen = set(numeric)
    return sorted(numeric, key=int) + [n for n in names if n not in chosen]


def filter_inclusion_groups(
    matches: Sequence[Any],
    *,
    groups_of: Callable[[Any], tuple[str, ...]],
    entry_of: Callable[[Any], Any],
    closed: Callable[[str], bool],
    scored: Callable[[Any], bool],
    score: Callable[[Any], int],
    sticky: Callable[[Any], bool] = lambda _match: False,
    pick: Callable[[list[int]], tuple[int, float | None]] | None = None,
) -> tuple[list[Any], list[GroupLoss]]:
    """The matches that survive the pass's inclusion groups, and every loss in the order it happened.

    `groups_of(match)`: the group names; `entry_of(match)`: its WorldBookEntry; `closed(name)`: an entry activated
    in an earlier pass has exactly this `group` field; `scored(match)`: group scoring applies to it;
    `score(match)`: its key score; `sticky(match)`: a sticky timed effect applies to it (it wins its group);
    `pick(weights)`: the index of the weighted winner and its roll (default: the highest weight, no roll)."""
    grouped: dict[str, list[Any]] = {}
    for match in matches:
        for name in groups_of(match):
            grouped.setdefault(name, []).append(match)
    remaining = list(matches)
    losses: list[GroupLoss] = []
    if not grouped:
        return remaining, losses
    names = object_key_order(list(grouped))

    def remove(match: Any, group: str, winner: Any | None, why: str) -> None:
        index = next((i for i, m in enumerate(remaining) if m is match), -1)
        if index >= 0:
            losses.append(GroupLoss(remaining.pop(index), group, winner, why))
        elif remaining:  # splice(-1, 1)
            losses.append(GroupLoss(remaining.pop(), group, winner, why, in_place_of=match))

    for name in names:
        members = grouped[name]
        if not any(scored(m) for m in members):
            continue
        scores = [score(m) for m in members]
        best = max(scores)
        kept = []
        for match, value in zip(members, scores, strict=True):
            if scored(match) and value < best:
                remove(match, name, None, f"with a lower key score ({value} < {best})")
            else:
                kept.append(match)
        grouped[name] = kept

    for name in names:
        members = grouped[name]
        if closed(name):
            for match in members:
                remove(match, name, None, "(the group already activated an entry in an earlier pass)")
            continue
        if len(members) <= 1:
            continue
        overrides = [m for m in members if entry_of(m).group_override]
        held = next((m for m in members if sticky(m)), None)
        if held is not None:
            winner, why = held, f"to entry {entry_of(held).uid} (sticky)"
        elif overrides:
            winner = max(overrides, key=lambda m: (entry_of(m).order, -overrides.index(m)))
            why = f"to entry {entry_of(winner).uid} (group override with the highest order)"
        else:
            weights = [entry_of(m).group_weight for m in members]
            index, roll = pick(weights) if pick is not None else (weights.index(max(weights)), None)
            winner = members[index]
            why = (f"to entry {entry_of(winner).uid} (the most likely winner: highest group weight)" if roll is None
                   else f"to entry {entry_of(winner).uid} (weighted roll {roll:.2f} of {sum(weights)})")
        for match in members:
            if match is not winner:
                remove(match, name, winner, why)
    return remaining, losses
