"""Playwright on the system Chromium (quality.md): never a downloaded browser, never a silent skip."""

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.chromium import MISSING, chromium_path

# Playwright's sync API runs an event loop in the test thread; Django's ORM guard would refuse DB access there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": chromium_path() or pytest.exit(MISSING, 1),
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"],
    }


# A loaded machine answers slowly: wait up to a minute for a condition instead of Playwright's 5 s for
# `expect` and 30 s for actions; a passing test never waits longer than its condition takes.
LOADED_MACHINE_TIMEOUT_MS = 60_000
expect.set_options(timeout=LOADED_MACHINE_TIMEOUT_MS)


@pytest.fixture(autouse=True)
def patient_page(request):
    if "page" not in request.fixturenames:
        yield
        return
    page = request.getfixturevalue("page")
    page.set_default_timeout(LOADED_MACHINE_TIMEOUT_MS)
    page.set_default_navigation_timeout(LOADED_MACHINE_TIMEOUT_MS)
    yield
    # The panels a page loads after it (htmx `load` triggers: the preview's turn projection and models) finish
    # before the test database is flushed: the live server shares the test's connection, and a flush beside a
    # running request finds a table locked (and the next test's users still there).
    if not page.is_closed():
        expect(page.locator(".htmx-request")).to_have_count(0)


BROWSER_PASSWORD = "a long enough browser password"


@pytest.fixture
def role_users(transactional_db, settings):
    """One user per role, with the reference rows (groups, categories, built-ins) a flushed database lacks."""
    from django.apps import apps
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from strategies_app.reference_data import ensure_reference_data

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    ensure_reference_data(apps)
    users = {}
    for role in ("qa", "designer", "admin"):
        user = get_user_model().objects.create_user(f"{role}-browser", password=BROWSER_PASSWORD,
                                                    is_staff=role == "admin")
        user.groups.add(Group.objects.get(name=role))
        users[role] = user
    return users


@pytest.fixture
def login_as(live_server, page, role_users):
    """login_as("designer") logs the page in through the real login form and returns the user."""

    def login(role: str):
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(role_users[role].username)
        page.get_by_label("Password").fill(BROWSER_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/")
        return role_users[role]

    return login


ST_PRESET = Path(__file__).resolve().parents[2] / "../shared/fixtures/sillytavern/st_cc_preset_Default.json"


def sillytavern_studio(role_users, *, strategy_name: str) -> dict:
    """SillyTavern's default preset, the demo card, persona and book imported by the admin, the designer's copy of
    builtin-st named `strategy_name` and the designer's session "Harbour" whose host runs it (core available)."""
    from assembly.sillytavern.png import card_png, solid_png
    from preview_app import demo
    from preview_app import services as session_services
    from strategies_app import services
    from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook

    admin, designer = role_users["admin"], role_users["designer"]
    preset = services.preset_import(user=admin, data=json.loads(ST_PRESET.read_text()), name="Default")
    character = services.character_import(user=admin, data=card_png(demo.CARD, solid_png(4, 4, demo.AVATAR_RGB)))
    persona = services.persona_import(user=admin, data=demo.PERSONA)
    book = services.worldbook_import(user=admin, data=demo.WORLDBOOK, name=demo.WORLDBOOK_NAME)
    strategy = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                      name=strategy_name)
    session = session_services.session_create(
        user=designer, name="Harbour", current_input="Is a storm coming?", host={"core_available": True},
        preset=Preset.objects.get(pk=preset.id), character=Character.objects.get(pk=character.id),
        persona=Persona.objects.get(pk=persona.id), world_books=[WorldBook.objects.get(pk=book.id)])
    return {"strategy": strategy, "session": session, "preset": Preset.objects.get(pk=preset.id)}


def offer_the_card_again(page, base_url: str, folder: Path) -> None:
    """Import Seraphina's PNG card for good, then offer the same card as V3 JSON: the page stops at the import's
    report, where the stored twin is named."""
    page.goto(f"{base_url}/resources/import/")
    page.locator("input[type=file]").set_input_files(str(folder / "st_card_Seraphina.png"))
    page.locator("input[name=dry_run]").uncheck()
    page.locator(".import-form button[type=submit]").click()
    expect(page.locator("[data-report-kind=character][data-dry-run=false]")).to_be_visible()
    page.goto(f"{base_url}/resources/import/")
    page.locator("input[type=file]").set_input_files(str(folder / "st_card_Seraphina.v3.ccv3.json"))
    page.locator(".import-form button[type=submit]").click()
