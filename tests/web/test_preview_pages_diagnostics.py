"""Every code the engine can report has a plain-language meaning on the preview (web.md screen 3): the engine's
source is scanned for the codes it raises or lists, so a new code without a meaning fails here."""

import re
from pathlib import Path

import pytest

from preview_app.diagnostics_text import DIAGNOSTICS, MEANINGS, REFUSALS, diagnostic_details, meaning

ENGINE = Path(__file__).resolve().parents[2] / "assembly"
CODE_PATTERNS = [
    re.compile(r'"code":\s*"([A-Z][A-Z0-9_]+)"'),  # diagnostics: {"code": "X", ...}
    re.compile(r'\b\w*(?:Error|_error)\(\s*"([A-Z][A-Z0-9_]+)"'),  # raise AssemblyError("X", ...), _block_error("X"
    re.compile(r'\bcode\s*=\s*"([A-Z][A-Z0-9_]+)"'),  # code="X" keywords and class attributes
    re.compile(r'_CODE\s*=\s*"([A-Z][A-Z0-9_]+)"'),  # module constants
]


def engine_codes() -> set[str]:
    codes: set[str] = set()
    for path in ENGINE.rglob("*.py"):
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


def test_meanings_are_sentences_and_no_code_is_in_both_families():
    assert not set(DIAGNOSTICS) & set(REFUSALS)
    for code, text in MEANINGS.items():
        text = str(text)
        assert text[0].isupper() and text.endswith((".", ")")), code


def test_an_unknown_code_says_so():
    assert meaning("SOMETHING_NEW") == "No description for this code yet."


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
