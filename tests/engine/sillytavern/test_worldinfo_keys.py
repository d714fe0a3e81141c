"""World info keys: regex keys read the raw buffer, plain keys the lower-cased one (sillytavern.md §7.3).

SillyTavern tests a `/pattern/flags` key against the text as written, whatever the entry's case sensitivity: only
the regex's own `i` flag makes it ignore case. This holds for secondary keys as it does for primary keys.
"""

from __future__ import annotations

import pytest

from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info


def _active(secondary: str, message: str, *, case_sensitive: bool = False) -> bool:
    wb = WorldBook(activation="keywords", case_sensitive=case_sensitive, entries=(
        WorldBookEntry(uid=7, keys=("lighthouse",), secondary_keys=(secondary,), selective=True,
                       selective_logic="and_any", content="The keeper trims the wick."),))
    result = activate_world_info(wb, chat=[{"role": "user", "content": message}],
                                 names={"user": "Ona", "char": "Pell"}, max_context=100_000)
    return [a.uid for a in result.active] == [7]


@pytest.mark.parametrize(("secondary", "message", "active"), [
    ("/Kestrel/", "The lighthouse of Kestrel Point", True),  # the capital K is still there to be found
    ("/kestrel/", "The lighthouse of Kestrel Point", False),  # no i flag: the regex is case-sensitive
    ("/kestrel/i", "The lighthouse of Kestrel Point", True),
    ("/^\\x01Ona: The/", "The lighthouse of Kestrel Point", True),  # the raw buffer: "\x01", name and all
    ("Kestrel", "The lighthouse of kestrel point", True),  # a plain secondary key still ignores case
])
def test_regex_secondary_keys_read_the_raw_text(secondary, message, active):
    assert _active(secondary, message) is active


def test_a_case_sensitive_entry_reads_its_plain_secondary_keys_as_written():
    assert _active("Kestrel", "The lighthouse of kestrel point", case_sensitive=True) is False
    assert _active("/Kestrel/", "The lighthouse of Kestrel Point", case_sensitive=True) is True


def _primary(key: str, message: str):
    wb = WorldBook(activation="keywords", entries=(WorldBookEntry(uid=1, keys=(key,), content="The tide."),))
    return activate_world_info(wb, chat=[{"role": "user", "content": message}], names={"user": "Ona", "char": "P"},
                               max_context=100_000)


@pytest.mark.parametrize(("key", "message", "active"), [
    ("/\\d+ ships/", "٣ ships in the bay", False),  # JavaScript's \d is ASCII
    ("/\\d+ ships/", "3 ships in the bay", True),
    ("/bay$/", "ships in the bay", True),
    ("/^ships/m", "first line\nships in the bay", True),  # m: a line start inside the buffer
    ("/^ships/", "first line\nships in the bay", False),
    ("/(?<port>bay).*\\k<port>/", "bay to bay", True),
])
def test_regex_keys_follow_javascript(key, message, active):
    assert bool(_primary(key, message).active) is active


def test_regex_keys_that_cannot_run_are_matched_as_text_and_noted():
    invalid = _primary("/ships(/", "look: /ships(/")  # JavaScript rejects it: SillyTavern matches it as text
    assert [a.uid for a in invalid.active] == [1]
    assert any("not a valid JavaScript regex" in note for note in invalid.notes)
    untranslated = _primary("/\\p{L}b/u", "x /\\p{L}b/u")  # JavaScript runs it; the translation has no \p
    assert [a.uid for a in untranslated.active] == [1]
    assert any("cannot translate" in note for note in untranslated.notes)
