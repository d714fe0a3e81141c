"""The Django admin: a page for every model (admins only), drag ordering of prompt entries, built-ins protected."""

import pytest
from django.contrib import admin
from django.urls import reverse

from preview_app.models import GoldenSnapshot, Session, SessionEvent
from strategies_app.models import (
    Character,
    Persona,
    Preset,
    PromptEntry,
    ResourceCategory,
    Strategy,
    StrategyRevision,
    WorldBook,
    WorldBookEntry,
)
from tests.web.conftest import client_for

REGISTERED = [Strategy, StrategyRevision, ResourceCategory, Preset, Character, Persona, WorldBook, Session,
              GoldenSnapshot]
INLINED = {PromptEntry: Preset, WorldBookEntry: WorldBook, SessionEvent: Session}


def test_every_model_is_in_the_admin():
    for model in REGISTERED:
        assert admin.site.is_registered(model), model
    for model, parent in INLINED.items():
        assert any(inline.model is model for inline in admin.site._registry[parent].inlines), model


@pytest.mark.parametrize("model", REGISTERED)
def test_admin_list_and_change_pages_render(world, users, model):
    client = client_for(users["admin"])
    opts = model._meta
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")).status_code == 200
    row = model.objects.first()
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])).status_code == 200


def test_prompt_entries_are_draggable_rows_and_the_order_saves(world, users):
    client = client_for(users["admin"])
    preset = Preset.objects.get(pk=world["preset"])
    url = reverse("admin:strategies_app_preset_change", args=[preset.pk])
    page = client.get(url)
    assert b'data-drag-order="position"' in page.content and b"strategies_app/drag_order.js" in page.content
    entries = list(preset.entries.order_by("position"))
    assert len(entries) >= 2
    # What the script submits after a drag: the renumbered positions (the last row moved to the top).
    form = {"name": preset.name, "options": "{}", "has_prompt_order": "on",
            "entries-TOTAL_FORMS": str(len(entries)), "entries-INITIAL_FORMS": str(len(entries)),
            "entries-MIN_NUM_FORMS": "0", "entries-MAX_NUM_FORMS": "1000"}
    for index, entry in enumerate(entries):
        new_position = 0 if index == len(entries) - 1 else index + 1
        form.update({f"entries-{index}-id": str(entry.pk), f"entries-{index}-preset": str(preset.pk),
                     f"entries-{index}-position": str(new_position), f"entries-{index}-identifier": entry.identifier,
                     f"entries-{index}-name": entry.name, f"entries-{index}-role": entry.role,
                     f"entries-{index}-content": entry.content, f"entries-{index}-in_order": "on",
                     f"entries-{index}-enabled": "on" if entry.enabled else ""})
        if entry.marker:
            form[f"entries-{index}-marker"] = "on"
    response = client.post(url, form)
    assert response.status_code == 302, response.content[:2000]
    assert [e.identifier for e in preset.entries.order_by("position")] == (
        [entries[-1].identifier] + [e.identifier for e in entries[:-1]])


def test_builtins_cannot_be_deleted_or_edited_in_the_admin(users):
    client = client_for(users["admin"])
    builtin = Strategy.objects.get(slug="builtin-st")
    assert client.post(reverse("admin:strategies_app_strategy_delete", args=[builtin.pk]),
                       {"post": "yes"}).status_code == 403
    assert Strategy.objects.filter(slug="builtin-st").exists()
    strategy_admin = admin.site._registry[Strategy]
    assert "draft" in strategy_admin.readonly_fields and "visible" not in strategy_admin.readonly_fields


def test_non_admins_have_no_admin(world, users):
    for role in ("qa", "designer"):
        response = client_for(users[role]).get(reverse("admin:strategies_app_preset_changelist"))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
