"""The keyword scan's cost and what it must keep: a pass reads its text once for all plain keys, a recursion pass
revisits only the entries whose keys occur in the new text, and the answers (which entries, at which pass, why the
others were skipped) are those of scanning every key over the whole buffer (sillytavern.md §7.2-§7.4)."""

from __future__ import annotations

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info

BIG = 1_000_000


def run(*entries: WorldBookEntry, chat: str, **book_settings):
    book = WorldBook(entries=entries, activation="keywords", recursive=True, **book_settings)
    return activate_world_info(book, chat=[{"role": "user", "content": chat}], names={"user": "Aria"},
                               max_context=book_settings.pop("max_context", BIG))


def chain(length: int, keys: int) -> list[WorldBookEntry]:
    """Entry i is found by any of its keys; its content names one key of entry i + 1."""
    return [WorldBookEntry(uid=i, keys=tuple(f"beacon{i}x{j}" for j in range(keys)),
                           content=f"the road leads on to beacon{i + 1}x{(i * 7) % keys}") for i in range(length)]


def skip_of(result, uid):
    return next(s.reason for s in result.skipped if s.uid == uid)


def test_a_long_recursion_chain_is_linear_in_its_passes(monkeypatch):
    from assembly.sillytavern.worldinfo_scan import KeywordScan

    searched = []  # the entries whose keys a pass searches the buffers for, pass by pass
    primary = KeywordScan.primary
    monkeypatch.setattr(KeywordScan, "primary", lambda self, candidate, *args, **kwargs: searched.append(
        self.passes) or primary(self, candidate, *args, **kwargs))
    result = run(*chain(2000, 20), chat="we start at beacon0x3")
    assert [a.uid for a in sorted(result.active, key=lambda a: a.reason.scan_pass)] == list(range(2000))
    assert all(a.reason.scan_pass == a.uid + 1 for a in result.active)
    # a pass searches again only for the entries the newest recursion text names: every key of every waiting entry
    # in every pass (which took minutes) would be some two million searches
    assert len(set(searched)) == 2000 and len(searched) < 10 * 2000


def test_under_sillytavern_macros_a_chain_is_linear_too_and_card_field_entries_are_read_every_pass(monkeypatch):
    # Keys without macro syntax read the same at every pass, so the macros path settles them as the plain one does;
    # an entry that matches a card field is tried again each pass (its persona runs the macros each time).
    from assembly.sillytavern.worldinfo_scan import KeywordScan

    searched: dict[object, int] = {}
    primary = KeywordScan.primary
    monkeypatch.setattr(KeywordScan, "primary", lambda self, candidate, *args, **kwargs: searched.__setitem__(
        candidate.entry.uid, searched.get(candidate.entry.uid, 0) + 1) or primary(self, candidate, *args, **kwargs))
    watcher = WorldBookEntry(uid="watcher", keys=("lighthouse",), match_persona_description=True)
    book = WorldBook(entries=(*chain(300, 5), watcher), activation="keywords", recursive=True)
    result = activate_world_info(book, chat=[{"role": "user", "content": "we start at beacon0x3"}],
                                 names={"user": "Aria", "char": "Zoe"}, max_context=BIG, macros=_counting_macros())
    assert all(a.reason.scan_pass == a.uid + 1 for a in result.active) and len(result.active) == 300
    assert sum(count for uid, count in searched.items() if uid != "watcher") < 10 * 300
    assert searched["watcher"] == result.scan_passes


def test_an_entry_never_found_keeps_the_reason_of_the_last_pass():
    result = run(*chain(5, 3), WorldBookEntry(uid="far", keys=("lighthouse",)), chat="beacon0x0")
    reason = skip_of(result, "far")
    assert reason.kind == "no_match"
    assert reason.scan_pass == result.scan_passes == 6  # five chain passes, then one that finds nothing new


def test_an_entry_named_late_in_the_recursion_is_found_then():
    entries = [*chain(4, 2), WorldBookEntry(uid="late", keys=("lighthouse",), content="")]
    entries[3] = entries[3].model_copy(update={"content": "and the LightHouse beyond"})
    result = run(*entries, chat="beacon0x0")
    late = next(a for a in result.active if a.uid == "late")
    assert late.reason.scan_pass == 5


def test_case_and_whole_word_rules_hold_for_keys_met_in_recursion():
    entries = [*chain(3, 2),
               WorldBookEntry(uid="cased", keys=("Harbor",), case_sensitive=True),
               WorldBookEntry(uid="word", keys=("port",), match_whole_words=True),
               WorldBookEntry(uid="umlaut", keys=("Straße",))]
    entries[2] = entries[2].model_copy(update={"content": "a harbor, a passport, the STRASSE and the straße"})
    result = run(*entries, chat="beacon0x0")
    active = {a.uid for a in result.active}
    assert "cased" not in active and "word" not in active
    assert "umlaut" in active  # a non-ASCII key is matched lower-cased, as before
    assert skip_of(result, "cased").kind == "no_match"


# ------------------------------------------------------------------------------------ keys under a generation's macros


def _counting_macros():
    from assembly.macros import MacroContext
    from assembly.sillytavern.macro_environment import MacroEnvironment

    return MacroContext(user="Aria", char="Zoe", st=MacroEnvironment(user="Aria", char="Zoe", engine="v2"))


def test_keys_go_through_the_generations_macros_only_as_the_scan_reaches_them():
    # SillyTavern substitutes each primary key as `find` tries it, stopping at the first found; a constant entry's
    # keys are never tried; and_any stops at its first secondary key found
    macros = _counting_macros()
    entries = (WorldBookEntry(uid=1, keys=("dragon", "{{incvar::tried}}"), content="found first"),
               WorldBookEntry(uid=2, keys=("{{incvar::tried}}",), constant=True, content="always"),
               WorldBookEntry(uid=3, keys=("{{incvar::tried}}x", "castle"), content="second key"),
               WorldBookEntry(uid=4, keys=("castle",), secondary_keys=("dragon", "{{incvar::tried}}"),
                              content="and any"))
    book = WorldBook(entries=entries, activation="keywords")
    result = activate_world_info(book, chat=[{"role": "user", "content": "a dragon at the castle"}],
                                 names={"user": "Aria", "char": "Zoe"}, max_context=BIG, macros=macros)
    assert sorted(a.uid for a in result.active) == [1, 2, 3, 4]
    assert macros.st.variables.local == {"tried": 1}  # only entry 3's first key was substituted


def test_a_key_the_macros_leave_blank_but_not_empty_is_still_tried():
    macros = _counting_macros()
    book = WorldBook(entries=(WorldBookEntry(uid=1, keys=("{{noop}}  ",), content="blank key"),), activation="keywords")
    result = activate_world_info(book, chat=[{"role": "user", "content": "anything"}], names={"user": "Aria"},
                                 max_context=BIG, macros=macros)
    assert [a.uid for a in result.active] == [1]


def test_a_key_tried_again_in_recursion_keeps_what_its_macros_first_made():
    # the first pass substitutes entry 2's key (tried 1) and misses; the recursion pass finds "bridge" in entry 1's
    # text with the key as it came out then: its macros do not run again
    macros = _counting_macros()
    entries = (WorldBookEntry(uid=1, keys=("river",), content="over the bridge"),
               WorldBookEntry(uid=2, keys=("bridge{{addvar::tried::1}}",), content="the far bank"))
    book = WorldBook(entries=entries, activation="keywords", recursive=True)
    result = activate_world_info(book, chat=[{"role": "user", "content": "down by the river"}],
                                 names={"user": "Aria", "char": "Zoe"}, max_context=BIG, macros=macros)
    assert {a.uid: a.reason.scan_pass for a in result.active} == {1: 1, 2: 2}
    assert macros.st.variables.local == {"tried": 1}


def test_a_max_context_past_a_doubles_range_gives_a_budget_that_never_binds():
    from assembly.sillytavern.worldinfo_budget import world_info_budget

    huge = 10**400  # JavaScript reads it as Infinity: the budget then admits everything
    assert world_info_budget(WorldBook(budget_percent=25), huge) == huge // 4
    assert world_info_budget(WorldBook(budget_percent=25, budget_cap=300), huge) == 300
    book = WorldBook(entries=chain(3, 1), activation="keywords", recursive=True)
    result = activate_world_info(book, chat=[{"role": "user", "content": "beacon0x0"}], names={"user": "Aria"},
                                 max_context=huge)
    assert sorted(a.uid for a in result.active) == [0, 1, 2]
