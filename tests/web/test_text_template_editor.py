"""The text-template editor: a designer copies a built-in instruct template, edits its sequences, and sees on a
text session the prompt the edit gives with one sentence computed from before and after; saving is refused for a
built-in, for another user's template, and for a stale edit."""

import re

import pytest

from strategies_app import services as template_services
from strategies_app.models import TextTemplate
from tests.web.conftest import client_for
from tests.web.text_sessions import builtin, make_text_session


@pytest.fixture
def text_session(users):
    return make_text_session(users["designer"], users["admin"])


def _fields(template, **changes):
    fields = {name: template.fields.get(name, "") for name in (
        "input_sequence", "input_suffix", "output_sequence", "output_suffix", "system_sequence", "system_suffix",
        "first_input_sequence", "last_input_sequence", "first_output_sequence", "last_output_sequence",
        "last_system_sequence", "story_string_prefix", "story_string_suffix", "stop_sequence")}
    return {**fields, **changes}


def _copy(client, template, session):
    answer = client.post(f"/text-templates/{template.pk}/copy/", {"session": session.pk})
    assert answer.status_code == 302
    return TextTemplate.objects.get(pk=int(re.search(r"/text-templates/(\d+)/edit/", answer["Location"]).group(1)))


def test_an_edited_sequence_is_previewed_with_its_effect(text_session, users):
    client = client_for(users["designer"])
    copy = _copy(client, builtin("instruct", "ChatML"), text_session)
    assert (copy.name, copy.owner, copy.builtin) == ("ChatML (copy)", users["designer"], False)
    page = client.post(f"/text-templates/{copy.pk}/edit/", {
        "session": text_session.pk, "action": "preview",
        **_fields(copy, input_sequence="<|im_start|>human", output_sequence="<|im_start|>bot")})
    html = page.content.decode()
    # three user turns (an example, a message, the typed one) and three character turns (an example, the greeting,
    # the last line) open with another sequence: six lines each way; "bot" is shorter than "assistant" by more than
    # "human" is longer than "user", so the estimate (bytes / 3.35) falls
    assert re.search(r"Editing input_sequence, output_sequence: the prompt changes: 6 lines out, 6 lines in; "
                     r"\d+ → \d+ tokens \(-\d+\); stop strings added: \\n&lt;\|im_start\|&gt;human, "
                     r"\\n&lt;\|im_start\|&gt;bot; stop strings removed: \\n&lt;\|im_start\|&gt;user, "
                     r"\\n&lt;\|im_start\|&gt;assistant\.", html)
    assert '<span class="added" data-op="added">+ &lt;|im_start|&gt;human</span>' in html
    assert 'data-sequence="input_sequence" title="instruct template: input_sequence">&lt;|im_start|&gt;human<' in html
    assert TextTemplate.objects.get(pk=copy.pk).fields["input_sequence"] == "<|im_start|>user"  # nothing stored


def test_a_field_the_session_never_uses_changes_nothing_and_says_why(text_session, users):
    # the first input sequence opens the oldest message only when it is the user's; here the greeting is oldest
    client = client_for(users["designer"])
    copy = _copy(client, builtin("instruct", "ChatML"), text_session)
    html = client.post(f"/text-templates/{copy.pk}/edit/", {
        "session": text_session.pk, "action": "preview", **_fields(copy, first_input_sequence="<|x|>")}
    ).content.decode()
    assert "No change to this session&#x27;s prompt: first_input_sequence does not occur in it." in html


def test_saving_stores_the_fields_and_keeps_every_other_one(text_session, users):
    client = client_for(users["designer"])
    copy = _copy(client, builtin("instruct", "ChatML"), text_session)
    digest = template_services.text_template_digest(copy.fields)
    answer = client.post(f"/text-templates/{copy.pk}/edit/", {
        "session": text_session.pk, "action": "save", "expected": digest,
        **_fields(copy, input_sequence="<|im_start|>human")})
    assert answer.status_code == 302 and "saved=1" in answer["Location"]
    stored = TextTemplate.objects.get(pk=copy.pk)
    assert stored.fields == {**copy.fields, "input_sequence": "<|im_start|>human"}
    stale = client.post(f"/text-templates/{copy.pk}/edit/", {
        "session": text_session.pk, "action": "save", "expected": digest, **_fields(copy)})
    assert stale.status_code == 409 and 'data-code="TEMPLATE_CHANGED"' in stale.content.decode()
    assert TextTemplate.objects.get(pk=copy.pk).fields == stored.fields


def test_a_built_in_is_read_only_and_another_users_template_is_not_yours(text_session, users):
    chatml = builtin("instruct", "ChatML")
    digest = template_services.text_template_digest(chatml.fields)
    refused = client_for(users["designer"]).post(f"/text-templates/{chatml.pk}/edit/", {
        "action": "save", "expected": digest, **_fields(chatml, input_sequence="x")})
    assert refused.status_code == 409 and 'data-code="TEMPLATE_READ_ONLY"' in refused.content.decode()
    copy = _copy(client_for(users["admin"]), chatml, text_session)
    mine = client_for(users["designer"]).post(f"/text-templates/{copy.pk}/edit/", {
        "action": "save", "expected": template_services.text_template_digest(copy.fields), **_fields(copy)})
    assert mine.status_code == 403
    assert client_for(users["qa"]).post(f"/text-templates/{chatml.pk}/copy/").status_code == 403


def test_qa_reads_the_editor_and_tries_an_edit_without_saving(text_session, users):
    client = client_for(users["qa"])
    chatml = builtin("instruct", "ChatML")
    html = client.get(f"/text-templates/{chatml.pk}/edit/?session={text_session.pk}").content.decode()
    assert 'data-read-only="true"' in html and 'value="save"' not in html
    assert "Nothing edited yet" in html


def test_a_context_templates_story_string_is_edited_the_same_way(text_session, users):
    client = client_for(users["designer"])
    copy = _copy(client, builtin("context", "Chat"), text_session)
    story = "{{#if description}}About {{char}}: {{description}}\n{{/if}}{{trim}}"
    html = client.post(f"/text-templates/{copy.pk}/edit/", {
        "session": text_session.pk, "action": "preview", "story_string": story,
        "chat_start": copy.fields["chat_start"], "example_separator": copy.fields["example_separator"]}
    ).content.decode()
    assert "Editing story_string: the prompt changes:" in html
    assert "About Ada: " in html and 'rows="10"' in html


@pytest.mark.parametrize(("language", "kind", "name", "key", "words"), [
    ("en", "instruct", "ChatML", "input_sequence", "User Message Prefix"),
    ("en", "context", "Chat", "story_string", "Story String"),
    ("zh-hans", "instruct", "ChatML", "last_system_sequence", "系统指令前缀"),
    ("zh-hans", "context", "Chat", "example_separator", "示例分隔符")])
def test_each_field_is_labelled_as_sillytavern_names_it_with_its_key_beside(users, language, kind, name, key, words):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    template = builtin(kind, name)
    html = client.get(f"/text-templates/{template.pk}/edit/").content.decode()
    label = re.search(rf'<label for="id_{key}">(.*?)</label>', html, re.S).group(1)
    assert label.startswith(f"{words} ") and f"<code class=\"muted small\" data-field-key>{key}</code>" in label


def test_a_reasoning_template_has_no_editor_only_its_export(users):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.web.test_text_templates import DATA

    admin = client_for(users["admin"])
    admin.post("/api/resources/template/import", {"file": SimpleUploadedFile(
        "r.json", (DATA / "reasoning_house_think.json").read_bytes())})
    reasoning = TextTemplate.objects.get(kind="reasoning", builtin=False)
    html = client_for(users["designer"]).get(f"/text-templates/{reasoning.pk}/edit/").content.decode()
    assert "A reasoning template is kept as data" in html
    assert f"/api/resources/template/{reasoning.pk}/export" in html
    assert "data-template-effect" not in html and "data-copy-template" not in html and "<textarea" not in html
    listing = admin.get("/resources/").content.decode()
    assert f"/text-templates/{reasoning.pk}/edit/" not in listing
