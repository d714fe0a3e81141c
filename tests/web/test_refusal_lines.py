"""An engine refusal's line in the page's language (studio/refusal_lines.py): what was expected and what was found
in Chinese on a Chinese page, the engine's English line as written, marked, where the catalogue has no words."""

import ast
import html
import json
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation

from assembly.reading import ImportInvalid
from assembly.sillytavern.preset import import_preset
from assembly.sillytavern.worldbook import import_worldbook
from strategies_app.models import Preset
from studio.refusal_lines import refusal_line
from tests.web.conftest import client_for

ENGINE = Path(__file__).resolve().parents[2] / "assembly"


def importer_phrases() -> set[str]:
    """The literal phrases the importers write after "expected": the second argument of `invalid` /
    `ImportInvalid`, the third of `read_object`, a reader's `expected=`."""
    phrases = set()
    for path in [*(ENGINE / "sillytavern").rglob("*.py"), ENGINE / "reading.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            argument = {"invalid": 1, "ImportInvalid": 1, "read_object": 2}.get(name)
            found = [node.args[argument]] if argument is not None and len(node.args) > argument else []
            found += [kw.value for kw in node.keywords if kw.arg == "expected"]
            phrases.update(f.value for f in found if isinstance(f, ast.Constant) and isinstance(f.value, str))
    return phrases


def refused(importer, data) -> dict:
    try:
        importer(data)
    except ImportInvalid as error:
        return error.to_json()
    raise AssertionError("the importer took it")


def in_chinese(error: dict):
    with translation.override("zh-hans"):
        return refusal_line(error)


def test_every_phrase_the_importers_write_has_chinese_words():
    phrases = importer_phrases()
    assert len(phrases) > 60  # the scan reaches the importers
    with translation.override("zh-hans"):
        missing = sorted(p for p in phrases if translation.pgettext("expected", p) == p)
    assert missing == []


def test_a_refused_field_reads_in_chinese_with_what_was_found():
    error = refused(import_preset, {"prompts": [{"identifier": "main", "enabled": "yes"}]})
    assert error["error"] == "prompts[0].enabled: expected true or false, got string 'yes'"
    line = in_chinese(error)
    assert (line.text, line.lang) == ("prompts[0].enabled：应为 true 或 false，实际为字符串 'yes'", None)


def test_a_phrase_with_numbers_reads_in_chinese_by_its_pattern():
    error = refused(import_worldbook, {"entries": {"0": {"uid": 0, "probability": 500}}})
    assert in_chinese(error).text == "entries.0.probability：应为 0 到 100 之间的整数，实际为整数 500"
    whole = refused(import_worldbook, [])
    assert in_chinese(whole).text == "输入：应为含 `entries` 的世界书对象，实际为含 0 项的列表"


def test_a_line_without_chinese_words_stays_as_written_and_marked_english():
    error = {"code": "IMPORT_INVALID", "error": "prompts: expected a shape no catalogue knows",
             "detail": {"path": "prompts", "expected": "a shape no catalogue knows"}}
    assert (in_chinese(error).text, in_chinese(error).lang) == ("prompts: expected a shape no catalogue knows", "en")
    translated = {"code": "STRATEGY_READ_ONLY", "error": "策略 “默认” 是内置策略：复制后再编辑"}
    assert in_chinese(translated).lang is None
    with translation.override("en"):
        assert refusal_line(error).lang is None  # an English page: nothing to mark


def test_the_import_page_says_the_refusal_in_chinese(users):
    client = client_for(users["admin"])
    client.cookies["django_language"] = "zh-hans"
    raw = json.dumps({"prompts": [{"identifier": "main", "injection_depth": "deep"}]}).encode()
    page = client.post("/resources/import/", {"kind": "preset", "dry_run": "1",
                                               "file": SimpleUploadedFile("bad.json", raw)})
    assert page.status_code == 400 and Preset.objects.count() == 0
    assert "prompts[0].injection_depth：应为整数，实际为字符串 'deep'" in html.unescape(page.content.decode())


def test_a_studio_line_that_quotes_an_engine_phrase_is_left_as_written():
    error = {"code": "INPUT_INVALID", "error": "kind: the file looks like a character card, not a persona (spec: "
                                               "expected one of the fields name, description)", "detail": {}}
    assert (in_chinese(error).text, in_chinese(error).lang) == (error["error"], "en")


def test_a_studio_refusal_in_the_engines_shape_reads_in_chinese_too():
    error = {"code": "INPUT_INVALID", "detail": {"path": "token"},
             "error": "token: expected the token of an upload of yours from a dry run (this one is unknown; pick the "
                      "file again)"}
    assert in_chinese(error).text == "token：应为你在试运行中上传的文件的令牌（此令牌未知；请重新选择文件）"
