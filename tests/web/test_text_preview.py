"""The text preview of a session (`/sessions/<pk>/text/`): the prompt as one monospace text whose spans carry
their source and tokens, instruct sequences marked, the stop strings, what was left out to fit, and the window
bar (budget = context size - response length); read-only for QA, settings for the session's designer."""

import re

import pytest

from preview_app import services as session_services
from preview_app.models import Session
from tests.web.conftest import client_for
from tests.web.text_sessions import builtin, make_text_session


@pytest.fixture
def text_session(users):
    return make_text_session(users["designer"], users["admin"])


def _spans(html):
    return re.findall(r'<span class="tspan tsrc-([\w-]+)" id="span-\d+" data-span-index="\d+" '
                      r'data-source="([^"]*)" data-tokens="(\d+)" title="([^"]*)"', html)


def test_qa_reads_the_prompt_with_each_span_source_and_tokens(text_session, users):
    page = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/")
    assert page.status_code == 200
    html = page.content.decode()
    spans = _spans(html)
    sources = [s[1] for s in spans]
    assert sources[0] == "story_string" and sources[-1] == "last_line"
    typed = [s for s in spans if s[3].startswith("the typed message")]
    assert typed and typed[0][0] == "message-user"
    # the estimate: ceil(UTF-8 bytes / 3.35) of "<|im_start|>user\nShow me the cards.<|im_end|>\n"
    assert typed[0][2] == str(-(-len(b"<|im_start|>user\nShow me the cards.<|im_end|>\n") * 100 // 335))
    assert 'data-sequence="input_sequence"' in html and 'data-sequence="output_suffix"' in html
    assert "Save settings" not in html  # QA reads only


def test_the_side_list_names_card_fields_messages_and_examples(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "story string (context template)" in html
    assert "example dialogue (character card)" in html
    assert "message #1 (Ada)" in html
    assert 'data-field="description"' in html  # "An engineer." inside the story string


def test_stop_strings_are_listed_with_visible_newlines(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "<code data-stop=\"\nSam:\">\\nSam:</code>" in html
    assert "\\n&lt;|im_end|&gt;" in html


def test_a_small_context_lists_the_messages_left_out(users):
    session = make_text_session(users["designer"], users["admin"], max_context=200, amount_gen=60)
    for n in range(12):
        session_services.event_append(session=session, role="user" if n % 2 else "assistant",
                                      content=f"Line {n} of a long talk about looms and cards.", name="")
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/").content.decode()
    assert 'data-trimmed-message="' in html
    assert 'data-context-window="200" data-reply-reserve="60"' in html


def test_the_designer_switches_a_session_to_text_and_picks_templates(world, users):
    session = world["session"]
    client = client_for(users["designer"])
    answer = client.post(f"/sessions/{session.pk}/text/settings/", {
        "completion": "text", "instruct_template": builtin("instruct", "Llama 3").pk,
        "context_template": builtin("context", "Chat").pk, "sysprompt_template": "", "instruct_enabled": "on",
        "max_context": "8192", "amount_gen": "300"})
    assert answer.status_code == 302
    session = Session.objects.get(pk=session.pk)
    assert (session.completion, session.instruct_template.name, session.sysprompt_template) == ("text", "Llama 3",
                                                                                                 None)
    # the form sends every setting it shows; a box left unticked is off
    assert session.text_settings == {"max_context": 8192, "amount_gen": 300, "user_prompt_bias": "",
                                     "custom_stopping_strings": "", "pin_examples": False, "strip_examples": False,
                                     "collapse_newlines": False, "prefer_character_prompt": False,
                                     "prefer_character_jailbreak": False}
    html = client.get(f"/sessions/{session.pk}/text/").content.decode()
    assert "&lt;|start_header_id|&gt;user&lt;|end_header_id|&gt;" in html


def test_a_response_length_as_large_as_the_context_is_refused_inline(text_session, users):
    answer = client_for(users["designer"]).post(f"/sessions/{text_session.pk}/text/settings/", {
        "completion": "text", "max_context": "100", "amount_gen": "100"})
    assert answer.status_code == 400
    assert "response length must be smaller" in answer.content.decode()


@pytest.mark.parametrize(("language", "label", "words"), [
    ("en", "Context size (tokens)", "Ensure this value is greater than or equal to 1."),
    ("zh-hans", "上下文大小（token）", "确保该值大于或等于1。")])
def test_a_bad_size_is_refused_beside_its_field_in_the_pages_language(text_session, users, language, label, words):
    answer = client_for(users["designer"]).post(f"/sessions/{text_session.pk}/text/settings/", {
        "completion": "text", "max_context": "0", "amount_gen": "5"}, HTTP_ACCEPT_LANGUAGE=language)
    assert answer.status_code == 400
    html = answer.content.decode()
    start = html.index('for="id_max_context"')
    beside = html[start:html.index('id="id_max_context"', start)]
    assert f">{label}</label>" in beside and words in beside
    assert "max_context:" not in html  # the field's code is never shown in its place
    assert Session.objects.get(pk=text_session.pk).text_settings == text_session.text_settings


def test_qa_may_not_change_the_settings(text_session, users):
    answer = client_for(users["qa"]).post(f"/sessions/{text_session.pk}/text/settings/", {"completion": "chat"})
    assert answer.status_code == 403
    assert Session.objects.get(pk=text_session.pk).completion == "text"


def test_htmx_gets_the_prompt_part_alone(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="text-prompt"' in html and "<html" not in html


def test_a_chat_session_says_it_is_chat_completion(world, users):
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/text/").content.decode()
    assert "data-chat-completion" in html


def test_the_preview_of_a_text_session_is_its_text_page(text_session, users):
    answer = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/preview/")
    assert answer.status_code == 302 and answer["Location"] == f"/sessions/{text_session.pk}/text/"


def test_the_text_page_reads_in_chinese(text_session, users):
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{text_session.pk}/text/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "停止字符串" in html and "故事字符串（上下文模板）" in html


@pytest.mark.parametrize(("language", "option"), [("en", "ChatML (built-in)"), ("zh-hans", "ChatML（内置）")])
def test_the_settings_card_names_a_built_in_template_in_the_pages_language(text_session, users, language, option):
    html = client_for(users["designer"]).get(f"/sessions/{text_session.pk}/text/",
                                             HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert re.search(rf"<option [^>]*>{re.escape(option)}</option>", html)


def test_a_continue_ends_with_the_continued_message_without_its_suffix(users):
    session = make_text_session(users["designer"], users["admin"])
    session_services.session_update(session=session, current_input="")
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/?generation=continue").content.decode()
    # continue: the newest message (Sam's "Hello Ada.") is continued, so the prompt ends with its text, no suffix
    assert re.search(r"Hello Ada\.</span></pre>", html)
    assert '<option value="continue" selected>' in html
    refused = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/?generation=swipe")
    assert refused.status_code == 400 and 'data-code="INPUT_INVALID"' in refused.content.decode()


def test_examples_the_budget_leaves_out_are_listed_newest_first_out(users):
    from strategies_app.models import Character

    session = make_text_session(users["designer"], users["admin"], max_context=300, amount_gen=60)
    card = Character.objects.get(pk=session.character_id)
    card.mes_example = "\n".join(f"<START>\n{{{{user}}}}: Question {n} about the loom?\n{{{{char}}}}: Answer {n}, "
                                 "about threads." for n in range(6))
    card.save()
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/").content.decode()
    kept = len(re.findall(r'<span class="tspan tsrc-example"', html))
    trimmed = re.findall(r"<li data-trimmed-example><span class=\"muted\">(.*?)</span>", html)
    # instruct mode: each example message is one item (two a block, six blocks); they are added oldest first
    # while they fit, so the kept ones are the first and the left-out ones the last
    assert kept and trimmed and kept + len(trimmed) == 12
    assert "Answer 5, about threads." in trimmed[-1]
    assert "Question 0 about the loom?" in html.split('id="trimmed-title"')[0]


def test_a_world_info_entry_at_depth_is_a_span_named_after_the_entry(users):
    from strategies_app import services as strategy_services
    from strategies_app.models import WorldBook

    session = make_text_session(users["designer"], users["admin"])
    book = strategy_services.worldbook_import(user=users["admin"], name="Mill lore", data={"entries": {"7": {
        "uid": 7, "key": ["loom"], "comment": "The loom", "content": "The loom is older than the mill.",
        "constant": True, "position": 4, "depth": 1, "role": 0}}})
    session_services.session_update(session=session, world_books=[WorldBook.objects.get(pk=book.id)])
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/").content.decode()
    span = [s for s in _spans(html) if s[1] == "world_info:7"]
    # at depth 1, role system: one injected system message, wrapped in ChatML's system sequence
    assert span and span[0][0] == "world_info" and span[0][3].startswith("world-info entry “The loom”")
    assert "&lt;|im_start|&gt;system</span>\nThe loom is older than the mill." in html


def test_the_session_page_says_it_is_text_completion(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/").content.decode()
    assert 'data-completion="text"' in html and "(instruct: ChatML)" in html
    assert 'data-text-link>Text-completion prompt</a>' in html


def test_an_example_of_the_character_is_closed_by_the_output_suffix(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    rows = re.findall(r'data-span-row="\d+" data-source="example[^"]*">.*?</li>', html, re.S)
    # ChatML ends every turn with the same "<|im_end|>": the example's opening sequence says whose turn it closes
    assert "input_sequence</code>, <code>input_suffix" in rows[0]
    assert "output_sequence</code>, <code>output_suffix" in rows[1]


@pytest.mark.parametrize(("language", "title"), [("en", "Text templates"), ("zh-hans", "文本模板")])
def test_a_text_sessions_page_shows_its_templates_not_the_strategy_card(text_session, users, language, title):
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    html = client.get(f"/sessions/{text_session.pk}/").content.decode()
    card = re.search(r'<section class="card"[^>]*data-text-templates>(.*?)</section>', html, re.S).group(1)
    assert f">{title}</h2>" in card
    assert 'id="apply"' not in html and 'name="choice"' not in html  # no strategy to apply: it would not be used
    kinds = dict(re.findall(r'data-text-template="(\w+)">([^<]+)</a>', card))
    assert kinds == {"instruct": "ChatML", "context": "Chat", "sysprompt": "Role-play"}
    assert f'href="/sessions/{text_session.pk}/text/" data-text-preview-link' in card


def test_a_chat_sessions_page_keeps_the_strategy_card(world, users):
    html = client_for(users["designer"]).get(f"/sessions/{world['session'].pk}/").content.decode()
    assert 'id="apply"' in html and "data-text-templates" not in html


def test_the_window_line_counts_a_prompt_string_not_a_chat_framing(text_session, users):
    session_services.session_text_update(session=text_session, text_settings={"max_context": 2048, "amount_gen": 300})
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    total = re.search(r'data-request-total="(\d+)"', html).group(1)
    assert f"{total} / 2,048 tokens in the prompt string, 300 reserved for the reply" in html
    assert "chat framing" not in html


def test_every_tokenizer_counts_the_prompt_string_beside_the_estimate(text_session, users):
    from assembly.tokens import ENCODINGS, count_tokens
    from preview_app.previews import session_preview

    session_services.session_text_update(session=text_session, text_settings={"max_context": 2048, "amount_gen": 300})
    client = client_for(users["qa"])
    page = client.get(f"/sessions/{text_session.pk}/text/").content.decode()
    url = f"/sessions/{text_session.pk}/preview/across-models/"
    assert f'href="{url}" hx-get="{url}"' in page  # counted when asked, a page of its own without JavaScript
    result = session_preview(text_session)
    html = client.get(url).content.decode()
    rows = dict(re.findall(r'<tr data-encoding="([\w-]+)" data-request-total="(\d+)" data-context-window="2048"',
                           html))
    assert rows == {"st-estimate": str(result.tokens.request_total),
                    **{encoding: str(count_tokens(result.request.prompt, encoding)) for encoding in ENCODINGS}}
    assert "no chat framing" in html and 'class="current"' in html


def test_a_text_session_runs_its_macro_engine_and_variables(text_session, users):
    """Macros 2.0 knows `{{if}}` and reads the chat's variables by `.name`; the legacy engine leaves `{{if}}` as
    written (engine.md §10), in a text prompt as in a chat one."""
    typed = "{{if .mood}}Mood: {{.mood}}.{{else}}No mood.{{/if}} Show me the cards."
    Session.objects.filter(pk=text_session.pk).update(current_input=typed, macro_engine="v2",
                                                      chat_file={"metadata": {"variables": {"mood": "calm"}}})
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "Mood: calm. Show me the cards." in html and "{{if" not in html
    Session.objects.filter(pk=text_session.pk).update(macro_engine="legacy")
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "{{if .mood}}" in html and "Mood: calm." not in html


def test_the_settings_form_shows_sillytaverns_defaults_and_saves_every_setting(text_session, users):
    """text-completion.md, Request: Start Reply With, stop strings, padding and the example and card switches."""
    client = client_for(users["designer"])
    html = client.get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert re.search(r'name="token_padding" value="64"', html)  # SillyTavern's default padding
    assert re.search(r'<input type="checkbox" name="prefer_character_prompt"[^>]*checked', html)
    answer = client.post(f"/sessions/{text_session.pk}/text/settings/", {
        "completion": "text", "max_context": "4096", "amount_gen": "200", "token_padding": "0",
        "user_prompt_bias": "Sure,", "custom_stopping_strings": '["THE END"]', "collapse_newlines": "on",
        "prefer_character_prompt": "on", "prefer_character_jailbreak": "on"})
    assert answer.status_code == 302
    settings = Session.objects.get(pk=text_session.pk).text_settings
    assert settings["user_prompt_bias"] == "Sure," and settings["custom_stopping_strings"] == '["THE END"]'
    assert (settings["token_padding"], settings["collapse_newlines"], settings["pin_examples"]) == (0, True, False)
    api = client.get(f"/api/sessions/{text_session.pk}/preview").json()
    assert api["request"]["prompt"].endswith("Sure,") and "THE END" in api["request"]["stop"]


def test_stopping_strings_that_sillytavern_would_ignore_are_refused_beside_the_field(text_session, users):
    answer = client_for(users["designer"]).post(f"/sessions/{text_session.pk}/text/settings/", {
        "completion": "text", "max_context": "4096", "amount_gen": "200", "custom_stopping_strings": "[oops"})
    assert answer.status_code == 400
    html = answer.content.decode()
    beside = html[html.index('for="id_custom_stopping_strings"'):html.index('id="id_custom_stopping_strings"')]
    assert "Write a JSON array of strings" in beside
    assert Session.objects.get(pk=text_session.pk).text_settings == text_session.text_settings


def test_the_new_settings_read_in_chinese_on_a_chinese_page(text_session, users):
    html = client_for(users["designer"]).get(f"/sessions/{text_session.pk}/text/",
                                              HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    for words in ("自定义停止字符串", "字符串组成的 JSON 数组", "优先使用角色卡的系统提示词", "合并连续的空行",
                  "SillyTavern 在回复长度之外额外留出的 token"):
        assert words in html
    refused = client_for(users["designer"]).post(f"/sessions/{text_session.pk}/text/settings/", {
        "completion": "text", "max_context": "4096", "amount_gen": "200", "custom_stopping_strings": "{}"},
        HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "请写成字符串组成的 JSON 数组" in refused.content.decode()


def test_the_text_page_lists_the_diagnostics_of_the_prompt(text_session, users):
    """Stop strings SillyTavern drops without a word are set through the API; the page says so."""
    from preview_app import services as session_services

    session_services.session_text_update(session=text_session, text_settings={
        **(text_session.text_settings or {}), "custom_stopping_strings": "[oops"})
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert 'data-text-diagnostics' in html and 'data-code="TEXT_STOP_STRINGS_DROPPED"' in html
    assert "the whole value: it is not valid JSON" in html


def test_a_text_page_without_diagnostics_has_no_diagnostics_card(text_session, users):
    html = client_for(users["qa"]).get(f"/sessions/{text_session.pk}/text/").content.decode()
    assert "data-text-diagnostics" not in html
