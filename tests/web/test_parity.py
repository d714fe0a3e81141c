"""The parity check (engine.md §5, SillyTavern parity): what SillyTavern sent beside what builtin-st assembles for the
session.

The "matches" body is built from the engine's own builtin-st answer for the session: that is the page's contract
(pasting what builtin-st sends is identical); every "differs" body changes one thing of it."""

import copy
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from assembly import assemble
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from preview_app.parity import PlainMessage, content_difference, parity_rows, read_sent
from preview_app.previews import session_request
from strategies_app.models import Strategy, StrategyRevision
from studio.http import MAX_BODY_BYTES
from tests.web.conftest import client_for, csrf_client_for

FIVE_MIB_PLUS = MAX_BODY_BYTES + 1


def builtin_st_messages(session) -> list[dict]:
    """What builtin-st sends for `session`, as a chat-completion client sends it."""
    result = assemble(session_request(session, "builtin-st")).model_dump(mode="json")
    return [{key: m[key] for key in ("role", "content", "name") if m.get(key)} for m in result["request"]["messages"]]


def api(client, session, body, **extra):
    return client.post(f"/api/sessions/{session.pk}/parity", body, content_type="application/json", **extra)


def page_url(session):
    return f"/sessions/{session.pk}/parity/"


@pytest.fixture
def session(world):
    return world["session"]


@pytest.fixture
def qa(users):
    return client_for(users["qa"])


# ---------------------------------------------------------------------------------------------- the API


def test_a_request_body_builtin_st_would_send_is_identical_and_its_other_fields_are_named(qa, session):
    messages = builtin_st_messages(session)
    response = api(qa, session, {"sent": {"model": "gpt-4o", "temperature": 0.7, "messages": messages}})
    assert response.status_code == 200
    data = response.json()
    assert data["ok"] is True and data["identical"] is True
    assert data["strategy"] == "builtin-st"
    assert data["revision"] == Strategy.objects.get(slug="builtin-st").revisions.first().revision
    assert data["assembled"] == messages and data["sent"] == messages
    assert [row["kind"] for row in data["rows"]] == ["same"] * len(messages)
    assert [(row["assembled_index"], row["sent_index"]) for row in data["rows"]] == [(i, i) for i in
                                                                                     range(len(messages))]
    assert data["notes"] == ["Not compared: the request's other fields (model, temperature)."]


def test_a_bare_messages_array_is_read_like_a_body(qa, session):
    data = api(qa, session, {"sent": builtin_st_messages(session)}).json()
    assert data["identical"] is True and data["notes"] == []


def test_pasted_text_is_parsed(qa, session):
    text = json.dumps({"messages": builtin_st_messages(session)})
    assert api(qa, session, {"sent": text}).json()["identical"] is True


@pytest.mark.parametrize("field, change", [
    ("role", lambda m: m.update(role="user" if m["role"] == "system" else "system")),
    ("content", lambda m: m.update(content=m["content"].replace("Ada", "Bea"))),
    ("name", lambda m: m.update(name="example_user")),
])
def test_each_differing_field_is_marked_on_its_message(qa, session, field, change):
    messages = builtin_st_messages(session)
    sent = copy.deepcopy(messages)
    change(sent[0])  # the main prompt: "Be Ada."
    data = api(qa, session, {"sent": {"messages": sent}}).json()
    assert data["identical"] is False
    first, *rest = data["rows"]
    assert first["kind"] == "changed" and (first["assembled_index"], first["sent_index"]) == (0, 0)
    assert [d["field"] for d in first["differences"]] == [field]
    assert all(row["kind"] == "same" for row in rest)
    difference = first["differences"][0]
    assert (difference["assembled"], difference["sent"]) == {
        "role": ("system", "user"), "content": ("Ad", "Be"), "name": ("", "example_user")}[field]
    if field == "content":
        assert (difference["at"], difference["line"], difference["column"]) == (3, 1, 4)


def test_role_content_and_name_of_one_message_are_all_marked(qa, session):
    sent = builtin_st_messages(session)
    sent[1] = {"role": "assistant", "content": "Earlier!", "name": "Ada"}
    rows = api(qa, session, {"sent": sent}).json()["rows"]
    assert rows[1]["kind"] == "changed"
    assert [d["field"] for d in rows[1]["differences"]] == ["role", "content", "name"]


def test_extra_missing_and_reordered_messages(qa, session):
    messages = builtin_st_messages(session)
    sent = [messages[1], messages[0], *messages[2:-1], {"role": "system", "content": "[Start a new chat]"}]
    rows = api(qa, session, {"sent": sent}).json()["rows"]
    kinds = [(row["kind"], row["assembled_index"], row["sent_index"]) for row in rows]
    assert ("moved", 0, 1) in kinds or ("moved", 1, 0) in kinds
    last = len(messages) - 1
    assert ("changed", last, last) in kinds  # the unmatched last messages line up as one changed pair
    sent.append({"role": "user", "content": "one more"})
    rows = api(qa, session, {"sent": sent}).json()["rows"]
    assert rows[-1] == {"kind": "only_sent", "assembled_index": None, "sent_index": last + 1, "differences": []}
    rows = api(qa, session, {"sent": messages[:-1]}).json()["rows"]
    assert rows[-1] == {"kind": "only_assembled", "assembled_index": last, "sent_index": None, "differences": []}


def test_content_parts_are_joined_and_other_parts_named(qa, session):
    sent = builtin_st_messages(session)
    sent[0] = {"role": "system", "content": [{"type": "text", "text": "Be "}, {"type": "image_url", "image_url": {
        "url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": "Ada."}]}
    data = api(qa, session, {"sent": {"messages": sent}}).json()
    assert data["identical"] is True
    assert data["sent"][0] == {"role": "system", "content": "Be Ada."}
    assert data["notes"] == ["Message #0: content part 1 (image_url) is not compared: the studio compares text only.",
                             "Message #0: 2 text parts joined into one text."]


def test_other_message_fields_and_null_content_are_noted(qa, session):
    sent = builtin_st_messages(session)
    sent.append({"role": "assistant", "content": None, "tool_calls": []})
    notes = api(qa, session, {"sent": sent}).json()["notes"]
    index = len(sent) - 1
    assert notes == [f"Message #{index}: its content is null, read as empty.",
                     f"Message #{index}: not compared: tool_calls."]


def test_bad_json_is_a_400_naming_the_field(qa, session):
    response = api(qa, session, {"sent": '{"messages": [}'})
    assert response.status_code == 400
    assert response.json()["code"] == "INPUT_NOT_JSON"
    assert response.json()["detail"]["path"] == "sent"
    assert response.json()["error"].startswith("sent: not JSON")
    response = qa.post(f"/api/sessions/{session.pk}/parity", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]["path"] == "body"


@pytest.mark.parametrize("sent, path, expected", [
    ({"model": "gpt-4o"}, "sent", "a chat-completion request body"),
    ("3", "sent", "a chat-completion request body"),
    (7, "sent", "a chat-completion request body"),
    ({"messages": {"role": "user"}}, "sent.messages", "a list of messages"),
    ([3], "sent[0]", 'a message object {"role", "content"}'),
    ([{"content": "Hi"}], "sent[0].role", "a role"),
    ([{"role": 1, "content": "Hi"}], "sent[0].role", "a role"),
    ([{"role": "user"}], "sent[0].content", "a text or a list of content parts"),
    ([{"role": "user", "content": 5}], "sent[0].content", "a text or a list of content parts"),
    ([{"role": "user", "content": ["Hi"]}], "sent[0].content[0]", 'a content part {"type": "text"'),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}], "sent[0].content[0].text", "a text"),
    ({"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Yo", "name": 5}]},
     "sent.messages[1].name", "a text"),
])
def test_a_wrong_shape_is_a_400_naming_the_path_and_what_it_expects(qa, session, sent, path, expected):
    response = api(qa, session, {"sent": sent})
    assert response.status_code == 400
    data = response.json()
    assert data["ok"] is False and data["code"] == "INPUT_INVALID"
    assert data["detail"]["path"] == path
    assert data["detail"]["expected"].startswith(expected)
    assert data["error"].startswith(f"{path}: expected ")


@pytest.mark.parametrize("body, path", [({}, "sent"), ({"sent": [], "model": "x"}, "model"),
                                        ({"sent": [], "generation": "sideways"}, "generation")])
def test_a_wrong_api_body_names_the_field(qa, session, body, path):
    response = api(qa, session, body)
    assert response.status_code == 400 and response.json()["detail"]["path"] == path


def test_a_generation_type_is_assembled_like_the_preview(qa, session):
    messages = builtin_st_messages(session)
    data = api(qa, session, {"sent": messages, "generation": "impersonate"}).json()
    assert data["assembled"] != messages  # impersonate sends its own prompt


def test_an_engine_refusal_answers_with_its_status(qa, session):
    Session.objects.filter(pk=session.pk).update(host={})  # builtin-st needs the core backend
    response = api(qa, session, {"sent": []})
    assert response.status_code == 409 and response.json()["code"] == "REQUEST_ASSEMBLY_CORE_REQUIRED"


def test_a_body_over_5_mib_is_refused(qa, session):
    response = api(qa, session, {"sent": "x" * FIVE_MIB_PLUS})
    assert response.status_code == 413 and response.json()["code"] == "PAYLOAD_TOO_LARGE"


def test_the_api_needs_a_login_an_existing_session_and_post(users, session):
    assert api(client_for(None), session, {"sent": []}).status_code == 401
    qa = client_for(users["qa"])
    response = qa.post("/api/sessions/999999/parity", {"sent": []}, content_type="application/json")
    assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    assert qa.get(f"/api/sessions/{session.pk}/parity").status_code == 405


def test_the_api_checks_csrf(users, session):
    client = csrf_client_for(users["designer"])
    response = api(client, session, {"sent": []})
    assert response.status_code == 403 and response.json()["code"] == "CSRF_FAILED"
    client.get(page_url(session))  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    assert api(client, session, {"sent": []}, HTTP_X_CSRFTOKEN=token).status_code == 200


def _stored():
    return (Session.objects.count(), SessionEvent.objects.count(), GoldenSnapshot.objects.count(),
            StrategyRevision.objects.count(), list(Session.objects.values_list("pk", "updated_at", "current_input")))


def test_nothing_is_stored(qa, session):
    before = _stored()
    messages = builtin_st_messages(session)
    api(qa, session, {"sent": messages})
    api(qa, session, {"sent": messages[:1]})
    api(qa, session, {"sent": "{bad"})
    qa.post(page_url(session), {"sent": json.dumps(messages)})
    qa.post(page_url(session), {"sent": json.dumps([{"role": "user", "content": "changed"}])})
    assert _stored() == before


# ---------------------------------------------------------------------------------------------- the page


def test_the_page_is_linked_from_the_session_and_the_preview(qa, session):
    url = page_url(session)
    assert f'href="{url}"' in qa.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="{url}"' in qa.get(f"/sessions/{session.pk}/preview/").content.decode()


def test_the_empty_form(qa, session):
    response = qa.get(page_url(session))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="sent"' in html and 'type="file"' in html and 'enctype="multipart/form-data"' in html
    assert 'hx-post="/sessions/' in html and 'id="parity-result"' in html
    assert "data-identical" not in html and 'class="refusal"' not in html


def test_the_page_says_identical_and_offers_the_pin(qa, session):
    body = json.dumps({"model": "gpt-4o", "messages": builtin_st_messages(session)})
    response = qa.post(page_url(session), {"sent": body})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-identical="true"' in html and "Identical" in html
    assert "Not compared: the request&#x27;s other fields (model)." in html
    assert html.count('data-kind="same"') == len(builtin_st_messages(session))
    assert 'action="/goldens/pin/"' in html and 'name="strategy" value="builtin-st"' in html


def test_the_pin_is_offered_to_those_who_may_approve_goldens_only(users, session):
    body = {"sent": json.dumps(builtin_st_messages(session))}
    html = client_for(users["designer"]).post(page_url(session), body).content.decode()
    assert 'data-identical="true"' in html and 'action="/goldens/pin/"' not in html


def test_pinning_from_the_page_pins_builtin_st_for_the_session(users, session):
    qa = client_for(users["qa"])
    html = qa.post(page_url(session), {"sent": json.dumps(builtin_st_messages(session))}).content.decode()
    revision = Strategy.objects.get(slug="builtin-st").revisions.first()
    assert f'name="revision" value="{revision.revision}"' in html
    response = qa.post("/goldens/pin/", {"session": session.pk, "strategy": "builtin-st",
                                         "revision": revision.revision})
    assert response.status_code == 302
    golden = GoldenSnapshot.objects.get(session=session, revision=revision)
    messages = [{key: m[key] for key in ("role", "content", "name") if m.get(key)}
                for m in golden.result["request"]["messages"]]
    assert messages == builtin_st_messages(session)


def test_the_page_marks_a_content_difference_where_it_is(qa, session):
    sent = builtin_st_messages(session)
    sent[0]["content"] = "Be <b>Bea</b>."
    response = qa.post(page_url(session), {"sent": json.dumps(sent)})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-identical="false"' in html and "Different" in html
    assert 'data-kind="changed" data-fields="content"' in html
    assert "The content first differs at line 1, column 4:" in html
    # user content is escaped, and the differing middle is highlighted on each side
    assert "<b>Bea</b>" not in html
    assert '<del class="diff-part">Ada</del>' in html
    assert '<ins class="diff-part">&lt;b&gt;Bea&lt;/b&gt;</ins>' in html


def test_an_uploaded_file_is_compared(qa, session):
    upload = SimpleUploadedFile("request.json", json.dumps({"messages": builtin_st_messages(session)}).encode(),
                                content_type="application/json")
    response = qa.post(page_url(session), {"sent": "", "file": upload})
    assert response.status_code == 200 and 'data-identical="true"' in response.content.decode()


def test_an_uploaded_file_over_5_mib_is_refused(qa, session):
    upload = SimpleUploadedFile("big.json", b" " * FIVE_MIB_PLUS, content_type="application/json")
    response = qa.post(page_url(session), {"file": upload})
    assert response.status_code == 413
    assert 'data-code="PAYLOAD_TOO_LARGE"' in response.content.decode()


def test_pasted_text_over_5_mib_is_refused_and_not_sent_back(qa, session):
    response = qa.post(page_url(session), {"sent": "[" + " " * FIVE_MIB_PLUS + "]"})
    assert response.status_code == 413
    html = response.content.decode()
    assert 'data-code="PAYLOAD_TOO_LARGE"' in html and len(html) < 100_000


@pytest.mark.parametrize("text, code, path", [
    ("", "INPUT_INVALID", "sent"),
    ('{"messages": [', "INPUT_NOT_JSON", "sent"),
    ('{"messages": [{"role": "user", "content": 5}]}', "INPUT_INVALID", "sent.messages[0].content"),
])
def test_the_page_shows_a_bad_input_in_place_of_the_result(qa, session, text, code, path):
    response = qa.post(page_url(session), {"sent": text})
    assert response.status_code == 400
    html = response.content.decode()
    assert f'data-code="{code}"' in html and f"{path}: " in html
    assert "Nothing was compared" in html
    assert 'data-identical' not in html
    if text:
        assert "&quot;messages&quot;: [" in html  # the pasted text is kept to be fixed


def test_a_bad_upload_names_the_file(qa, session):
    upload = SimpleUploadedFile("request.json", b"\xff\xfe not utf-8", content_type="application/json")
    response = qa.post(page_url(session), {"file": upload})
    assert response.status_code == 415 and "file: expected UTF-8 JSON text" in response.content.decode()
    upload = SimpleUploadedFile("request.json", b'{"model": "x"}', content_type="application/json")
    response = qa.post(page_url(session), {"file": upload})
    assert response.status_code == 400 and "file: expected a chat-completion request body" in \
        response.content.decode()


def test_a_bad_option_is_a_400(qa, session):
    response = qa.post(page_url(session), {"sent": "[]", "generation": "sideways"})
    assert response.status_code == 400 and "generation: expected one of normal" in response.content.decode()


def test_htmx_gets_the_result_partial_and_the_browser_the_whole_page(qa, session):
    body = {"sent": json.dumps(builtin_st_messages(session))}
    partial = qa.post(page_url(session), body, HTTP_HX_REQUEST="true")
    html = partial.content.decode()
    assert partial.status_code == 200
    assert html.lstrip().startswith('<section id="parity-result"') and "<html" not in html
    assert 'data-identical="true"' in html
    full = qa.post(page_url(session), body).content.decode()
    assert "<html" in full and 'id="parity-result"' in full and 'name="sent"' in full
    refused = qa.post(page_url(session), {"sent": "{"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and refused.content.decode().lstrip().startswith('<section id="parity-result"')


def test_the_page_needs_a_login_and_an_existing_session(users, session):
    response = client_for(None).get(page_url(session))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    response = client_for(None).post(page_url(session), {"sent": "[]"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    missing = client_for(users["qa"]).get("/sessions/999999/parity/")
    assert missing.status_code == 404 and 'data-code="NOT_FOUND"' in missing.content.decode()
    assert client_for(users["qa"]).post("/sessions/999999/parity/", {"sent": "[]"}).status_code == 404


def test_the_page_post_checks_csrf(users, session):
    client = csrf_client_for(users["designer"])
    assert client.post(page_url(session), {"sent": "[]"}).status_code == 403
    html = client.get(page_url(session)).content.decode()
    token = client.cookies["csrftoken"].value
    assert 'name="csrfmiddlewaretoken"' in html and "X-CSRFToken" in html  # the form field, and htmx's header
    assert client.post(page_url(session), {"sent": "[]", "csrfmiddlewaretoken": token}).status_code == 200
    assert client.post(page_url(session), {"sent": "[]"}, HTTP_X_CSRFTOKEN=token,
                       HTTP_HX_REQUEST="true").status_code == 200


def test_an_engine_refusal_is_shown_with_its_status(qa, session):
    Session.objects.filter(pk=session.pk).update(host={})
    response = qa.post(page_url(session), {"sent": "[]"})
    assert response.status_code == 409
    assert 'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in response.content.decode()


# ---------------------------------------------------------------------------------------------- the pure parts


def test_content_difference_finds_the_differing_middle():
    difference = content_difference("line one\nline two\n", "line one\nline 2\n")
    assert (difference.assembled, difference.sent) == ("two", "2")
    assert (difference.at, difference.line, difference.column) == (14, 2, 6)
    assert (difference.before, difference.after) == ("line one\nline ", "\n")
    appended = content_difference("Hi", "Hi ")
    assert (appended.assembled, appended.sent, appended.shown_sent) == ("", " ", "·")
    long = content_difference("a" * 100 + "X" + "b" * 100, "a" * 100 + "Y" + "b" * 100)
    assert long.before == "…" + "a" * 60 and long.after == "b" * 60 + "…"


def test_parity_rows_pair_leftovers_in_order():
    assembled = [{"role": "system", "content": "A", "parts": ["preset:main"]},
                 {"role": "user", "content": "B", "parts": ["history:1"]},
                 {"role": "user", "content": "C", "parts": ["input:1"]}]
    sent = (PlainMessage("system", "A"), PlainMessage("user", "B2"), PlainMessage("user", "C"),
            PlainMessage("system", "D"))
    rows = parity_rows(assembled, sent)
    assert [(r.kind, r.assembled_index, r.sent_index) for r in rows] == [
        ("same", 0, 0), ("changed", 1, 1), ("same", 2, 2), ("only_sent", None, 3)]
    assert rows[1].parts == ("history:1",)


def test_read_sent_accepts_both_shapes():
    body = read_sent({"messages": [{"role": "user", "content": "Hi", "name": "Sam"}], "stream": False})
    assert body.messages == (PlainMessage("user", "Hi", "Sam"),)
    assert read_sent([{"role": "user", "content": "Hi", "name": None}]).messages == (PlainMessage("user", "Hi"),)


@pytest.mark.parametrize(("language", "name"), [("en", "Preset slots first (advanced)"), ("zh-hans", "预设插槽优先（进阶）")])
def test_the_parity_page_names_the_built_in_it_assembles_with_not_its_slug(qa, session, language, name):
    qa.cookies["django_language"] = language
    html = qa.get(page_url(session)).content.decode()
    lead = re.search(r'<p class="lead">(.*?)</p>', html, re.S).group(1)
    assert f"“{name}”" in lead and "builtin-st" not in lead


def test_a_long_pasted_request_is_aligned_in_bounded_time():
    """Every message a pasted request has beyond the assembled ones was compared with each assembled one, twice:
    300 assembled against 100,000 pasted (a 4 MB paste anyone may send) held a worker for tens of seconds."""
    import time

    assembled = [{"role": "user", "content": f"a{i}"} for i in range(300)] + [{"role": "user", "content": "same"}]
    sent = (PlainMessage("user", "same"), *(PlainMessage("user", str(i)) for i in range(100_000)),
            PlainMessage("user", "a7"))
    started = time.monotonic()
    rows = parity_rows(assembled, sent)
    assert time.monotonic() - started < 5
    kinds = {(row.assembled_index, row.sent_index): row.kind for row in rows}
    assert kinds[(300, 0)] == "same" and kinds[(7, 100_001)] == "moved"
