"""A session chooses chat or text completion; a text session's request is SillyTavern's text-completion request
(`"api": "text"`, builtin-st, its instruct / context / system-prompt templates, instruct on or off, its settings)."""

import pytest

from preview_app import services as session_services
from preview_app.previews import session_preview, session_request
from studio.errors import ServiceError
from tests.web.text_sessions import builtin, make_text_session


@pytest.fixture
def text_session(users):
    return make_text_session(users["designer"], users["admin"])


def test_a_text_session_sends_the_text_request_with_its_templates(text_session):
    request = session_request(text_session, {"ignored": "strategy"})
    assert (request["api"], request["strategy"], request["tokenizer"]) == ("text", "builtin-st", "st-estimate")
    resources = request["resources"]
    assert resources["instruct_template"]["input_sequence"] == "<|im_start|>user"
    assert resources["context_template"]["name"] == "Chat"
    assert resources["system_prompt"]["content"].startswith("You are {{char}}")
    assert resources["text_settings"]["instruct_enabled"] is True
    assert resources["text_settings"]["sysprompt_enabled"] is True
    assert "preset" not in resources
    assert request["conversation"]["input"][0]["content"] == "Show me the cards."


def test_the_chatml_prompt_wraps_each_message_in_its_sequences(text_session):
    prompt = session_preview(text_session).request.prompt
    # ChatML (wrap on): <|im_start|>{role}\n{text}<|im_end|>\n, the story string in the system block, and the last
    # line opening the character's turn
    assert prompt.startswith("<|im_start|>system\nYou are Ada in an ongoing role-play with Sam.")
    assert "<|im_start|>assistant\nWelcome to the mill.<|im_end|>\n" in prompt
    assert "<|im_start|>user\nShow me the cards.<|im_end|>\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_instruct_off_sends_plain_name_lines(text_session):
    session = session_services.session_text_update(session=text_session, instruct_enabled=False)
    prompt = session_preview(session).request.prompt
    assert "<|im_start|>" not in prompt
    assert "Sam: Show me the cards.\n" in prompt and prompt.endswith("Ada:")


def test_a_chat_session_keeps_its_strategy_request(world):
    request = session_request(world["session"], {"id": "x"})
    assert "api" not in request and request["strategy"] == {"id": "x"}


def test_a_template_of_the_wrong_kind_is_refused_naming_the_field(text_session):
    with pytest.raises(ServiceError) as refused:
        session_services.session_text_update(session=text_session, instruct_template=builtin("context", "Chat"))
    assert refused.value.detail["path"] == "instruct_template"


def test_text_settings_are_checked_by_name(text_session):
    with pytest.raises(ServiceError) as refused:
        session_services.session_text_update(session=text_session, text_settings={"max_context": "lots"})
    assert refused.value.detail["path"] == "resources.text_settings.max_context"
    with pytest.raises(ServiceError) as unknown:
        session_services.session_text_update(session=text_session, text_settings={"temperature": 1})
    assert unknown.value.detail["path"] == "text_settings.temperature"


def test_a_copy_keeps_the_text_choice(text_session, users):
    copy = session_services.session_copy(session=text_session, user=users["designer"])
    assert (copy.completion, copy.instruct_template_id) == ("text", text_session.instruct_template_id)


def test_the_api_switches_a_session_to_text_and_reports_it(world, users):
    from tests.web.conftest import client_for

    client = client_for(users["designer"])
    session = world["session"]
    llama = builtin("instruct", "Llama 3")
    answer = client.patch(f"/api/sessions/{session.pk}", {"completion": "text", "instruct_template": llama.pk,
                                                          "text_settings": {"max_context": 2048}},
                          content_type="application/json")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["completion"], body["instruct_template"], body["text_settings"]) == ("text", llama.pk,
                                                                                      {"max_context": 2048})
    preview = client.get(f"/api/sessions/{session.pk}/preview").json()
    assert preview["request"]["prompt"].endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    refused = client.patch(f"/api/sessions/{session.pk}", {"context_template": llama.pk, "name": "renamed"},
                           content_type="application/json")
    assert refused.status_code == 400 and refused.json()["detail"]["path"] == "context_template"
    session.refresh_from_db()
    assert session.name != "renamed"  # nothing of a refused change is stored


def test_the_api_creates_a_text_session_or_nothing(users):
    from preview_app.models import Session
    from tests.web.conftest import client_for

    client = client_for(users["designer"])
    gemma = builtin("instruct", "Gemma")
    made = client.post("/api/sessions", {"name": "Gemma chat", "completion": "text", "instruct_template": gemma.pk,
                                         "current_input": "Hi."}, content_type="application/json")
    assert made.status_code == 201
    session = Session.objects.get(pk=made.json()["id"])
    assert (session.completion, session.instruct_template_id) == ("text", gemma.pk)
    refused = client.post("/api/sessions", {"name": "Broken", "completion": "text", "text_settings": {"x": 1}},
                          content_type="application/json")
    assert refused.status_code == 400 and not Session.objects.filter(name="Broken").exists()


def test_the_example_messages_behavior_goes_to_chat_completion_too(text_session):
    """SillyTavern's pin_examples / strip_examples are one setting for both completions: the session's chat request
    carries those two keys alone; without them it carries no text settings."""
    chat = session_request(text_session, "builtin-st", chat=True)
    assert "text_settings" not in chat["resources"]
    session = session_services.session_text_update(session=text_session, text_settings={
        **(text_session.text_settings or {}), "strip_examples": True, "collapse_newlines": True})
    chat = session_request(session, "builtin-st", chat=True)
    assert chat["resources"]["text_settings"] == {"strip_examples": True}
    assert session_request(session, "builtin-st")["resources"]["text_settings"]["collapse_newlines"] is True


def test_start_reply_with_of_the_session_goes_to_its_chat_request_and_a_preview_option_wins(text_session):
    from preview_app.previews import with_options

    session = session_services.session_text_update(session=text_session, text_settings={
        **(text_session.text_settings or {}), "user_prompt_bias": "Sure,"})
    chat = session_request(session, "builtin-st", chat=True)
    assert chat["generation"]["start_reply_with"] == "Sure,"
    asked = with_options(chat, {"generation": {"type": "normal", "start_reply_with": "No,"}})
    assert asked["generation"]["start_reply_with"] == "No," and asked["generation"]["turn"] == chat["generation"]["turn"]
