"""Every studio page in Chinese in a real Chromium, at 1,400 and 800 px, with no header (table
headers, headings, the top bar) broken one character a line. With STUDIO_SHOTS=<folder> each page is saved at both
widths."""

import json
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from preview_app.models import Session
from strategies_app.models import Strategy
from tests.browser.screenshots import shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# For each header: its text's length in characters and the number of lines it is laid out on.
HEADER_LINES = """() => [...document.querySelectorAll('th, h1, h2, h3, .topbar a, .mainnav a')]
  .filter(el => el.offsetParent !== null)
  .map(el => {
    // the header's visible text (not what `.visually-hidden` keeps for screen readers), line by line
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const tops = new Set(); let text = "";
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('.visually-hidden') || !node.textContent.trim()) continue;
      text += node.textContent.trim();
      const range = document.createRange(); range.selectNodeContents(node);
      for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
    }
    return {text, chars: [...text].length, lines: tops.size};
  })
  .filter(h => h.chars > 1)"""


def _pages():
    pages = [("home", "/"), ("sessions", "/sessions/"), ("session-new", "/sessions/new/"),
             ("strategies", "/strategies/"), ("goldens", "/goldens/"), ("resources", "/resources/"),
             ("import", "/resources/import/"), ("users", "/users/")]
    for number, session in enumerate(Session.objects.order_by("pk"), start=1):
        pages += [(f"session{number}", f"/sessions/{session.pk}/"),
                  (f"preview{number}", f"/sessions/{session.pk}/preview/"),
                  (f"preview{number}-budget-over",
                   f"/sessions/{session.pk}/preview/?context_window=200&reserve_output=50"),
                  (f"compare{number}", f"/sessions/{session.pk}/compare/")]
    demo = Strategy.objects.exclude(builtin=True).order_by("pk").first()
    pages.append(("editor", f"/strategies/{demo.slug}/edit/"))
    pages.append(("editor-builtin-st", "/strategies/builtin-st/edit/"))
    return pages


def _per_character(page) -> list[dict]:
    return [h for h in page.evaluate(HEADER_LINES) if h["lines"] > 1 and h["lines"] >= h["chars"]]


def test_every_page_in_chinese_keeps_its_headers_whole(live_server, page, login_as, tmp_path):
    call_command("seed_demo", verbosity=0)
    login_as("admin")
    page.select_option("#lang-select", "zh-hans")
    page.locator("form.lang button[type=submit]").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    broken = {}
    for name, path in _pages():
        page.goto(f"{live_server.url}{path}")
        assert page.locator("html").get_attribute("lang") == "zh-hans"
        for width in (1400, 800):
            page.set_viewport_size({"width": width, "height": 900})
            found = _per_character(page)
            if found:
                broken[f"{name}@{width}"] = found
        shoot(page, f"zh-{name}")
    assert not broken, json.dumps(broken, ensure_ascii=False)


def test_the_import_dry_run_in_chinese_offers_one_kind_and_imports_as_the_chosen_one(live_server, page, login_as,
                                                                                     tmp_path):
    login_as("admin")
    page.select_option("#lang-select", "zh-hans")
    page.locator("form.lang button[type=submit]").click()
    card = {"spec": "chara_card_v2", "data": {"name": "Ivo", "first_mes": "Hi.", "character_book": {
        "entries": [{"id": 1, "keys": ["x"], "content": "y", "enabled": True}]}}}
    upload = tmp_path / "ivo.json"
    upload.write_text(json.dumps(card))
    page.goto(f"{live_server.url}/resources/import/")
    page.set_input_files("#id_file", str(upload))
    page.locator("form.import-form button[type=submit]").click()
    expect(page.locator("[data-dry-run=true]")).to_be_visible()
    expect(page.locator("select[name=kind]")).to_have_count(1)
    expect(page.locator("select[name=kind]")).to_have_value("character")
    shoot(page, "zh-import-dry-run")
    page.locator("select[name=kind]").select_option("worldbook")
    page.locator("[data-import-it] button[type=submit]").click()
    expect(page.locator("[data-report-kind=worldbook][data-dry-run=false]")).to_be_visible()
    assert re.search("世界书", page.locator("[data-report-kind]").inner_text())


def test_an_admin_reactivates_a_user(live_server, page, login_as, role_users):
    designer = role_users["designer"]
    designer.is_active = False
    designer.save()
    login_as("admin")
    page.goto(f"{live_server.url}/users/")
    row = page.locator(f"tr[data-user={designer.username}]")
    expect(row).to_have_attribute("data-active", "false")
    row.locator("[data-reactivate]").click()
    expect(page.locator(f"tr[data-user={designer.username}]")).to_have_attribute("data-active", "true")
    shoot(page, "users-reactivated")
