"""The findings of "the studio as its users meet it" walked in Chromium, one test each where no other browser test
walks it yet: a SillyTavern chat export leaves the host's records out and imports back as the same chat (2); the
editor and the new-session form remember the user's choices across logins (4); SillyTavern's words on SillyTavern
work, dsh's linked to the glossary elsewhere (5); a copy's message names the built-in in the page's language (7);
saving and applying never claim "nothing changed", and a golden whose chat changed says so (8); a parity paste that
is not JSON is explained in words (9). With STUDIO_SHOTS=<folder> the pages are saved at 1,400 and 800 px."""

import json
import re

import pytest
from playwright.sync_api import expect

from preview_app import services
from preview_app.models import Session
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy
from tests.browser.conftest import BROWSER_PASSWORD, offer_the_card_again
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAMP = {"prompts": [{"identifier": "main", "name": "Main Prompt", "role": "system", "content": "You keep the lamp."},
                    {"identifier": "chatHistory", "name": "Chat History", "marker": True},
                    {"identifier": "jailbreak", "role": "system", "content": "Answer in one line."}]}
CJK = re.compile(r"[\u4e00-\u9fff]")
PRE_STEP_COPIES_ZH = "预步骤副本"


@pytest.fixture
def lamp(role_users):
    designer = role_users["designer"]
    return Preset.objects.get(pk=strategy_services.preset_import(user=designer, name="Lamp", data=LAMP).id)


def _chat(user, preset, name, slug, host=None) -> Session:
    """A session running `slug` after one real turn, asking again."""
    session = services.session_create(user=user, name=name, preset=preset, current_input="Is the lamp lit?",
                                      host=host or {"core_available": True})
    session = services.strategy_apply(session=session, strategy=Strategy.objects.get(slug=slug))
    services.turn_commit(session=session, reply="It is. Mind the stairs.")
    session.refresh_from_db()
    return services.session_update(session=session, current_input="Will it last the night?")


def _switch(page, code):
    page.locator("#lang-select").select_option(code)
    page.locator(".topbar form button[type=submit]").first.click()
    expect(page.locator("html")).to_have_attribute("lang", code)


def _relogin(page, live_server, username):
    page.get_by_role("button", name="Log out").click()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(BROWSER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def _history(session) -> list[tuple[str, str]]:
    return [(e.role, e.content) for e in session.events.order_by("seq")
            if (e.source or {}).get("kind") in (None, "user", "assistant", "model")]


# ---------------------------------------------------------------------------------------------- finding 2


def test_a_chat_export_leaves_the_hosts_records_out_and_imports_back_the_same_chat(
        live_server, page, login_as, role_users, lamp, tmp_path):
    designer = role_users["designer"]
    chat = _chat(designer, lamp, "Harbour", "builtin-native-slots")  # the standard backend keeps pre-step copies
    assert any((e.source or {}).get("kind") == "dsh-prompt-assembler" for e in chat.events.all())
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{chat.pk}/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export as SillyTavern chat").click()
    path = tmp_path / "chat.jsonl"
    download.value.save_as(path)
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    messages = lines[1:]
    assert not any("Answer in one line." in m.get("mes", "") for m in messages)  # the pre-step copy is the host's
    assert [(m["is_user"], m["mes"]) for m in messages] == [(True, "Is the lamp lit?"),
                                                            (False, "It is. Mind the stairs.")]

    fresh = services.session_create(user=designer, name="Harbour again", preset=lamp)
    page.goto(f"{live_server.url}/sessions/{fresh.pk}/")
    page.locator("#chat-import > summary").click()
    page.locator("#chat-file").set_input_files(str(path))
    page.locator("#chat-import button[type=submit]").click()
    expect(page.locator("ul.flash li")).to_contain_text("Imported 2 messages")
    assert _history(fresh) == [("user", "Is the lamp lit?"), ("assistant", "It is. Mind the stairs.")]
    shoot(page, "chat-imported-en")


# ---------------------------------------------------------------------------------------------- finding 4


def test_the_editor_and_the_new_session_form_remember_the_users_choices_across_logins(
        live_server, page, login_as, role_users, lamp):
    designer = role_users["designer"]
    standard = services.session_create(user=designer, name="A standard host", preset=lamp, current_input="Hi",
                                       host={"core_available": False})
    advanced = services.session_create(user=designer, name="B advanced host", preset=lamp, current_input="Hi",
                                       host={"core_available": True})
    mine = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                           name="Tavern")
    login_as("designer")
    page.goto(f"{live_server.url}/strategies/{mine.slug}/edit/")
    workspace = page.locator("#workspace")
    expect(workspace).to_have_attribute("data-session", str(advanced.pk))  # the host that runs it, not "A"
    assert page.locator("#preview-panel [data-code]").count() == 0  # the engine runs it: no refusal
    page.locator("#preview-session").select_option(str(standard.pk))
    expect(page).to_have_url(re.compile(rf"session={standard.pk}"))
    page.locator("#preview-session").select_option(str(advanced.pk))
    expect(page).to_have_url(re.compile(rf"session={advanced.pk}"))

    page.goto(f"{live_server.url}/sessions/new/")
    page.get_by_label("Name").first.fill("Plain")
    page.locator("input[name=strategy][value=builtin-native-roles]").check()
    page.locator("input[name=core_available]").uncheck()
    page.locator("form button[type=submit].primary").last.click()
    page.wait_for_url(re.compile(r"/sessions/\d+/$"))

    _relogin(page, live_server, designer.username)
    page.goto(f"{live_server.url}/strategies/{mine.slug}/edit/")
    expect(page.locator("#workspace")).to_have_attribute("data-session", str(advanced.pk))
    page.goto(f"{live_server.url}/sessions/new/")
    expect(page.locator("input[name=strategy][value=builtin-native-roles]")).to_be_checked()
    expect(page.locator("input[name=core_available]")).not_to_be_checked()
    shoot(page, "session-new-remembered-en")


# ---------------------------------------------------------------------------------------------- finding 5


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_sillytavern_work_speaks_sillytaverns_words_and_dsh_words_link_the_glossary(
        live_server, page, login_as, role_users, lamp, language):
    designer = role_users["designer"]
    tavern = _chat(designer, lamp, "Tavern chat", "builtin-st")
    native = _chat(designer, lamp, "Native chat", "builtin-native-slots", host={"core_available": False})
    mine = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                           name="Tavern")
    login_as("designer")
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/strategies/{mine.slug}/edit/?session={tavern.pk}")
    expect(page.locator("[data-sillytavern-work]")).to_be_visible()
    head = page.locator("#workspace").inner_text()
    for word in ("no backend given", "native-system", "lifetime", "All DSH runtime contexts"):
        assert word not in head, word
    expect(page.locator("#controls-panel [data-dsh-fold]")).not_to_have_attribute("open", "")
    shoot(page, f"editor-sillytavern-{language}")

    page.goto(f"{live_server.url}/sessions/{tavern.pk}/preview/")
    summaries = page.locator("details.parts summary").all_inner_texts()
    trust = "trust" if language == "en" else "信任"
    assert summaries and not any(trust in s for s in summaries), summaries
    expect(page.locator("[data-dsh-fold]")).to_be_visible()
    head = page.locator("[data-turn-projection] table.projection thead")
    expect(head).to_be_visible()  # the projection loaded (htmx)
    expect(head).not_to_contain_text("Pre-step copies" if language == "en" else PRE_STEP_COPIES_ZH)
    columns = page.locator("table.request > thead th").all_inner_texts()
    words = {"en": ("Source", "Position", "Delivery", "History entry"), "zh-hans": ("来源", "位置", "投递方式", "历史条目")}
    source, position, delivery, entry = words[language]
    assert source in columns and position in columns and delivery not in columns and entry not in columns, columns
    first = page.locator("tbody.msg").first
    expect(first).to_have_attribute("data-delivery", re.compile(r".+"))  # the row markup stays, unshown
    expect(first.locator("td.st-source")).to_contain_text("Main Prompt")
    expect(page.locator("p.summary")).not_to_contain_text("builtin-st")
    continue_ = page.locator("select[name=generation] option[value=continue]")
    expect(continue_).to_have_text("Continue — extend the last reply" if language == "en" else "继续 — 续写上一条回复")
    shoot(page, f"preview-sillytavern-{language}")

    page.goto(f"{live_server.url}/sessions/{native.pk}/preview/")
    link = page.locator('details.parts summary a.term[href="/glossary/#trust"]').first
    expect(link).to_have_attribute("title", re.compile(r".{20,}"))  # the glossary line on hover
    shoot(page, f"preview-standard-{language}")
    page.locator("details.parts summary").first.click()  # open it, then follow the word to its line
    link.click()
    expect(page).to_have_url(re.compile(r"/glossary/#trust$"))
    expect(page.locator("dt#trust")).to_be_visible()


def test_the_new_session_form_refolds_dshs_host_settings_when_the_strategy_changes(live_server, page, login_as):
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/new/")
    sections = page.locator("textarea[name=official_sections]")
    expect(page.locator("input[name=strategy][value=builtin-st]")).to_be_checked()
    expect(sections).to_be_hidden()  # folded: a SillyTavern strategy reads none of dsh's host settings
    page.locator("input[name=strategy][value=builtin-native-roles]").check()
    expect(page.locator("form [data-dsh-host-settings]")).to_have_count(0)
    expect(sections).to_be_visible()  # the standard backend is in play: its settings in view
    expect(page.locator("input[name=core_available]")).to_be_visible()
    page.locator("input[name=strategy][value=builtin-st]").check()
    expect(page.locator("form [data-dsh-host-settings]")).to_have_count(1)
    expect(sections).to_be_hidden()
    page.locator("form [data-dsh-host-settings] > summary").click()  # still opens by hand
    expect(sections).to_be_visible()


# ---------------------------------------------------------------------------------------------- finding 7


@pytest.mark.parametrize(("language", "name", "other"), [
    ("en", "Roles first (standard)", CJK), ("zh-hans", "身份优先（标准）", re.compile(r"Roles first"))])
def test_copying_a_built_in_names_it_in_the_pages_language_only(live_server, page, login_as, language, name,
                                                                 other):
    from assembly.catalogue import BUILTIN_NAMES

    assert name in BUILTIN_NAMES["builtin-native-roles"].values()
    login_as("designer")
    if language != "en":
        _switch(page, language)
    page.goto(f"{live_server.url}/strategies/builtin-native-roles/edit/")
    page.locator("form[action$='/copy/'] button[type=submit]").first.click()
    page.wait_for_url(re.compile(r"/strategies/builtin-native-roles-copy/edit/$"))
    flash = page.locator("ul.flash li").first
    expect(flash).to_contain_text(name)
    assert not other.search(flash.inner_text()), flash.inner_text()


# ---------------------------------------------------------------------------------------------- finding 8


def test_saving_and_applying_never_claim_nothing_changed_and_a_golden_names_the_chat(
        live_server, page, login_as, role_users, lamp):
    designer = role_users["designer"]
    chat = _chat(designer, lamp, "Harbour", "builtin-native-slots", host={"core_available": False})
    mine = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                           name="Mine")
    login_as("designer")
    page.goto(f"{live_server.url}/strategies/{mine.slug}/edit/?session={chat.pk}")
    page.get_by_label("Revision note").fill("first")
    page.get_by_role("button", name="Save revision").click()
    page.locator("#editor-status").get_by_text("Saved revision").wait_for()
    workspace = page.locator("#workspace").inner_text()
    assert "This setting decides nothing" not in workspace and "Nothing changed in the request" not in workspace
    apply_panel = page.locator("#apply-panel")
    apply_panel.get_by_label("Harbour").check()
    apply_panel.get_by_role("button", name="Apply").click()
    page.locator('#apply-panel [data-applied="true"]').wait_for()
    workspace = page.locator("#workspace").inner_text()
    assert "This setting decides nothing" not in workspace and "Nothing changed in the request" not in workspace

    chat.refresh_from_db()
    services.golden_approve(session=chat, revision=chat.applied_revision, user=role_users["qa"])
    services.turn_commit(session=Session.objects.get(pk=chat.pk), reply="Until dawn.")  # only the chat changes
    page.goto(f"{live_server.url}/goldens/")
    golden = page.locator("li.golden")
    expect(golden.locator("[data-golden-cause]")).to_have_attribute("data-golden-cause", "chat")
    expect(golden.locator("[data-golden-cause]")).to_contain_text("the strategy revision is the same")
    shoot(page, "goldens-chat-changed-en")


# ---------------------------------------------------------------------------------------------- finding 9


def test_a_parity_paste_that_is_not_json_is_explained_in_words(live_server, page, login_as, role_users, lamp):
    chat = _chat(role_users["designer"], lamp, "Tavern chat", "builtin-st")
    login_as("designer")
    page.goto(f"{live_server.url}/sessions/{chat.pk}/parity/")
    page.get_by_label("What SillyTavern sent").fill("this is not json")
    page.locator("form.parity-form button[type=submit]").first.click()
    refusal = page.locator('[data-code="INPUT_NOT_JSON"]').first
    expect(refusal).to_contain_text("not valid JSON")
    assert "No description" not in page.locator("main").inner_text()
    shoot(page, "parity-not-json-en")


# ---------------------------------------------------------------------------------------------- finding 10


def test_a_card_kept_twice_is_told_apart_in_its_exports_and_the_new_session_form(
        live_server, page, login_as, shared_fixtures):
    from strategies_app.models import Character

    login_as("admin")
    offer_the_card_again(page, live_server.url, shared_fixtures / "sillytavern")
    page.locator("[data-same-as] input[value=keep]").check()
    page.locator("[data-import-it] button[type=submit]").click()
    expect(page.locator("[data-report-kind=character][data-dry-run=false]")).to_be_visible()
    first, second = Character.objects.order_by("pk").values_list("pk", flat=True)

    page.goto(f"{live_server.url}/resources/")
    names = set()
    for pk in (first, second):
        with page.expect_download() as download:
            page.locator(f'a[href="/api/resources/character/{pk}/export"]').click()
        names.add(download.value.suggested_filename)
    assert names == {f"seraphina-character-{first}.json", f"seraphina-character-{second}.json"}
    page.goto(f"{live_server.url}/sessions/new/")
    options = page.locator("#id_character option").all_inner_texts()
    assert f"Seraphina (id {first})" in options and f"Seraphina (id {second})" in options, options
