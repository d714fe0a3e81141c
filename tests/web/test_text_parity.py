"""The parity check and goldens of a text-completion session: a pasted prompt string (or the backend's body with
its stop strings) against the prompt builtin-st builds; a golden pinned on the text page matches until the
session's template changes."""

import json

import pytest

from preview_app import services as session_services
from preview_app.goldens import golden_status
from preview_app.models import GoldenSnapshot
from preview_app.previews import session_preview
from strategies_app.models import Strategy
from tests.web.conftest import client_for
from tests.web.text_sessions import builtin, make_text_session


@pytest.fixture
def text_session(users):
    return make_text_session(users["designer"], users["admin"])


def _sent(session):
    result = session_preview(session).request
    return result.prompt, list(result.stop)


def test_the_prompt_builtin_st_builds_is_identical(text_session, users):
    prompt, _stop = _sent(text_session)
    page = client_for(users["qa"]).post(f"/sessions/{text_session.pk}/text/parity/", {"sent": prompt})
    html = page.content.decode()
    assert page.status_code == 200 and 'data-identical="true"' in html and "data-prompt-same" in html


def test_a_changed_prompt_shows_where_it_first_differs(text_session, users):
    prompt, _stop = _sent(text_session)
    changed = prompt.replace("Hello Ada.", "Hello Ida.")
    at = prompt.index("Hello Ada.") + len("Hello ")
    html = client_for(users["qa"]).post(f"/sessions/{text_session.pk}/text/parity/",
                                        {"sent": changed}).content.decode()
    assert 'data-identical="false"' in html and f'data-first-difference="{at}"' in html
    assert "− Hello Ada.&lt;|im_end|&gt;" in html and "+ Hello Ida.&lt;|im_end|&gt;" in html


def test_a_backend_body_has_its_stop_strings_compared(text_session, users):
    prompt, stop = _sent(text_session)
    api = client_for(users["qa"])
    same = api.post(f"/api/sessions/{text_session.pk}/parity", {"sent": {"prompt": prompt, "stop": stop,
                                                                            "temperature": 0.7}},
                    content_type="application/json").json()
    assert same["identical"] is True and same["stop_same"] is True
    assert "temperature" in same["notes"][0]
    other = api.post(f"/api/sessions/{text_session.pk}/parity",
                     {"sent": json.dumps({"prompt": prompt, "stopping_strings": stop[:1]})},
                     content_type="application/json").json()
    assert other["identical"] is False and other["prompt_same"] is True and other["stop_same"] is False


def test_the_chat_parity_page_of_a_text_session_leads_to_the_text_check(text_session, users):
    answer = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/parity/")
    assert answer["Location"] == f"/sessions/{text_session.pk}/text/parity/"


def test_qa_pins_a_text_golden_that_differs_once_the_template_changes(text_session, users):
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "data-pin-golden" in html
    revision = Strategy.objects.get(slug="builtin-st").revisions.first()
    answer = client.post("/goldens/pin/", {"session": text_session.pk, "strategy": "builtin-st",
                                           "revision": revision.revision})
    assert answer.status_code == 302
    golden = GoldenSnapshot.objects.get(session=text_session)
    assert golden.result["request"]["prompt"] == _sent(text_session)[0]
    assert golden_status(golden).status == "matches"
    session_services.session_text_update(session=text_session, instruct_template=builtin("instruct", "Alpaca"))
    golden.refresh_from_db()
    status = golden_status(golden)
    assert status.status == "differs"
    assert any("### Instruction:" in line for line in status.diff)
    page = client.get("/goldens/")
    assert page.status_code == 200 and f'id="golden-{golden.pk}"' in page.content.decode()


def test_api_assemble_takes_a_text_request(users):
    request = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate",
               "resources": {"character": {"name": "Ada", "description": "An engineer."},
                             "instruct_template": dict(builtin("instruct", "ChatML").fields),
                             "text_settings": {"instruct_enabled": True}},
               "conversation": {"history": [], "input": [{"id": "i", "role": "user", "content": "Hi."}]},
               "names": {"user": "Sam"}}
    body = client_for(users["qa"]).post("/api/assemble", request, content_type="application/json").json()
    assert body["request"]["prompt"].endswith("<|im_start|>user\nHi.<|im_end|>\n<|im_start|>assistant\n")
    assert body["request"]["stop"][0] == "\nSam:"


def test_api_assemble_refuses_a_text_request_naming_the_bad_template_field(users):
    request = {"api": "text", "strategy": "builtin-st", "tokenizer": "st-estimate",
               "resources": {"character": {"name": "Ada"},
                             "instruct_template": {**builtin("instruct", "ChatML").fields, "input_suffix": ["x"]},
                             "text_settings": {"instruct_enabled": True}},
               "conversation": {"history": [], "input": [{"id": "i", "role": "user", "content": "Hi."}]},
               "names": {"user": "Sam"}}
    answer = client_for(users["qa"]).post("/api/assemble", request, content_type="application/json")
    assert 400 <= answer.status_code < 500
    assert "instruct_template.input_suffix" in json.dumps(answer.json())


def test_a_pasted_prompt_of_many_repeated_lines_is_diffed_in_bounded_time(text_session, users):
    """Blank lines repeat in every prompt: matching 200,000 pasted ones against a prompt's took minutes of one
    worker (difflib compares each pair); the lines that differ are listed without that search past a bound."""
    import time

    from preview_app.text_views import line_diff

    prompt = "\n".join(["", "x"] * 100)
    started = time.monotonic()
    diff = line_diff(prompt, "\n" * 200_000)
    assert time.monotonic() - started < 10
    assert sum(line["op"] == "removed" for line in diff) >= 100 and any(line["op"] == "added" for line in diff)
    page = client_for(users["qa"]).post(f"/sessions/{text_session.pk}/text/parity/", {"sent": "\n" * 200_000})
    assert page.status_code == 200 and time.monotonic() - started < 20


def test_a_pasted_body_nested_too_deeply_is_read_as_text_not_a_server_error(text_session, users):
    deep = '{"prompt": ' + "[" * 100_000
    client = client_for(users["qa"])
    page = client.post(f"/sessions/{text_session.pk}/text/parity/", {"sent": deep})
    assert page.status_code == 200 and 'data-identical="false"' in page.content.decode()
    api = client.post(f"/api/sessions/{text_session.pk}/parity", {"sent": deep}, content_type="application/json")
    assert api.status_code == 200 and api.json()["identical"] is False
