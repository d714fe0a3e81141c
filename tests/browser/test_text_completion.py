"""Text completion in a real Chromium: the admin imports SillyTavern's master export and a single instruct template
through the import page; the designer switches a session to text completion with the imported template, reads the
prompt and a span's source; QA compares two instruct templates on the same session."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from strategies_app.models import TextTemplate
from tests.browser.screenshots import shoot
from tests.web.text_sessions import make_text_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DATA = Path(__file__).resolve().parents[1] / "web" / "text_data"


def _import(page, live_server, name):
    page.goto(f"{live_server.url}/resources/import/")
    page.set_input_files("#id_file", str(DATA / name))
    page.locator("form.import-form button[type=submit]").click()
    expect(page.locator("[data-detected-kind=template]")).to_be_visible()
    shoot(page, f"text-import-dry-run-{name.split('.')[0]}")
    page.locator("[data-import-it] button[type=submit]").click()
    expect(page.locator("[data-dry-run=false]")).to_be_visible()


def test_import_templates_preview_a_text_session_and_read_a_span_source(live_server, page, login_as, role_users):
    login_as("admin")
    _import(page, live_server, "master_export.json")
    _import(page, live_server, "alpaca_instruct.json")
    stored = {(t.kind, t.name) for t in TextTemplate.objects.filter(builtin=False)}
    assert stored == {("instruct", "Tavern ChatML"), ("context", "Tavern ChatML"), ("sysprompt", "Tavern roleplay"),
                      ("reasoning", "DeepSeek"), ("instruct", "House Alpaca")}
    page.goto(f"{live_server.url}/resources/")
    expect(page.locator("section[data-kind=template] tbody tr")).to_have_count(TextTemplate.objects.count())

    session = make_text_session(role_users["designer"], role_users["admin"])
    page.get_by_role("button", name="Log out").click()
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    card = page.locator("[data-text-templates]")  # the templates build the prompt; no strategy card to mislead
    expect(card.locator("[data-text-template=instruct]")).to_have_text("ChatML")
    expect(page.locator("#apply")).to_have_count(0)
    expect(card.locator("[data-text-preview-link]")).to_have_attribute("href", f"/sessions/{session.pk}/text/")
    shoot(page, "text-session-page")
    page.locator("[data-text-link]").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{session.pk}/text/$"))
    page.get_by_label("Instruct template").select_option(label="Tavern ChatML")
    page.get_by_label("Context template").select_option(label="Tavern ChatML")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("[data-template-kind=instruct]")).to_have_text("Tavern ChatML")

    prompt = page.locator("pre.text-prompt")
    expect(prompt).to_contain_text("<|im_start|>user\nShow me the cards.<|im_end|>")
    typed = page.locator(".tspan", has_text="Show me the cards.")
    expect(typed).to_have_attribute("title", re.compile(r"^the typed message \(input\) · \d+ tokens$"))
    expect(typed.locator("[data-sequence=input_sequence]")).to_have_text("<|im_start|>user")
    index = typed.get_attribute("data-span-index")
    expect(page.locator(f"[data-span-row='{index}']")).to_contain_text("the typed message (input)")
    expect(page.locator("[data-stop-strings]")).to_contain_text("\\n<|im_start|>user")
    expect(page.locator("section.window")).to_have_attribute("data-context-window", "4096")
    shoot(page, "text-preview")

    page.locator(f"[data-span-row='{index}'] a").click()  # the side list leads to the span
    expect(page).to_have_url(re.compile(rf"#span-{index}$"))


def test_qa_compares_two_instruct_templates_on_one_session(live_server, page, login_as, role_users):
    session = make_text_session(role_users["designer"], role_users["admin"])
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{session.pk}/text/")
    expect(page.locator("form[action$='/text/settings/']")).to_have_count(0)  # read-only for QA
    page.get_by_role("link", name="Compare two templates").click()
    page.get_by_label("A", exact=True).select_option(label="ChatML")
    page.get_by_label("B", exact=True).select_option(label="Llama 3")
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("[data-side=a] pre.text-prompt")).to_contain_text("<|im_start|>assistant")
    expect(page.locator("[data-side=b] pre.text-prompt")).to_contain_text("<|start_header_id|>assistant")
    expect(page.locator("[data-line-diff] [data-op=removed]").first).to_be_visible()
    expect(page.locator("[data-line-diff] [data-op=added]").first).to_be_visible()
    shoot(page, "text-compare")


def test_the_designer_edits_a_copied_template_and_watches_the_prompt_change(live_server, page, login_as,
                                                                             role_users):
    session = make_text_session(role_users["designer"], role_users["admin"])
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{session.pk}/text/")
    page.locator("[data-edit-template=instruct]").click()
    expect(page.locator("[data-read-only=true]")).to_be_visible()  # the built-in ChatML
    page.get_by_role("button", name="Copy to edit").click()
    expect(page.locator("h1")).to_contain_text("ChatML (copy)")
    page.wait_for_load_state("load")
    page.wait_for_function("() => window.htmx !== undefined")  # htmx listens before the edit is typed
    page.get_by_label("input_sequence", exact=True).fill("<|im_start|>human")  # htmx previews the effect while typing
    effect = page.locator("p.effect")
    expect(effect).to_have_attribute("data-effect-changed", "true")
    expect(effect).to_contain_text("Editing input_sequence: the prompt changes: 3 lines out, 3 lines in")
    expect(page.locator("#template-effect pre.text-prompt")).to_contain_text("<|im_start|>human\nShow me the cards.")
    shoot(page, "text-template-editor")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("[data-saved]")).to_be_visible()
    page.goto(f"{live_server.url}/sessions/{session.pk}/text/")
    expect(page.locator("pre.text-prompt")).to_contain_text("<|im_start|>user")  # the session keeps its own ChatML


def test_the_text_page_reads_in_chinese(live_server, page, login_as, role_users):
    session = make_text_session(role_users["designer"], role_users["admin"])
    login_as("qa")
    page.goto(f"{live_server.url}/sessions/{session.pk}/text/")
    page.select_option("#lang-select", "zh-hans")
    page.locator("form.lang button[type=submit]").click()
    page.wait_for_load_state()
    expect(page.locator("#stop-title")).to_contain_text("停止字符串")
    expect(page.locator("[data-span-row='0']")).to_contain_text("故事字符串（上下文模板）")
    shoot(page, "text-preview-zh")
