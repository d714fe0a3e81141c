"""`manage.py assemble` takes a text-completion request (`"api": "text"`): the JSON result carries the prompt and
the stop strings, the table one row per span of the prompt."""

import io
import json

from django.core.management import call_command

from strategies_app.text_builtins import CONTEXT, INSTRUCT

REQUEST = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate",
           "resources": {"character": {"name": "Ada", "description": "An engineer."},
                         "instruct_template": INSTRUCT[0], "context_template": CONTEXT[0],
                         "text_settings": {"instruct_enabled": True}},
           "conversation": {"history": [], "input": [{"id": "i", "role": "user", "content": "Hi."}]},
           "names": {"user": "Sam"}}


def _run(tmp_path, *extra):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    out = io.StringIO()
    call_command("assemble", "--input", str(path), *extra, stdout=out)
    return out.getvalue()


def test_json_output_has_the_prompt_and_stop_strings(tmp_path):
    body = json.loads(_run(tmp_path))
    # ChatML, wrap on: the card's description in the story string's system block, then the message and last line
    assert body["request"]["prompt"] == ("<|im_start|>system\nAn engineer.<|im_end|>\n"
                                         "<|im_start|>user\nHi.<|im_end|>\n<|im_start|>assistant\n")
    assert body["request"]["stop"][0] == "\nSam:"


def test_table_output_has_a_row_per_span(tmp_path):
    lines = _run(tmp_path, "--format", "table").splitlines()
    assert lines[0].split() == ["#", "source", "tokens", "content"]
    assert [line.split()[1] for line in lines[1:-2]] == ["story_string", "message:i", "last_line"]
    assert lines[-2].startswith('stop strings: "\\nSam:"')
    assert lines[-1].endswith("(st-estimate)")


def test_a_text_request_with_a_bad_template_field_exits_1_naming_it(tmp_path):
    from tests.web.test_assemble_command import run_failing

    bad = {**REQUEST, "resources": {**REQUEST["resources"],
                                    "instruct_template": {**INSTRUCT[0], "input_suffix": ["x"]}}}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(bad))
    error = run_failing("--input", str(path))
    assert 400 <= error["status"] < 500
    assert "instruct_template.input_suffix" in error["error"]
