"""The preview's world-info log (engine.md §5, web.md screen 3): every entry in or out, why, in the request table's numbering,
and where each active entry landed (request message numbers and position).

Words come from the engine's typed facts (the reason's kind, key and `matched_in`, the entry's position and depth)
and the result's request messages (`message.parts`, node ids), never from the engine's English reason text, so
they translate. Three skip reasons (trigger, delayed, delayed_until_recursion) carry their numbers only in the
engine's text: those are read back from its fixed wording (`ENGINE_TEXTS`) and worded again; a text that no longer
reads as expected is shown as the engine wrote it. So does a seeded inclusion-group pick (`GROUP_ROLL_TEXT`: the
roll and the total weight); a probability roll is a typed field (`roll`, set when the chat has a chance seed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from assembly.results import AssemblyResult, NodeView
from assembly.sillytavern.worldinfo_models import ActivationReason, MatchSource, SkipReason
from assembly.sillytavern.worldinfo_scan import PREVIEW_ROLL
from studio.wording import engine_word, list_words

POSITION_WORDS = {  # WorldPosition -> where SillyTavern places the entry; at_depth and outlet are worded apart
    "before": gettext_lazy("before the character description"),
    "after": gettext_lazy("after the character description"),
    "before_example_messages": gettext_lazy("before the example messages"),
    "after_example_messages": gettext_lazy("after the example messages"),
    "before_author_note": gettext_lazy("at the top of the author's note"),
    "after_author_note": gettext_lazy("at the bottom of the author's note"),
}
NODE_POSITIONS = {"depth": "at_depth"}  # a node's position_id where it differs from the world position's name
SCAN_DATA_WORDS = {
    "persona_description": gettext_lazy("the persona description"),
    "character_description": gettext_lazy("the character description"),
    "character_personality": gettext_lazy("the character's personality"),
    "character_depth_prompt": gettext_lazy("the character's depth prompt"),
    "scenario": gettext_lazy("the scenario"),
    "creator_notes": gettext_lazy("the creator's notes"),
}
ENGINE_TEXTS = {  # the engine's wording of the skip reasons whose numbers it gives only in text (worldinfo_scan)
    "trigger": re.compile(r"only for generation types (?P<types>.+); this is '(?P<generation>[^']*)'"),
    "delayed": re.compile(r"delayed until the chat has (?P<delay>\d+) messages \(it has (?P<length>\d+)\)"),
    "delayed_until_recursion": re.compile(r"waits for recursion level (?P<level>\d+); (?:no recursion pass reached "
                                          r"it|the scan stopped at level (?P<reached>\d+))"),
}
# the engine's wording of a seeded group pick (worldinfo_groups): its numbers are only in the text
GROUP_ROLL_TEXT = re.compile(r"\(weighted roll (?P<roll>\d+(?:\.\d+)?) of (?P<total>\d+)\)")
LOGIC_NAMES = {"and_any": "AND ANY", "not_all": "NOT ALL", "not_any": "NOT ANY", "and_all": "AND ALL"}  # ST's labels


@dataclass(frozen=True)
class WorldEntry:
    uid: str
    name: str
    reason: str  # why it is in or out, in the request table's numbering
    kind: str  # the engine's reason kind (constant, key, no_match, ...), or "host" when the host chose
    landed: str = ""  # an active entry: where it landed ("in #1 (before the character description)")
    rows: tuple[int, ...] = ()  # the request rows holding it


# The entries out for no reason of their own (their keys were not found, they have none, they are off): a big book
# has thousands, so the panel lists this many and counts the rest, unless asked for every one (`listed` None).
UNREMARKABLE_KINDS = ("no_match", "no_keys", "disabled")
LISTED_UNREMARKABLE = 100


@dataclass(frozen=True)
class WorldBookView:
    mode: str  # "keywords": the engine scanned; "all": the host chose the entries
    active: list[WorldEntry]
    skipped: list[WorldEntry]
    budget: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    listed: int | None = LISTED_UNREMARKABLE

    @property
    def skipped_listed(self) -> list[WorldEntry]:
        """The entries out as the panel lists them: each one out for a reason of its own (budget, chance, group,
        timing, a secondary key), and the first `listed` of the unremarkable ones."""
        if self.listed is None:
            return self.skipped
        shown, unremarkable = [], 0
        for entry in self.skipped:
            if entry.kind in UNREMARKABLE_KINDS:
                unremarkable += 1
                if unremarkable > self.listed:
                    continue
            shown.append(entry)
        return shown

    @property
    def skipped_unlisted(self) -> int:
        return len(self.skipped) - len(self.skipped_listed)


class _Request:
    """The request's rows by the node ids they hold (an outlet's entries count in the row of the node they fill)."""

    def __init__(self, result: AssemblyResult):
        self.rows: dict[str, list[int]] = {}
        nodes = {node.id: node for node in result.nodes}
        for index, message in enumerate(result.request.messages):
            for part in message.parts:
                held = [part, *(child.get("id") for child in (nodes[part].children if part in nodes else ()))]
                for node_id in held:
                    if isinstance(node_id, str) and index not in self.rows.setdefault(node_id, []):
                        self.rows[node_id].append(index)
        self.inputs = {node.id.removeprefix("input:") for node in result.nodes if node.module == "input"}

    def of(self, node_id: str) -> tuple[int, ...]:
        return tuple(self.rows.get(node_id, ()))


def _outlet_rows(result: AssemblyResult, content: str) -> tuple[int, ...]:
    """The rows an outlet entry's text fills when no node holds the entry: SillyTavern's macros filled
    `{{outlet::}}` in a text that is no prompt's (a chat message, an injection); the messages holding its text. A
    prompt that filled it holds the entry as a child (`macro_order`), found by `_Request`."""
    if not content:
        return ()
    return tuple(i for i, message in enumerate(result.request.messages)
                 if isinstance(message.content, str) and content in message.content)


def _numbers(rows: tuple[int, ...]) -> str:
    return ", ".join(f"#{row}" for row in rows)


def _where(source: MatchSource | None, request: _Request, entry_names: dict[str, str]) -> str:
    """Where a key was found, as the reader of the request table names it."""
    if source is None:
        return _("the scan buffer")
    if source.kind == "message":
        if source.message_id is None:
            return _("message %(index)s of the scanned chat (the oldest is 0)") % {"index": source.index}
        history = request.of(f"history:{source.message_id}")
        if history:
            return _("message %(rows)s") % {"rows": _numbers(history)}
        typed = request.of(f"input:{source.message_id}")
        if typed:
            return _("message %(rows)s (the current input)") % {"rows": _numbers(typed)}
        if source.message_id in request.inputs:
            return _("the current input")
        return _("a history message not in this request (scanned history outside the window)")
    if source.kind == "recursion":
        uid = str(source.uid)
        return _("the content of entry %(name)s (recursion)") % {"name": entry_names.get(uid) or uid}
    if source.kind == "scan_data":
        return str(SCAN_DATA_WORDS.get(source.field or "", source.field or ""))
    return _("an injected prompt (the author's note or an extension's prompt)")


def _found(key: str | None, source: MatchSource | None, request: _Request, names: dict[str, str]) -> str:
    if not key:  # a constant (or @@activate) entry needs no key
        return _("active without a key (constant or @@activate)")
    return _("key “%(key)s” found in %(where)s") % {"key": key, "where": _where(source, request, names)}


def _active_reason(reason: ActivationReason, request: _Request, names: dict[str, str]) -> str:
    if reason.kind == "all":
        return _("enabled: chosen by the host")
    if reason.kind == "constant":
        words = _("constant entry")
    elif reason.kind == "decorator":
        words = _("the content starts with @@activate")
    else:
        words = _found(reason.key, reason.matched_in, request, names)
    if reason.selective_logic is not None:
        words += _("; secondary keys pass %(logic)s") % {"logic": LOGIC_NAMES[reason.selective_logic]}
    if reason.probability is not None and reason.roll is not None:
        words += _("; probability %(chance)s%% passes the chat's roll of %(roll)s") % {
            "chance": reason.probability, "roll": roll_words(reason.roll)}
    elif reason.probability is not None:
        words += _("; probability %(chance)s%% passes the preview's roll of %(roll)s") % {
            "chance": reason.probability, "roll": PREVIEW_ROLL}
    return words


def _skip_reason(reason: SkipReason, request: _Request, names: dict[str, str]) -> str:
    kind = reason.kind
    if kind == "disabled":
        return _("the entry is disabled")
    if kind == "no_keys":
        return _("the entry has no keys and is not constant")
    if kind == "no_match":
        return _("no primary key found in the messages it scans")
    if kind == "decorator":
        return _("the content starts with @@dont_activate")
    if kind == "recursion_excluded":
        return _("key “%(key)s” is only in the recursion buffer, which this entry does not scan") % {
            "key": reason.key or ""}
    found = _found(reason.key, reason.matched_in, request, names)
    if kind == "secondary_failed":
        return _("%(found)s, but the secondary keys fail") % {"found": found}
    if kind == "group_lost":
        winner = "" if reason.winner is None else names.get(str(reason.winner)) or str(reason.winner)
        pick = group_roll(reason)
        if winner and pick is not None:
            return _("%(found)s, but inclusion group “%(group)s” went to %(winner)s (the chat's roll of %(roll)s "
                     "of a total weight of %(total)s)") % {"found": found, "group": reason.group or "",
                                                         "winner": winner, **pick}
        if winner:
            return _("%(found)s, but inclusion group “%(group)s” went to %(winner)s") % {
                "found": found, "group": reason.group or "", "winner": winner}
        return _("%(found)s, but inclusion group “%(group)s” was won in an earlier pass") % {
            "found": found, "group": reason.group or ""}
    if kind == "probability" and reason.roll is not None:
        return _("%(found)s, but its probability of %(chance)s%% fails the chat's roll of %(roll)s") % {
            "found": found, "chance": reason.probability, "roll": roll_words(reason.roll)}
    if kind == "probability":
        return _("%(found)s, but its probability of %(chance)s%% fails the preview's roll of %(roll)s") % {
            "found": found, "chance": reason.probability, "roll": PREVIEW_ROLL}
    if kind == "over_budget":
        return _("%(found)s, but the world info budget (%(budget)s tokens) is spent") % {
            "found": found, "budget": reason.budget}
    return _text_reason(reason)


def roll_words(roll: float) -> str:
    """A drawn roll as the engine words it (two decimals)."""
    return f"{roll:.2f}"


def group_roll(reason: SkipReason) -> dict[str, str] | None:
    """{roll, total} of the seeded weighted pick that decided a lost inclusion group; None when no roll decided it
    (a sticky or override winner, the unseeded most likely winner, an earlier pass)."""
    found = GROUP_ROLL_TEXT.search(reason.message) if reason.kind == "group_lost" else None
    return {"roll": found["roll"], "total": found["total"]} if found else None


def _group_wins(skipped) -> dict[str, list[dict[str, str]]]:
    """Winner uid -> the seeded group picks it won ({group, roll, total}), read from the losers' reasons."""
    won: dict[str, list[dict[str, str]]] = {}
    for entry in skipped:
        pick = group_roll(entry.reason)
        if pick is not None and entry.reason.winner is not None:
            picks = won.setdefault(str(entry.reason.winner), [])
            line = {"group": entry.reason.group or "", **pick}
            if line not in picks:
                picks.append(line)
    return won


def _text_reason(reason: SkipReason) -> str:
    """A skip reason whose numbers are only in the engine's text, in words; the text itself when it reads
    otherwise."""
    pattern = ENGINE_TEXTS.get(reason.kind)
    found = pattern.fullmatch(reason.message) if pattern else None
    if found is None:
        return reason.message
    facts = found.groupdict()
    if reason.kind == "trigger":
        types = list_words(engine_word("generation", t.strip()) for t in facts["types"].split(","))
        return _("only for %(types)s generations; this is a %(generation)s generation") % {
            "types": types, "generation": engine_word("generation", facts["generation"])}
    if reason.kind == "delayed":
        return _("waits until the chat has %(delay)s messages; it has %(length)s") % facts
    if facts["reached"] is None:
        return _("waits for recursion level %(level)s; no recursion pass reached it") % facts
    return _("waits for recursion level %(level)s; the scan stopped at level %(reached)s") % facts


def _landed(position: str, depth: int | None, outlet: str, rows: tuple[int, ...], requested: int | None = None) -> str:
    """Where an active entry landed: its request rows and its position. A backend that does not insert into the chat
    (the standard one) has no depth of its own (`depth` None): the entry then says the depth it asked for and where it
    went, never a depth it did not get."""
    if not rows:
        return _("not sent: it is in no request message")
    numbers = _numbers(rows)
    if position == "at_depth" and depth is None:
        if requested is None:
            return _("in %(rows)s") % {"rows": numbers}
        return _("asked for depth %(depth)s; this backend does not insert into the chat, so it went to %(rows)s") % {
            "depth": requested, "rows": numbers}
    if position == "at_depth":
        return _("at depth %(depth)s: %(rows)s") % {"depth": depth, "rows": numbers}
    if position == "outlet":
        return _("in %(rows)s (filling the outlet “%(outlet)s”)") % {"rows": numbers, "outlet": outlet}
    where = POSITION_WORDS.get(position)
    return _("in %(rows)s (%(position)s)") % {"rows": numbers, "position": where} if where else _(
        "in %(rows)s") % {"rows": numbers}


def world_book_log(result: AssemblyResult) -> WorldBookView | None:
    """The world-info panel: the engine's activation when it scanned, else the entries the host chose (from the
    nodes); None when the request has no world book entries (the request's rows are indexed only when there are)."""
    info = result.world_info
    if info is not None:
        request = _Request(result)
        names = {str(e.uid): e.comment or str(e.uid) for e in (*info.active, *info.skipped)}
        won = _group_wins(info.skipped)
        active = []
        for e in info.active:
            rows = request.of(f"worldbook:{e.uid}")
            if not rows and e.position == "outlet":
                rows = _outlet_rows(result, e.content)
            reason = _active_reason(e.reason, request, names) + "".join(
                _("; won inclusion group “%(group)s” by the chat's roll of %(roll)s of a total weight of %(total)s")
                % pick for pick in won.get(str(e.uid), ()))
            active.append(WorldEntry(str(e.uid), names[str(e.uid)], reason, e.reason.kind,
                                     _landed(e.position, e.depth, e.outlet_name, rows), rows))
        skipped = [WorldEntry(str(e.uid), names[str(e.uid)], _skip_reason(e.reason, request, names), e.reason.kind)
                   for e in info.skipped]
        return WorldBookView(mode=info.mode, active=active, skipped=skipped,
                             budget=info.budget.model_dump(mode="json") if info.budget is not None else None,
                             notes=list(info.notes))
    entries = [n for n in result.nodes if n.module == "worldbook"]
    if not entries:
        return None
    request = _Request(result)
    return WorldBookView(mode="all", active=[_chosen(node, request) for node in entries], skipped=[], budget=None)


def _chosen(node: NodeView, request: _Request) -> WorldEntry:
    rows = request.of(node.id)
    position = NODE_POSITIONS.get(node.position_id, node.position_id)
    return WorldEntry(node.id.removeprefix("worldbook:"), node.name or node.id, _("enabled: chosen by the host"),
                      "host", _landed(position, node.depth, "", rows, node.requested_depth), rows)
