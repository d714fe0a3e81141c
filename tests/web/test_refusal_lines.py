"""An engine refusal's line in the page's language (studio/refusal_lines.py): what was expected and what was found
in Chinese on a Chinese page, the engine's English line as written, marked, where the catalogue has no words."""

import ast
import html
import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation

from assembly import StrategyError, normalize_strategy, strategy
from assembly.reading import ImportInvalid
from assembly.sillytavern.preset import import_preset
from assembly.sillytavern.worldbook import import_worldbook
from strategies_app import services
from strategies_app.models import Preset, Strategy
from studio.refusal_lines import refusal_line
from tests.web.conftest import client_for

ENGINE = Path(__file__).resolve().parents[2] / "assembly"
CHINESE = re.compile("[\u4e00-\u9fff]")
# English words a translated line no longer holds, once its quoted code values and {field, lists} are set aside
ENGLISH_WORDS = re.compile(r"\b(?:must|got|expected|or|and|of|the|at|most|an|string|number|list|object|boolean)\b")
CODE_VALUES = re.compile(r"'[^']*'|\{[^}]*\}")


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


def test_macros_that_make_too_much_text_read_in_chinese():
    from assembly import assemble
    from assembly.errors import AssemblyError

    prompt = {"identifier": "main", "role": "system", "content": "{{space::9999999999}}"}
    with pytest.raises(AssemblyError) as refused_run:
        assemble({"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": "v2",
                  "resources": {"preset": {"prompts": [prompt]}}})
    assert in_chinese(refused_run.value.to_json()).text == "{{space}}：应为宏生成的文本最多 2097152 个字符"

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


# --- the strategy validator: `<headline>: <path> must be <what>[, got <value>]` ----------------------------------

A2 = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "Lore first",
      "rules": [{"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]}
LAYOUT = {"version": 1, "source": "manual", "identity": "preserve", "fallback": "source-order"}


def strategy_phrases() -> list[str]:
    """Every phrase assembly/strategy.py passes to `_fail` as what it expected, the formatted ones filled in: a
    module constant with its value, a join with two sample items, anything else with a sample name. A form this
    does not know fails the scan, so a new call site is read here too."""
    tree = ast.parse((ENGINE / "strategy.py").read_text())

    def sample(node: ast.expr, local: dict[str, str]) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in local:
            return local[node.id]
        if isinstance(node, ast.Name) and node.id.isupper():
            return getattr(strategy, node.id)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "repr":
            return repr(sample(node.args[0], local))
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "join"
                and isinstance(node.func.value, ast.Constant)):
            return node.func.value.value.join(["alpha", "beta"])
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append(part.value)
                    continue
                value = part.value
                shown = str(getattr(strategy, value.id)) if isinstance(value, ast.Name) and value.id.isupper() else (
                    sample(value, local) if isinstance(value, ast.Call) else "some-id")
                parts.append(repr(shown) if part.conversion == ord("r") else shown)
            return "".join(parts)
        raise AssertionError(f"line {node.lineno}: an expected phrase the scan cannot read: {ast.unparse(node)}")

    phrases = []
    for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
        local = {target.id: statement.value.value for statement in ast.walk(function)
                 if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                 for target in statement.targets if isinstance(target, ast.Name)}
        phrases += [sample(call.args[2], local) for call in ast.walk(function)
                    if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "_fail"]
    return phrases


def strategy_refused(document) -> dict:
    try:
        normalize_strategy(document)
    except StrategyError as error:
        return error.to_json()
    raise AssertionError("the strategy was taken")


def assert_all_chinese(line, english: str) -> None:
    assert line.lang is None and CHINESE.search(line.text), english
    assert not ENGLISH_WORDS.search(CODE_VALUES.sub("", line.text)), (english, line.text)


def test_every_headline_and_phrase_of_the_strategy_validator_has_chinese_words():
    phrases = strategy_phrases()
    assert len(phrases) > 40  # the scan reaches every `_fail`
    headlines = [value for name, value in vars(strategy).items() if name.startswith("MSG_")]
    assert len(headlines) == 21
    for phrase in phrases:
        error = strategy._fail(strategy.MSG_RULE, "rules[0].x", phrase, got=False).to_json()
        assert_all_chinese(in_chinese(error), phrase)
    for headline in headlines:
        error = strategy._fail(headline, "rules[0].x", "a boolean", "yes").to_json()
        assert_all_chinese(in_chinese(error), headline)


@pytest.mark.parametrize("value", [None, True, "yes", 10 ** 60, 2.5, {"a": 1}, [1, 2], {1}])
def test_every_kind_of_value_the_strategy_validator_describes_reads_in_chinese(value):
    error = strategy._fail(strategy.MSG_RULE, "rules[0].enabled", "a boolean", value).to_json()
    line = in_chinese(error)
    assert_all_chinese(line, error["error"])
    assert line.text.startswith("无效的组装规则：rules[0].enabled 应为布尔值，实际为")


@pytest.mark.parametrize(("document", "chinese"), [
    ({**A2, "rules": [{"id": "a", "kind": "history", "role": "narrator"}]},
     "无效的身份：rules[0].role 应为 preserve、system、user、assistant 之一，实际为字符串 'narrator'"),
    ({**A2, "rules": [{"id": "a", "kind": "history", "depth": 10001}]},
     "无效的插入深度：rules[0].depth 应为 null 或 0 到 10000 之间的整数，实际为数字 10001"),
    ({key: value for key, value in A2.items() if key != "name"},
     "必须填写策略名称（最多 200 个字符）：name 应为最多 200 个字符的非空白字符串，实际为 null"),
    ({**A2, "backend": "sideways"}, "无效的组装后端：backend 应为不填、'native' 或 'core'，实际为字符串 'sideways'"),
    ({**A2, "rules": [{"id": "a", "kind": "history"}, {"id": "a", "kind": "input"}]},
     "规则 id 必须唯一：rules[1].id 应为唯一，但 'a' 已被前面的规则使用"),
    ({**A2, "layout": {**LAYOUT, "positions": [{"sourceId": "persona", "positionId": "main", "enabled": True,
                                                "placement": "list", "anchor": "start"}]}},
     "无效的位置锚点：layout.positions[0].anchor 应为 'end'，或指向另一个位置的 {sourceId, positionId, side} 对象，"
     "实际为字符串 'start'"),
    ({**A2, "layout": {**LAYOUT, "priority": ["preset", "resource"]}},
     "无效的位置优先级顺序：layout.priority 应为 'user'、'preset'，或含 3 到 128 个阶段 id 的列表，实际为含 2 项的列表"),
    ({**A2, "layout": {**LAYOUT, "priority": ["preset", "resource", "default", "preset"]}},
     "无效的位置优先级顺序：layout.priority[3] 应为只出现一次，但 'preset' 重复出现"),
    ([], "不支持的策略格式或版本：策略应为 format 为 'dsh-tavern-request-assembly'、version 为 1 的 JSON 对象，"
         "实际为含 0 项的列表"),
    ({**A2, "version": 2}, "不支持的策略格式或版本：version 应为 1，实际为数字 2"),
])
def test_a_refused_strategy_reads_in_chinese_with_its_path_as_written(document, chinese):
    error = strategy_refused(document)
    line = in_chinese(error)
    assert (line.text, line.lang) == (chinese, None)
    with translation.override("en"):
        english = refusal_line(error)
    assert (english.text, english.lang) == (error["error"], None)  # an English page: the engine's line as written


def test_a_strategy_line_with_another_path_or_an_unknown_headline_stays_as_written():
    error = strategy_refused({**A2, "backend": "sideways"})
    moved = {**error, "detail": {**error["detail"], "path": "layout"}}
    unknown = {**error, "error": error["error"].replace("Invalid assembly backend", "Invalid something else")}
    for stays in (moved, unknown):
        assert (in_chinese(stays).text, in_chinese(stays).lang) == (stays["error"], "en")


def test_the_strategy_editor_says_a_refused_edit_in_chinese(users):
    mine = services.strategy_create(user=users["designer"], name="Notes", document={
        **A2, "rules": [{"id": "note", "kind": "custom", "text": "hello"}]})
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    page = client.post(f"/strategies/{mine.slug}/rules/note/edit/", {
        "version": mine.version, "text": "x" * (strategy.MAX_TEXT_CHARS + 1)})
    assert page.status_code == 413 and Strategy.objects.get(pk=mine.pk).version == mine.version
    shown = html.unescape(page.content.decode())
    line = "自定义文本超出上限：rules[0].text 应为最多 524288 个字符"
    assert f"更改被拒绝：{line}。未做任何更改。" in shown  # the sentence, and the technical detail under it
    assert shown.count(line) == 2 and "must be" not in shown


@pytest.mark.parametrize(("message", "chinese"), [
    ("session 999 does not exist", "会话 999 不存在"),
    ("golden snapshot 7 does not exist", "金标快照 7 不存在"),
    ("strategy 'gone' does not exist", "策略 'gone' 不存在"),
    ("revision of 'mine' 'abc123' does not exist", "策略 'mine' 的修订版 'abc123' 不存在"),
    ("message of session 4 12 does not exist", "会话 4 的消息 12 不存在"),
])
def test_a_not_found_line_reads_in_chinese(message, chinese):
    line = in_chinese({"code": "NOT_FOUND", "error": message, "detail": {}})
    assert (line.text, line.lang) == (chinese, None)


def test_a_not_found_line_for_a_thing_without_words_stays_english():
    line = in_chinese({"code": "NOT_FOUND", "error": "gizmo 3 does not exist", "detail": {}})
    assert (line.text, line.lang) == ("gizmo 3 does not exist", "en")


def test_a_missing_session_page_says_it_all_in_chinese(users):
    page = client_for(users["qa"]).get("/sessions/999/preview/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert page.status_code == 404 and "会话 999 不存在" in page.content.decode()
    assert "does not exist" not in page.content.decode()


@pytest.mark.parametrize(("message", "chinese"), [
    ("file: not JSON (Expecting value: line 1, column 27)", "file：不是 JSON（第 1 行第 27 列：此处应为一个值）"),
    ("file: not JSON (Expecting ':' delimiter: line 2, column 5)", "file：不是 JSON（第 2 行第 5 列：此处应为英文冒号）"),
])
def test_a_file_that_is_not_json_reads_in_chinese(message, chinese):
    line = in_chinese({"code": "INPUT_NOT_JSON", "error": message, "detail": {"path": "file"}})
    assert (line.text, line.lang) == (chinese, None)


def test_a_decoder_reason_without_words_stays_english():
    message = "file: not JSON (Something new: line 1, column 1)"
    line = in_chinese({"code": "INPUT_NOT_JSON", "error": message, "detail": {"path": "file"}})
    assert (line.text, line.lang) == (message, "en")


def test_every_reason_the_json_decoder_gives_has_chinese_words():
    import json as json_module

    reasons = set()
    for bad in ("", "{", '{"a" 1}', "[1 2]", '"abc', '{"a":1}x', '"\\q"', '"\\u12"', '"a\tb"'):
        try:
            json_module.loads(bad)
        except json_module.JSONDecodeError as error:
            reasons.add(error.msg)
    assert len(reasons) == 9  # each bad text above gives its own reason
    with translation.override("zh-hans"):
        assert [r for r in sorted(reasons) if translation.pgettext("json decoder", r) == r] == []


def test_a_kind_mismatch_reads_in_chinese_only_when_the_reader_s_refusal_does():
    """The import page's refusal of a wrong kind carries the reader's own refusal: both in the page's words, or the
    whole line as the engine wrote it (never half of it translated)."""
    def mismatch(reason: dict) -> dict:
        return {"code": "INPUT_INVALID", "error": f"kind: the file looks like a preset, not a world book "
                f"({reason['error']})", "detail": {"path": "kind", "detected": "preset", "chosen": "worldbook",
                                                     "reason": reason}}

    known = mismatch(refused(import_worldbook, {"entries": 5}))
    line = in_chinese(known)
    assert line.lang is None and line.text.startswith("kind：文件看起来是") and "expected" not in line.text
    unknown = mismatch({"code": "IMPORT_INVALID", "error": "entries: expected words no catalogue has"})
    line = in_chinese(unknown)
    assert line.lang == "en" and line.text == unknown["error"]


def test_every_fixed_sentence_of_the_standard_backend_has_chinese_words():
    """The standard backend refuses with fixed sentences (reference A.6); each reads in Chinese on a Chinese page."""
    tree = ast.parse((Path(__file__).resolve().parents[2] / "assembly" / "native.py").read_text())
    sentences = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", None) == "_unsupported" and node.args
                 and isinstance(node.args[0], ast.Constant) and node.args[0].value.isascii()}
    sentences |= {"Native assembly must preserve history.", "Native assembly must preserve input."}
    assert len(sentences) > 12  # the scan reaches them
    for sentence in sorted(sentences):
        line = in_chinese({"code": "ASSEMBLY_NATIVE_UNSUPPORTED", "error": sentence})
        assert line.lang is None and not line.text.isascii(), sentence


def test_every_preview_option_s_refusal_reads_in_chinese():
    from preview_app.forms import PreviewOptionsForm

    for field, expected in PreviewOptionsForm.EXPECTED.items():
        line = in_chinese({"code": "INPUT_INVALID", "error": f"{field}: expected {expected}",
                           "detail": {"path": field, "expected": expected}})
        assert line.lang is None and "expected" not in line.text, (field, line.text)


def test_the_host_availability_refusals_read_in_chinese_with_the_setting_as_code():
    """The engine refuses a strategy whose backend the host lacks (`require_available`) with a fixed sentence naming
    the host setting; a Chinese page says it in Chinese, the setting and its value as code."""
    from assembly.api import require_available
    from assembly.errors import AssemblyError

    refusals = []
    for document, host in (({"backend": "core"}, {"core_available": False}),
                           ({"backend": "native"}, {"native_available": False})):
        with pytest.raises(AssemblyError) as caught:
            require_available(document, host)
        refusals.append(caught.value.to_json())
    for refusal in refusals:
        line = in_chinese(refusal)
        assert line.lang is None and "_available` 为 `false`" in line.text, refusal["error"]
