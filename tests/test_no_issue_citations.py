"""Code, tests, templates, styles and translations cite the spec or say the behaviour, never an issue number: a
citation of a tracker issue means nothing to a reader of the code once the issue is closed.

Every .py, .html, .css, .js, .txt and .po file of the project is read (not the virtualenv, caches, collected static
files nor the vendored libraries under static/vendor/), and each line that names an issue with a number fails here
with its file and line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = {".py", ".html", ".css", ".js", ".txt", ".po"}
SKIPPED_DIRS = {"node_modules", "__pycache__", "staticfiles"}
VENDORED = ROOT / "static" / "vendor"

# "issue" or "issues", then a number, "#" and a number, or "finding", "point" or "item" and a number.
CITATION = re.compile(r"\bissues?\s*(?:#\s*|(?:finding|point|item)\s+)?\d", re.IGNORECASE)


def _sources():
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                         and not d.endswith(".egg-info") and here / d != VENDORED)
        for name in sorted(files):
            if Path(name).suffix in SUFFIXES:
                yield here / name


def citations(text: str) -> list[int]:
    """The 1-based numbers of the lines of `text` that cite an issue."""
    return [number for number, line in enumerate(text.splitlines(), 1) if CITATION.search(line)]


@pytest.mark.parametrize("line", [
    "Issue <n> point 5: the preview's world-info log",
    "(web.md screen 5; issue <n> point 6)",
    "# a collapsed panel (issue <n>)",
    "/* issue <n>: the designer's workspace. */",
    "Regex scripts in the studio (issue <n>, build item 4)",
    "see issue #<n>",
    "Issues <n> and <n> both",
    "Issue <n>'s small UI gaps",
    "walked in Chromium (issue finding <n>)",
    "{# issue<n>: a template comment #}",
])
def test_a_citation_of_an_issue_number_is_found(line):
    # `<n>` stands for the number, so that this file cites none itself
    assert citations(f"first line\n{line.replace('<n>', '18')}\n") == [2]


@pytest.mark.parametrize("line", [
    "table.projection tr.over td { background: #fdecec; }",
    "color: #123;",
    'assert "no issues" in done.stdout',
    "key “glade” found in message #4",
    "the slug race gave 5 x 500 (quality.md, Bad input)",
    "it answers every issue the user raises",
    "tissue 5",
    "engine.md §5, web.md screen 3",
])
def test_legitimate_text_is_not_a_citation(line):
    assert citations(line) == []


def test_the_project_cites_no_issue_number():
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(ROOT)}:{number}" for number in citations(text)]
    assert found == [], "cite the spec section or say the behaviour instead of an issue number:\n" + "\n".join(found)


def test_the_walk_reads_the_project_and_skips_vendored_code():
    read = {path.relative_to(ROOT).as_posix() for path in _sources()}
    assert {"studio/limits.py", "static/css/editor.css", "locale/zh_Hans/LC_MESSAGES/django.po"} <= read
    assert any(name.startswith("templates/") and name.endswith(".html") for name in read)
    assert not any(name.startswith(("static/vendor/", ".venv/")) or "__pycache__" in name for name in read)
