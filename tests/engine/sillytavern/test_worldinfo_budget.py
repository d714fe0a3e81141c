"""The world info budget counts like SillyTavern's chat-completion counter (sillytavern.md §7.4, §13.2).

Each budget check counts the text of the candidates as one system message, in full: the tokens of "system" and of
the text, 3 for the message and 3 for the reply priming, less the 1 the client takes off. The oracle's tight-budget
scenarios fall on that edge. A budget that would hold the bare texts can therefore hold fewer entries.
"""

from __future__ import annotations

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.tokens import count_tokens

LANTERN = "The lantern of the harbour burns green."
BELL = "The bell of the old chapel rings twice at dusk."


def _book(cap: int) -> WorldBook:
    return WorldBook(activation="keywords", budget_percent=100, budget_cap=cap, entries=(
        WorldBookEntry(uid=1, keys=("harbour",), order=50, content=LANTERN),
        WorldBookEntry(uid=2, keys=("harbour",), order=40, content=BELL),
    ))


def _active(cap: int) -> list:
    result = activate_world_info(_book(cap), chat=[{"role": "user", "content": "Meet me at the harbour."}],
                                 names={"user": "Ona", "char": "Pell"}, max_context=100_000)
    return sorted(a.uid for a in result.active)


def _as_system_message(text: str) -> int:
    return count_tokens("system") + count_tokens(text) + 3 + 3 - 1


def test_a_budget_that_holds_the_bare_texts_admits_only_the_first_entry():
    bare = count_tokens(f"{LANTERN}\n{BELL}\n")
    assert _active(bare + 1) == [1]


def test_the_framing_is_paid_once_per_check_not_per_entry():
    both = _as_system_message(f"{LANTERN}\n{BELL}\n")
    assert _active(both + 1) == [1, 2]
    assert _active(both) == [1]  # reaching the budget is over


def test_the_first_entry_pays_the_framing_too():
    assert _active(_as_system_message(f"{LANTERN}\n")) == []
    assert _active(_as_system_message(f"{LANTERN}\n") + 1) == [1]
