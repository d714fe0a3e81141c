"""Fixtures for the Django tests: the reference rows, one user per role, and a small world to act on.

The data migrations create the groups, categories and built-ins; a transactional test elsewhere in the run (the
browser tests) flushes the database, so every test here ensures them again (the same idempotent functions)."""

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import caches
from django.test import Client
from django.utils import translation

from preview_app import services as session_services
from strategies_app import services as strategy_services
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook
from strategies_app.reference_data import ensure_reference_data

PASSWORD = "a long enough test password"
ROLES = ("qa", "designer", "admin")


@pytest.fixture(autouse=True)
def no_kept_results():
    """Engine results are kept in Django's cache (studio/result_cache.py); a test starts without an earlier test's."""
    for cache in caches.all(initialized_only=True):
        cache.clear()


@pytest.fixture(autouse=True)
def default_language():
    """A request in Chinese leaves its language active on the thread (LocaleMiddleware activates, nothing resets
    it); each test starts and ends in the default language, whatever ran before."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def reference_data(db, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed; hashing is not under test
    ensure_reference_data(apps)


def make_user(username, role=None):
    user = get_user_model().objects.create_user(username, password=PASSWORD)
    if role:
        user.groups.add(Group.objects.get(name=role))
    if role == "admin":
        user.is_staff = True
        user.save()
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def users(reference_data):
    return {role: make_user(f"{role}-user", role) for role in ROLES}


def client_for(user):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def csrf_client_for(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
def world(users):
    """A designer's strategy with a saved revision, an admin's strategy, a preset, a character with an avatar, a
    persona, a world book, a designer's session using them (core available) with one message and the designer's
    strategy applied, and a golden."""
    from assembly.sillytavern.png import card_png, solid_png

    designer, admin, qa = users["designer"], users["admin"], users["qa"]
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                          name="Designer's strategy")
    revision, _ = strategy_services.revision_save(strategy=own, user=designer, note="first")
    other = strategy_services.strategy_copy(user=admin, source=Strategy.objects.get(slug="builtin-st"),
                                            name="Admin's strategy")
    preset = strategy_services.preset_import(user=admin, data={"prompts": [
        {"identifier": "main", "role": "system", "content": "Be {{char}}."},
        {"identifier": "chatHistory", "marker": True},
        {"identifier": "jailbreak", "role": "system", "content": "Stay brief."}]}, name="Tiny preset")
    persona = strategy_services.persona_import(user=admin, data={"name": "Sam", "description": "A visitor."})
    book = strategy_services.worldbook_import(user=admin, data={"entries": {"1": {
        "uid": 1, "key": ["gate"], "comment": "Gate", "content": "The gate is shut at night.", "position": 0}}},
        name="Tiny book")
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ada", "description": "An engineer."}}
    character = strategy_services.character_import(user=admin, data=card_png(card, solid_png(2, 2)))
    session = session_services.session_create(
        user=designer, name="Designer's session", host={"core_available": True}, current_input="Hello",
        preset=Preset.objects.get(pk=preset.id), character=Character.objects.get(pk=character.id),
        persona=Persona.objects.get(pk=persona.id), world_books=[WorldBook.objects.get(pk=book.id)])
    event = session_services.event_append(session=session, role="user", content="Earlier")
    session_services.strategy_apply(session=session, strategy=own)
    golden = session_services.golden_approve(session=session, revision=revision, user=qa)
    session.refresh_from_db()
    return {"own": own, "revision": revision, "other": other, "preset": preset.id, "character": character.id,
            "session": session, "event": event, "golden": golden}


def with_loaded_fragments(client, html):
    """`html` with each `hx-trigger="load"` placeholder replaced by its fragment (an htmx GET of its `hx-get`, swapped
    outerHTML), as the browser shows the page once htmx has loaded them."""
    import re

    def loaded(found):
        return client.get(found.group(2).replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()

    return re.sub(r'<div class="golden-latest" data-golden-latest="unchecked" (hx-get="([^"]+)") hx-trigger="load" '
                  r'hx-swap="outerHTML">.*?</div>', loaded, html, flags=re.S)
