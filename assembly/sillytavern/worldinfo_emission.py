"""World info emission: the order in which SillyTavern emits the active entries, and the `wi_format` wrapper.

`activate_world_info` lists its active entries in this order (sillytavern.md §7.5, §11): per position in
SillyTavern's numeric order 0..7; before / after and the author's note lists ascending by `order` with equal orders
later-activated first; the entries above the card's examples descending; outlets grouped by name, highest order
first; entries at depth in their (depth, role) groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from assembly.sillytavern.vocabulary import WORLD_POSITION_BY_NUMBER
from assembly.sillytavern.worldinfo_models import ActiveEntry

DEFAULT_DEPTH = 4  # SillyTavern's DEFAULT_DEPTH: an @D entry without depth joins depth-4 groups (§7.5)


def _by_order(active: Sequence[ActiveEntry]) -> list[ActiveEntry]:
    """SillyTavern's final sort: order descending, stable over activation order."""
    return sorted(active, key=lambda a: (-a.order, a.activation_index))


def depth_groups(entries: Sequence[ActiveEntry]) -> list[tuple[int | None, str, list[ActiveEntry]]]:
    """SillyTavern's `customDepthWI_<depth>_<role>` groups of the at-depth entries (given highest order first):
    (depth, role, members ascending), in creation order. A depth of None is never injected (§11.7)."""
    # The first (highest order) entry creates a group with ITS depth; others join a group whose stored depth
    # equals theirs (missing = 4) and are put in front. A group created with no depth is never joined (§11.7).
    groups: list[tuple[int | None, str, list[ActiveEntry]]] = []
    for entry in entries:
        wanted = entry.depth if entry.depth is not None else DEFAULT_DEPTH
        group = next((g for g in groups if g[0] == wanted and g[1] == entry.role), None)
        if group is not None:
            group[2].insert(0, entry)
        else:
            groups.append((entry.depth, entry.role, [entry]))
    return groups


def emission_order(active: Sequence[ActiveEntry]) -> list[ActiveEntry]:
    """The active entries (in activation order) in the order SillyTavern emits them: see the module doc."""
    ordered = _by_order(active)
    sequence: list[ActiveEntry] = []
    for number in sorted(WORLD_POSITION_BY_NUMBER):
        position = WORLD_POSITION_BY_NUMBER[number]
        here = [a for a in ordered if a.position == position]
        if position == "before_example_messages":
            sequence += here  # unshift, then unshift again: descending
        elif position == "outlet":
            names = list(dict.fromkeys(a.outlet_name for a in here))
            sequence += [a for name in names for a in here if a.outlet_name == name]  # push: descending
        elif position == "at_depth":
            sequence += [a for _d, _r, members in depth_groups(here) for a in members]
        else:
            sequence += list(reversed(here))  # unshift: ascending, equal orders later-activated first
    return sequence


def format_world_info(value: str | Sequence[str], wi_format: str) -> str:
    """The preset's `wi_format` wrapper (sillytavern.md §4.1): "" for no world info, the text itself when the
    format is blank, else the format with every "{0}" replaced by the text. A list is joined with "\\n" first."""
    text = value if isinstance(value, str) else "\n".join(value)
    if not text:
        return ""
    if not wi_format.strip():
        return text
    return wi_format.replace("{0}", text)

