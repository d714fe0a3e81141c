"""The admin's import and Users pages in a real Chromium (web.md screen 6, Users and permissions): the admin imports a
file with one pick after the dry run (kind detected, credentials listed as removed) and manages users without /admin/,
in English and Chinese. With STUDIO_SHOTS=<folder> the pages are saved at 1,400 and 800 px."""

import json

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from strategies_app.models import Preset
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PRESET = {"prompts": [{"identifier": "main", "name": "Main", "content": "Be kind."}], "temperature": 0.7,
          "custom_include_headers": "Authorization: Bearer sk-live-123", "proxy_password": "hunter2"}


def switch_language(page, code):
    page.select_option("#lang-select", code)
    page.locator("form.lang button[type=submit]").click()
    page.wait_for_load_state()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_admin_imports_with_one_pick_and_manages_users(live_server, page, login_as, tmp_path, language):
    login_as("admin")
    if language != "en":
        switch_language(page, language)
    shoot(page, f"home-admin-{language}")
    upload = tmp_path / "leaky.json"
    upload.write_text(json.dumps(PRESET))
    page.goto(f"{live_server.url}/resources/import/")
    page.set_input_files("#id_file", str(upload))
    page.locator("form.import-form button[type=submit]").click()
    expect(page.locator("[data-detected-kind=preset]")).to_be_visible()
    expect(page.locator("[data-removed-secrets]")).to_contain_text("custom_include_headers")
    assert Preset.objects.count() == 0
    shoot(page, f"import-dry-run-{language}")
    page.locator("[data-import-it] button[type=submit]").click()  # no second file pick
    expect(page.locator("[data-dry-run=false]")).to_be_visible()
    assert "Authorization" not in json.dumps(Preset.objects.get().options)

    page.locator(".mainnav a[href='/users/']").click()
    page.fill("#id_username", "nia")
    page.fill("#id_password", "a long pass phrase 42")
    page.select_option("#id_role", "qa")
    page.locator("[data-user-add] button[type=submit]").click()
    row = page.locator("tr[data-user=nia]")
    expect(row).to_have_attribute("data-role", "qa")
    row.locator("select[name=role]").select_option("designer")
    row.locator("form[action$='/role/'] button").click()
    expect(page.locator("tr[data-user=nia]")).to_have_attribute("data-role", "designer")
    page.locator("tr[data-user=nia] form[action$='/deactivate/'] button").click()
    expect(page.locator("tr[data-user=nia]")).to_have_attribute("data-active", "false")
    assert not get_user_model().objects.get(username="nia").is_active
    shoot(page, f"users-{language}")
    me = page.locator("tr[data-user=admin-browser]")
    me.locator("select[name=role]").select_option("qa")
    me.locator("form[action$='/role/'] button").click()
    expect(page.locator("[role=alert]")).to_contain_text(
        "This is the last active admin" if language == "en" else "这是最后一个启用中的管理员")
    shoot(page, f"users-refused-{language}")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_refused_import_names_the_field_in_the_pages_language(live_server, page, login_as, tmp_path, language):
    login_as("admin")
    if language != "en":
        switch_language(page, language)
    upload = tmp_path / "bad.json"
    upload.write_text(json.dumps({"prompts": [{"identifier": "main", "injection_depth": "deep"}]}))
    page.goto(f"{live_server.url}/resources/import/")
    page.select_option("#id_kind", "preset")
    page.set_input_files("#id_file", str(upload))
    page.locator("form.import-form button[type=submit]").click()
    refusal = page.locator("[role=alert][data-code=IMPORT_INVALID]")
    expect(refusal).to_contain_text("prompts[0].injection_depth")
    expect(refusal).to_contain_text("expected an integer, got string 'deep'" if language == "en"
                                    else "应为整数，实际为字符串 'deep'")
    assert Preset.objects.count() == 0
    shoot(page, "import-refused", language)
