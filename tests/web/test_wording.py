"""studio.wording: every code the engine can report has a plain-language meaning on the preview (web.md screen 3):
the engine's source is scanned for the codes it raises or lists, so a new code without a meaning fails here. And the
one copy of excerpts and lock reasons both apps use."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.utils import translation

from studio.wording import (
    DIAGNOSTICS,
    MEANINGS,
    REFUSALS,
    LockWords,
    diagnostic_details,
    excerpt,
    known_meaning,
    lock_words,
    meaning,
)

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "assembly"
STUDIO_APPS = [ROOT / name for name in ("studio", "strategies_app", "preview_app")]
CODE_PATTERNS = [
    re.compile(r'"code":\s*"([A-Z][A-Z0-9_]+)"'),  # diagnostics: {"code": "X", ...}
    re.compile(r'\b\w*(?:Error|_error)\(\s*"([A-Z][A-Z0-9_]+)"'),  # raise AssemblyError("X", ...), _block_error("X"
    re.compile(r'\bcode\s*=\s*"([A-Z][A-Z0-9_]+)"'),  # code="X" keywords and class attributes
    re.compile(r'_CODE\s*=\s*"([A-Z][A-Z0-9_]+)"'),  # module constants
    re.compile(r'\b[A-Z]\w*\(\s*"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"'),  # EditRefused("X", ...), ServiceError("X"
]


def engine_codes(roots=(ENGINE,)) -> set[str]:
    codes: set[str] = set()
    for path in (path for root in roots for path in root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pattern in CODE_PATTERNS:
            codes.update(pattern.findall(text))
    return codes


def test_the_scan_finds_the_codes_it_should():
    """The scan itself works: codes of each shape are found (one per pattern, picked by hand from the engine)."""
    found = engine_codes()
    assert {"NATIVE_ROLE_ADJUSTED", "REQUEST_ASSEMBLY_CORE_REQUIRED", "ST_DUPLICATE_KEY",
            "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT", "TOKENIZER_UNKNOWN", "DUPLICATE_BLOCK_ID"} <= found
    assert "DEPTH_PROMPT" not in found  # an enum value, not a code


def test_every_engine_code_has_a_meaning():
    missing = sorted(engine_codes() - set(MEANINGS))
    assert missing == []


def test_every_studio_refusal_has_a_meaning():
    """The studio's own codes (the users page's CONFLICT, the API's INPUT_NOT_JSON, ...) are explained too."""
    found = engine_codes(STUDIO_APPS)
    assert {"CONFLICT", "INPUT_NOT_JSON", "PAYLOAD_TOO_LARGE", "STRATEGY_VERSION_CONFLICT"} <= found
    assert sorted(found - set(MEANINGS)) == []


def test_every_meaning_reads_in_chinese_too():
    from django.utils import translation

    with translation.override("en"):
        english = {code: str(text) for code, text in MEANINGS.items()}
    with translation.override("zh-hans"):
        untranslated = [code for code, text in MEANINGS.items() if str(text) == english[code]]
    assert untranslated == []


def test_meanings_are_sentences_and_no_code_is_in_both_families():
    assert not set(DIAGNOSTICS) & set(REFUSALS)
    for code, text in MEANINGS.items():
        text = str(text)
        assert text[0].isupper() and text.endswith((".", ")")), code


def test_an_unknown_code_says_so():
    assert meaning("SOMETHING_NEW") == "No description for this code yet."
    assert known_meaning("SOMETHING_NEW") == ""  # the editor and apply panel show nothing instead
    assert known_meaning("STRATEGY_READ_ONLY") == meaning("STRATEGY_READ_ONLY")


def test_excerpts_collapse_whitespace_or_keep_the_text_as_written():
    assert excerpt("a  b\n c") == "a b c"
    assert excerpt("word " * 50, 20) == "word word word word…"
    assert len(excerpt("x" * 500)) == 160
    assert excerpt("a\nb" * 100, 140, as_written=True) == ("a\nb" * 100)[:140] + "…"
    assert excerpt("a\n b", 140, as_written=True) == "a\n b"


def test_lock_reasons_in_words_for_the_preview_and_the_editor():
    assert lock_words("reference:preset", "preset:worldInfoBefore:before") == (
        "held by the <code>worldInfoBefore</code> slot of the preset")
    assert lock_words(None) == "" and lock_words("depth") == "inserted at its depth inside the chat"
    words = LockWords({"rules": [{"id": "preset", "kind": "preset"}]}, {"main": ("Main Prompt", "x {{char}}")})
    assert words.slot("preset:main:2:char") == "referenced by {{char}} in “Main Prompt”"
    assert words.slot("preset:main") == "held by the preset marker “Main Prompt” (main)"
    assert words.node(SimpleNamespace(lock_reason="depth", slot_id=None, depth=4, requested_depth=None)) == (
        "inserted at depth 4 of the chat; depth insertion fixes its place")


@pytest.mark.parametrize(("diagnostic", "expected"), [
    ({"code": "NATIVE_ROLE_ADJUSTED", "id": "preset:jailbreak", "name": "Jailbreak", "from": "system", "to": "user"},
     [("name", "Jailbreak"), ("id", "preset:jailbreak"), ("from", "system"), ("to", "user")]),
    ({"code": "POSITION_ANCHOR_MISSING", "sourceId": "worldbook", "positionId": "before", "winner": "default",
      "anchor": {"sourceId": "character", "side": "after"}},
     [("sourceId", "worldbook"), ("positionId", "before"), ("winner", "default"),
      ("anchor", "sourceId: character, side: after")]),
    ({"code": "AUTHOR_NOTE_NOT_INSERTED", "reason": "no user message", "left_out": ["author_note", "worldbook:2"]},
     [("reason", "no user message"), ("left_out", "author_note, worldbook:2")]),
])
def test_diagnostic_details_are_readable(diagnostic, expected):
    assert diagnostic_details(diagnostic) == expected


def test_a_slot_lock_label_in_chinese_has_no_spaces_around_chinese_words_and_the_slot_as_code():
    with translation.override("zh-hans"):
        assert lock_words("reference:preset", "preset:worldInfoBefore:before") == (
            "由预设的 <code>worldInfoBefore</code> 插槽持有")
        assert lock_words("reference:preset") == "由预设的一个插槽持有"
