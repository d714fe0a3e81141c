"""Which keys the scan's Aho-Corasick index holds: an unindexed key must still match exactly as an indexed one."""

from __future__ import annotations

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info
from assembly.sillytavern.worldinfo_key_index import MAX_INDEXED_KEY_CHARS, KeyIndex


def active_uids(*entries: WorldBookEntry, chat: str) -> list:
    book = WorldBook(entries=entries, activation="keywords")
    result = activate_world_info(book, chat=[{"role": "user", "content": chat}], names={"user": "Aria"},
                                 max_context=1_000_000)
    return sorted(a.uid for a in result.active)


def test_a_very_long_key_is_matched_directly_like_a_short_one():
    long_key = "Saga " * 120_000  # 600k characters: a trie chain that deep crashed the process when freed
    assert len(long_key) > MAX_INDEXED_KEY_CHARS
    assert KeyIndex([[long_key], ["saga"]]).indexed == {1}
    entries = (WorldBookEntry(uid="long", keys=(long_key.strip(),), content="x"),
               WorldBookEntry(uid="short", keys=("saga",), content="y"),
               WorldBookEntry(uid="cased", keys=(long_key.strip(),), content="z", case_sensitive=True))
    assert active_uids(*entries, chat="they sang: " + long_key.upper()) == ["long", "short"]
    assert active_uids(*entries, chat="they sang: " + long_key) == ["cased", "long", "short"]
    assert active_uids(*entries, chat="saga only") == ["short"]
