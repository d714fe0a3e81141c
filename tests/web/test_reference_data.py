"""The rows every installation has (data migrations): the groups of web.md's permission table, the resource
categories of the position catalogue with both names, and the built-in strategies."""

from django.contrib.auth.models import Group

from assembly.catalogue import POSITION_CATALOGUE
from strategies_app.models import ResourceCategory


def role_permissions(role):
    return {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name=role).permissions.all()}


def test_roles_have_the_permissions_of_the_table():
    assert role_permissions("designer") == {"strategies_app.edit_strategy", "preview_app.edit_session"}
    assert role_permissions("qa") == {"preview_app.approve_golden"}
    admin = role_permissions("admin")
    assert {"strategies_app.manage_resources", "strategies_app.edit_any_strategy", "preview_app.edit_any_session",
            "preview_app.approve_golden", "auth.change_user", "strategies_app.delete_preset"} <= admin


def test_categories_follow_the_catalogue_with_both_names():
    rows = list(ResourceCategory.objects.order_by("sort_order"))
    assert [(r.key, r.name_en, r.name_zh) for r in rows] == [
        (c["id"], c["name_en"], c["name_zh"]) for c in POSITION_CATALOGUE]
    world_before = ResourceCategory.objects.get(key="worldbook#before")
    assert (world_before.module, world_before.position) == ("worldbook", "before")
    assert world_before.help_zh and world_before.help_en


def test_the_greeting_row_says_where_the_greeting_is_sent(reference_data):
    greeting = ResourceCategory.objects.get(key="character#greeting")
    assert "never sent from this row" in greeting.help_en and "从不从这一行发送" in greeting.help_zh
