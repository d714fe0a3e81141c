"""`manage.py assemble --input request.json [--format json|table]` (web.md: exit 0, or 1 with the error JSON).

The request is reference A.14.7's built-in catalogue case; expected texts and roles come from its table (B3), the
delivery and history status of each message from engine.md §1 (core: request-only content, history native, input
appended).
"""

import io
import json
import sys

import pytest
from django.core.management import call_command

from assembly.tokens import get_encoding

# A.14.7: prompts main(user "HEAD"), marker worldInfoBefore, marker chatHistory, jailbreak(system "TAIL");
# lore w(before, "LORE", system); native history OLD and input NOW.
A147_REQUEST = {
    "strategy": "builtin-st",
    "resources": {
        "preset": {"prompts": [
            {"identifier": "main", "name": "main", "role": "user", "content": "HEAD"},
            {"identifier": "worldInfoBefore", "name": "worldInfoBefore", "role": "system", "content": "",
             "marker": True},
            {"identifier": "chatHistory", "name": "chatHistory", "role": "system", "content": "", "marker": True},
            {"identifier": "jailbreak", "name": "jailbreak", "role": "system", "content": "TAIL"},
        ]},
        "worldbook": {"entries": [{"uid": "w", "content": "LORE", "position": "before", "role": "system"}],
                      "activation": "all"},
    },
    "conversation": {
        "history": [{"id": "old", "role": "user", "content": "OLD"}],
        "input": [{"id": "now", "role": "user", "content": "NOW"}],
    },
    "host": {"core_available": True},
}
# (content, role, delivery, history_status) per request message, in order.
A147_EXPECTED = [
    ("HEAD", "user", "request", "request-only"),
    ("LORE", "system", "request", "request-only"),
    ("OLD", "user", "history", "native"),
    ("NOW", "user", "input", "appended"),
    ("TAIL", "system", "request", "request-only"),
]


def o200k_tokens(text):
    return len(get_encoding("o200k_base").encode(text, disallowed_special=()))


def write_request(tmp_path, request, name="request.json"):
    path = tmp_path / name
    path.write_text(json.dumps(request), encoding="utf-8")
    return path


def run(*args):
    out = io.StringIO()
    call_command("assemble", *args, stdout=out)
    return out.getvalue()


def run_failing(*args):
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("assemble", *args, stdout=out)
    assert exit_info.value.code == 1
    error = json.loads(out.getvalue())
    # engine.md §1: failure as JSON is {"ok": false, "code", "status", "error", "detail"}.
    assert set(error) == {"ok", "code", "status", "error", "detail"} and error["ok"] is False
    return error


# success ----------------------------------------------------------------------------------------------------------


def test_json_output_is_the_assembly_result_of_the_reference_case(tmp_path):
    result = json.loads(run("--input", str(write_request(tmp_path, A147_REQUEST))))

    assert result["ok"] is True
    assert result["backend"] == "core"
    assert result["strategy"]["id"] == "builtin-st"
    assert len(result["strategy"]["revision"]) == 64  # sha256 hex of the normalized strategy
    messages = result["request"]["messages"]
    assert [(m["content"], m["role"], m["delivery"], m["history_status"]) for m in messages] == A147_EXPECTED
    assert [m["enters_history"] for m in messages] == [False, False, True, True, False]
    # Conversation messages keep their own ids.
    assert messages[2]["id"] == "old" and messages[3]["id"] == "now"
    assert [m["tokens"] for m in messages] == [o200k_tokens(text) for text, *_ in A147_EXPECTED]
    total = sum(o200k_tokens(text) for text, *_ in A147_EXPECTED)
    assert result["tokens"] == {
        "total": total,
        "by_module": {"preset": o200k_tokens("HEAD") + o200k_tokens("TAIL"), "worldbook": o200k_tokens("LORE"),
                      "history": o200k_tokens("OLD"), "input": o200k_tokens("NOW")},
        "tokenizer": "o200k_base",
        # OpenAI's framing (3 per message and its one-token role, 3 for the reply); the preset's window.
        "model": None, "family": "openai", "exact": True, "framing": "openai",
        "request_total": total + 4 * len(A147_EXPECTED) + 3,
        "context_window": result["tokens"]["context_window"], "reply_reserve": result["tokens"]["reply_reserve"],
        "window_source": "preset", "fits": True,
    }
    # The nodes say where each message came from.
    assert [(n["module"], n["text"]) for n in result["nodes"]] == [
        ("preset", "HEAD"), ("worldbook", "LORE"), ("history", "OLD"), ("input", "NOW"), ("preset", "TAIL")]
    # Only the new input is recorded in durable history.
    # core records the input and a log-only request record (never sent; it carries the revision, reference A.7)
    events = result["durable_events"]
    assert [(e["id"], e["content"]) for e in events[:-1]] == [("now", "NOW")]
    assert events[-1]["source"] == {"kind": "request-assembly", "strategy_id": "builtin-st",
                                    "revision": result["strategy"]["revision"]}


def test_json_output_reads_stdin_with_a_dash(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(A147_REQUEST)))
    result = json.loads(run("--input", "-"))
    assert [m["content"] for m in result["request"]["messages"]] == ["HEAD", "LORE", "OLD", "NOW", "TAIL"]


def test_native_strategy_needs_no_core_backend(tmp_path):
    request = {**A147_REQUEST, "strategy": "builtin-native-slots", "host": {"core_available": False}}
    result = json.loads(run("--input", str(write_request(tmp_path, request))))
    # A.14.7 B3 for builtin-native-slots, as the native request sends it: system text in one head, TAIL as pre-step.
    assert [(m["role"], m["content"], m["delivery"]) for m in result["request"]["messages"]] == [
        ("system", "HEAD\n\nLORE", "system"), ("user", "OLD", "history"), ("user", "NOW", "input"),
        ("user", "TAIL", "pre-step")]
    assert result["backend"] == "native"


def test_table_output_has_a_row_per_message_and_a_total(tmp_path):
    lines = run("--input", str(write_request(tmp_path, A147_REQUEST)), "--format", "table").splitlines()

    assert lines[0].split() == ["#", "role", "delivery", "history", "tokens", "content"]
    rows = [line.split() for line in lines[1:-1]]
    assert rows == [[str(index), role, delivery, status, str(o200k_tokens(text)), text]
                    for index, (text, role, delivery, status) in enumerate(A147_EXPECTED)]
    total = sum(o200k_tokens(text) for text, *_ in A147_EXPECTED)
    assert lines[-1] == f"total tokens: {total} (o200k_base); diagnostics: none"


def test_table_output_shows_long_content_on_one_shortened_line(tmp_path):
    long_text = "first line\n" + "x" * 100
    request = {**A147_REQUEST, "conversation": {"history": [{"id": "old", "role": "user", "content": long_text}],
                                                "input": [{"id": "now", "role": "user", "content": "NOW"}]}}
    lines = run("--input", str(write_request(tmp_path, request)), "--format", "table").splitlines()
    assert len(lines) == 1 + 5 + 1  # header, one row per message, total: the newline did not add a row
    history_row = lines[3]
    assert history_row.split()[:3] == ["2", "user", "history"]
    shown = history_row[history_row.index("first line"):]
    assert shown == ("first line " + "x" * 100)[:60] + "…"


# failures ---------------------------------------------------------------------------------------------------------


def test_a_file_that_is_not_json_exits_1_with_an_error_naming_the_file(tmp_path):
    path = tmp_path / "request.json"
    path.write_text('{"strategy": "builtin-st",', encoding="utf-8")
    error = run_failing("--input", str(path))
    assert error["code"] == "INPUT_NOT_JSON" and error["status"] == 400
    assert str(path) in error["error"] and "not JSON" in error["error"]


def test_an_unterminated_string_says_where_without_a_doubled_at(tmp_path):
    path = tmp_path / "request.json"
    path.write_text('{"strategy": "builtin-st', encoding="utf-8")
    error = run_failing("--input", str(path))
    assert error["error"] == f"{path}: not JSON (Unterminated string starting at: line 1, column 14)"


def test_a_missing_file_exits_1_with_an_error(tmp_path):
    path = tmp_path / "nowhere.json"
    error = run_failing("--input", str(path))
    assert error["code"] == "INPUT_UNREADABLE" and error["status"] == 400
    assert str(path) in error["error"]


def test_a_core_strategy_without_the_core_backend_exits_1_with_409(tmp_path):
    request = {**A147_REQUEST, "host": {"core_available": False}}
    error = run_failing("--input", str(write_request(tmp_path, request)))
    assert error["code"] == "REQUEST_ASSEMBLY_CORE_REQUIRED" and error["status"] == 409
    assert "core_available" in error["error"]  # the message names the host field that refuses it


def test_the_table_format_fails_the_same_way(tmp_path):
    request = {**A147_REQUEST, "host": {"core_available": False}}
    error = run_failing("--input", str(write_request(tmp_path, request)), "--format", "table")
    assert error["code"] == "REQUEST_ASSEMBLY_CORE_REQUIRED" and error["status"] == 409


@pytest.mark.parametrize(
    ("request_json", "field"),
    [
        ([A147_REQUEST], "request"),  # a JSON array, not an object
        ({**A147_REQUEST, "tokenizer": "gpt2"}, "tokenizer"),
        ({**A147_REQUEST, "conversation": {"history": [{"role": "robot", "content": "x"}]}}, "conversation.history.0.role"),
    ],
)
def test_an_invalid_request_exits_1_naming_the_field(tmp_path, request_json, field):
    error = run_failing("--input", str(write_request(tmp_path, request_json)))
    assert error["code"] == "ASSEMBLY_REQUEST_INVALID" and error["status"] == 400
    assert error["error"].startswith(f"{field}: ")


def test_a_file_that_is_not_utf8_is_refused_with_an_error_json(tmp_path):
    import json as _json
    from io import StringIO

    from django.core.management import call_command

    path = tmp_path / "bad.json"
    path.write_bytes(b"\xff\xfe not text")
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("assemble", "--input", str(path), stdout=out)
    assert exited.value.code == 1
    error = _json.loads(out.getvalue())
    assert error["code"] == "INPUT_NOT_JSON" and "UTF-8" in error["error"]
