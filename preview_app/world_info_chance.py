"""The preview's chance panel (engine.md §5, world book activation): the chat's seed and turn, the roll that decided each probability
entry and each inclusion-group pick, the timed effects (sticky, cooldown, delay) in words, and, after "Roll again",
what the new seed changed.

Everything is read from one result (its world-info activation and the state after it) and the request it answered
(the seed, the turn, the chat's length); nothing is stored. Words are computed here and translate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from assembly.host import conversation_history
from assembly.results import AssemblyResult
from preview_app.world_info_log import ENGINE_TEXTS, group_roll, roll_words
from studio.wording import list_words

CHAT_ROLES = ("user", "assistant", "system")  # the messages SillyTavern's chat holds (world info counts them)


@dataclass(frozen=True)
class Roll:
    uid: str
    name: str
    passed: bool
    words: str


@dataclass(frozen=True)
class Timed:
    uid: str
    name: str
    kind: str  # sticky, cooldown, delayed
    words: str


@dataclass(frozen=True)
class ChanceView:
    seed: int | None
    turn: int
    rolls: list[Roll] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    timed: list[Timed] = field(default_factory=list)

    @property
    def seeded(self) -> bool:
        return self.seed is not None

    @property
    def summary(self) -> str:
        if self.seed is None:
            return _("No chance seed: the preview takes every roll at its middle (50) and gives each inclusion group "
                     "to its heaviest entry.")
        return _("Chance seed %(seed)s, generation %(turn)s of this chat: rolls are drawn from both, as "
                 "SillyTavern draws them.") % {"seed": self.seed, "turn": self.turn}


def chat_length(result: AssemblyResult, request: dict[str, Any]) -> int:
    """The chat world info scanned and counts timed effects in, as the engine read it from the request: the history
    that takes part in assembly (host log records and, unless the host keeps them in history, system-prompt records
    left out) and the input, the messages SillyTavern's chat holds; a swipe leaves the last one out."""
    conversation = request.get("conversation") or {}
    host = request.get("host") or {}
    keep = result.backend == "native" and host.get("system_prompt_update") == "in-history"
    history = conversation_history(list(conversation.get("history", ())), keep_system_records=keep)
    length = sum(1 for m in (*history, *conversation.get("input", ())) if m.get("role") in CHAT_ROLES)
    swiped = (request.get("generation") or {}).get("type") == "swipe"
    return max(length - 1, 0) if swiped else length


def _names(result: AssemblyResult) -> dict[str, str]:
    info = result.world_info
    return {str(e.uid): e.comment or str(e.uid) for e in (*info.active, *info.skipped)} if info is not None else {}


def _rolls(result: AssemblyResult, names: dict[str, str]) -> list[Roll]:
    info = result.world_info
    rolls = []
    for entry in info.active:
        reason = entry.reason
        if reason.roll is not None and reason.probability is not None:
            rolls.append(Roll(str(entry.uid), names[str(entry.uid)], True, _(
                "rolled %(roll)s against its probability of %(chance)s%%: at or under it, so it activates") % {
                "roll": roll_words(reason.roll), "chance": reason.probability}))
    for entry in info.skipped:
        reason = entry.reason
        if reason.kind == "probability" and reason.roll is not None:
            rolls.append(Roll(str(entry.uid), names[str(entry.uid)], False, _(
                "rolled %(roll)s against its probability of %(chance)s%%: over it, so it stays out") % {
                "roll": roll_words(reason.roll), "chance": reason.probability}))
    return rolls


def _groups(result: AssemblyResult, names: dict[str, str]) -> list[str]:
    """One line per seeded group pick: the group, the roll of its total weight, the winner."""
    picks: dict[tuple[str, str], str] = {}
    for entry in result.world_info.skipped:
        reason = entry.reason
        pick = group_roll(reason)
        if pick is None or reason.winner is None:
            continue
        winner = names.get(str(reason.winner)) or str(reason.winner)
        picks.setdefault((reason.group or "", winner), _(
            "inclusion group “%(group)s”: rolled %(roll)s of a total weight of %(total)s, won by %(winner)s") % {
            "group": reason.group or "", "winner": winner, **pick})
    return list(picks.values())


def _effect_uid(key: str) -> str:
    """The entry uid of a timed-effect key `<world>.<uid>` (a world name may hold dots; a uid does not)."""
    return key.rpartition(".")[2]


def _timed(result: AssemblyResult, names: dict[str, str], length: int) -> list[Timed]:
    info = result.world_info
    lines = []
    state = info.world_state
    if state is not None:
        for kind, effects in (("sticky", state.sticky), ("cooldown", state.cooldown)):
            for key, effect in effects.items():
                uid = _effect_uid(key)
                if uid not in names:
                    continue  # an entry of another book of the chat
                left = max(effect.end - length, 0)
                if kind == "sticky":
                    words = ngettext("sticky for %(count)s more message (until the chat has %(end)s)",
                                     "sticky for %(count)s more messages (until the chat has %(end)s)", left)
                else:
                    words = ngettext("cooling down for %(count)s more message (until the chat has %(end)s)",
                                     "cooling down for %(count)s more messages (until the chat has %(end)s)", left)
                lines.append(Timed(uid, names[uid], kind, words % {"count": left, "end": effect.end}))
    for entry in info.skipped:
        found = ENGINE_TEXTS["delayed"].fullmatch(entry.reason.message) if entry.reason.kind == "delayed" else None
        if found is not None:
            lines.append(Timed(str(entry.uid), names[str(entry.uid)], "delayed", _(
                "delayed until message %(delay)s (the chat has %(length)s)") % found.groupdict()))
    return lines


def chance_log(result: AssemblyResult, request: dict[str, Any]) -> ChanceView | None:
    """The chance panel of a keyword scan; None when the request scanned no world book."""
    info = result.world_info
    if info is None or info.mode != "keywords":
        return None
    generation = request.get("generation") or {}
    names = _names(result)
    return ChanceView(seed=generation.get("seed"), turn=generation.get("turn") or 0, rolls=_rolls(result, names),
                      groups=_groups(result, names), timed=_timed(result, names, chat_length(result, request)))


def _active(result: AssemblyResult) -> dict[str, str]:
    info = result.world_info
    if info is None:
        return {}
    names = _names(result)
    return {str(e.uid): names[str(e.uid)] for e in info.active}


def reroll_change(before: AssemblyResult, after: AssemblyResult, seed: int) -> str:
    """What rolling again changed: the entries newly in and newly out, from a run before and one after."""
    was, now = _active(before), _active(after)
    came = [name for uid, name in now.items() if uid not in was]
    went = [name for uid, name in was.items() if uid not in now]
    parts = []
    if came:
        parts.append(ngettext("%(count)s entry came in: %(names)s", "%(count)s entries came in: %(names)s",
                              len(came)) % {"count": len(came), "names": list_words(came)})
    if went:
        parts.append(ngettext("%(count)s entry went out: %(names)s", "%(count)s entries went out: %(names)s",
                              len(went)) % {"count": len(went), "names": list_words(went)})
    if not parts:
        parts.append(_("the same world-info entries are in and out as before"))
    return _("Rolled again with seed %(seed)s: %(changes)s.") % {
        "seed": seed, "changes": pgettext("clause separator", "; ").join(parts)}

