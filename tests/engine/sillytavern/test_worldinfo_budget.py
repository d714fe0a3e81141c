"""The world info budget counts like SillyTavern's chat-completion counter (sillytavern.md §7.4, §13.2).

Each budget check counts the text of the candidates as one system message, in full: the tokens of "system" and of
the text, 3 for the message and 3 for the reply priming, less the 1 the client takes off. The oracle's tight-budget
scenarios fall on that edge. A budget that would hold the bare texts can therefore hold fewer entries.
"""

from __future__ import annotations

import pytest

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.text_budget import ST_ESTIMATE
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.tokens import ENCODINGS, count_tokens

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


def _counted_each_time(before: str, contents: list[str], encoding: str, budget: int) -> list[int | None]:
    from assembly.sillytavern.worldinfo_budget import world_info_tokens

    answers, new = [], ""
    for content in contents:
        new += content + "\n"
        tokens = world_info_tokens(before, encoding) + world_info_tokens(new, encoding)
        answers.append(tokens if tokens >= budget else None)
    return answers


@pytest.mark.parametrize("encoding", [*ENCODINGS, ST_ESTIMATE])
def test_a_pass_reaches_the_budget_exactly_where_counting_each_time_does(encoding):
    from assembly.sillytavern.worldinfo_budget import PassBudget

    # a Hebrew presentation form NFC spells longer (Qwen 2 reads that form); a newline SentencePiece marks
    contents = [LANTERN, BELL, "日本語の灯台 🙂", "  spaced  \n\n", "\ufb2c\u0958", BELL * 3]
    full = _counted_each_time(LANTERN, contents, encoding, 1)[-1]
    for budget in (1, 20, full - 1, full, full + 1, 10 * full):  # around where the last entry tips it over
        check = PassBudget(LANTERN, encoding, budget)
        answers = []
        for content in contents:
            check.add(content)
            answers.append(check.reached())
        assert answers == _counted_each_time(LANTERN, contents, encoding, budget), budget


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_pass_of_many_entries_under_a_roomy_budget_tokenizes_none_of_its_growing_text(monkeypatch, encoding):
    from assembly import tokens as tokens_module
    from assembly.sillytavern import worldinfo_budget

    counted: list[str] = []
    count = tokens_module.count_tokens
    monkeypatch.setattr(worldinfo_budget, "count_tokens", lambda text, encoding="o200k_base": counted.append(text)
                        or count(text, encoding))
    monkeypatch.setattr(worldinfo_budget, "estimate_tokens", lambda text: counted.append(text) or 0)
    entries = tuple(WorldBookEntry(uid=i, constant=True, content=f"Entry {i}: {LANTERN}") for i in range(300))
    result = activate_world_info(WorldBook(activation="keywords", entries=entries), chat=[], names={"user": "Ona"},
                                 max_context=1_000_000, encoding=encoding)
    assert len(result.active) == 300
    # short texts ("system"), and the whole activated text once for the report's total: never each step's join
    assert [len(text) for text in counted if len(text) >= 100] == [sum(len(e.content) + 1 for e in entries)]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_pass_past_its_ceiling_counts_each_entry_once_not_its_growing_text(monkeypatch, encoding):
    from assembly import tokens as tokens_module
    from assembly.sillytavern import worldinfo_budget

    entries = tuple(WorldBookEntry(uid=i, constant=True, content=f"Entry {i}: {LANTERN}", order=1000 - i)
                    for i in range(300))
    contents = [e.content for e in entries]
    # a budget the entries' bytes pass long before their tokens reach it: the last few entries do not fit
    budget = _counted_each_time("", contents, encoding, 1)[-1] - 60  # every entry counted, less about four
    answers = _counted_each_time("", contents, encoding, budget)
    fits = answers.index(next(t for t in answers if t is not None))
    assert budget < sum(len(c.encode()) + 1 for c in contents)  # the ceiling alone cannot answer
    counted: list[str] = []
    count = tokens_module.count_tokens
    monkeypatch.setattr(worldinfo_budget, "count_tokens", lambda text, encoding="o200k_base": counted.append(text)
                        or count(text, encoding))
    book = WorldBook(activation="keywords", budget_percent=100, budget_cap=budget, entries=entries)
    result = activate_world_info(book, chat=[], names={"user": "Ona"}, max_context=1_000_000, encoding=encoding)
    assert len(result.active) == fits  # where counting the whole text at every entry stops
    # the new text counted whole once (where the ceiling first could not answer), then each entry alone
    assert len([text for text in counted if len(text) >= 200]) <= 2


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_recursion_pass_counts_the_lines_put_before_the_text_it_counted_last(monkeypatch, encoding):
    from assembly import tokens as tokens_module
    from assembly.sillytavern import worldinfo_budget
    from assembly.sillytavern.worldinfo_budget import world_info_tokens

    # a chain: each entry's text holds the next one's key, so each recursion pass activates one entry
    contents = [f"Link {i} leads to kw{i + 1}x. {LANTERN}" for i in range(120)]
    entries = tuple(WorldBookEntry(uid=i, keys=(f"kw{i}x",), content=text) for i, text in enumerate(contents))

    def answer(index: int) -> int:  # as SillyTavern counts at pass `index`: the activated text, newest first
        before = "".join(text + "\n" for text in reversed(contents[:index]))
        return world_info_tokens(before, encoding) + world_info_tokens(contents[index] + "\n", encoding)

    budget = answer(100) - 5  # the budget binds late, after the entries' bytes have passed it
    assert budget < sum(len(text.encode()) + 1 for text in contents[:90])
    fits = next(index for index in range(len(contents)) if answer(index) >= budget)
    counted: list[str] = []
    count = tokens_module.count_tokens
    monkeypatch.setattr(worldinfo_budget, "count_tokens", lambda text, encoding="o200k_base": counted.append(text)
                        or count(text, encoding))
    book = WorldBook(activation="keywords", recursive=True, budget_percent=100, budget_cap=budget, entries=entries)
    result = activate_world_info(book, chat=[{"role": "user", "content": "Begin at kw0x."}], names={"user": "Ona"},
                                 max_context=1_000_000, encoding=encoding)
    assert sorted(a.uid for a in result.active) == list(range(fits))
    # the activated text counted whole once (where the ceiling first could not answer), then a pass's new line
    assert len([text for text in counted if len(text) >= 1000]) <= 3
