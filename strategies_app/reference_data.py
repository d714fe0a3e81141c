"""The rows every installation has: the three roles (Django groups), the resource categories of the position
catalogue, the built-in strategies and the built-in text-completion templates.

Each function takes an app registry (`apps`), so the data migrations call them with historical models and the
services (and tests, after a flush) with the live ones. All of them are idempotent.
"""

from __future__ import annotations

from assembly.catalogue import POSITION_CATALOGUE, builtin_strategies
from assembly.strategy import strategy_revision

ADMIN, DESIGNER, QA = "admin", "designer", "qa"
ROLES = (ADMIN, DESIGNER, QA)

# web.md "Users and permissions". Admins get these plus every model permission of the studio and of auth (the
# Django admin); the role permissions themselves are the custom ones declared on Strategy and Session.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    ADMIN: ("strategies_app.edit_strategy", "strategies_app.edit_any_strategy", "strategies_app.manage_resources",
            "preview_app.edit_session", "preview_app.edit_any_session", "preview_app.approve_golden"),
    DESIGNER: ("strategies_app.edit_strategy", "preview_app.edit_session"),
    QA: ("preview_app.approve_golden",),
}
ADMIN_MODEL_APPS = ("strategies_app", "preview_app", "auth")


def ensure_permissions(apps) -> None:
    """Create the permission rows now: on a fresh database they normally appear only after all migrations ran."""
    from django.contrib.auth.management import create_permissions

    for label in ("strategies_app", "preview_app", "auth", "contenttypes"):
        config = apps.get_app_config(label)
        if getattr(config, "models_module", None) is None:
            config.models_module = True  # historical app configs have none; create_permissions needs one
        create_permissions(config, apps=apps, verbosity=0)


def ensure_roles(apps) -> None:
    ensure_permissions(apps)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for role, names in ROLE_PERMISSIONS.items():
        group, _ = group_model.objects.get_or_create(name=role)
        wanted = set()
        for name in names:
            app_label, codename = name.split(".")
            wanted.add(permission_model.objects.get(content_type__app_label=app_label, codename=codename))
        if role == ADMIN:
            wanted.update(permission_model.objects.filter(content_type__app_label__in=ADMIN_MODEL_APPS))
        group.permissions.add(*wanted)


def ensure_categories(apps) -> None:
    category_model = apps.get_model("strategies_app", "ResourceCategory")
    for index, category in enumerate(POSITION_CATALOGUE):
        category_model.objects.update_or_create(key=category["id"], defaults={
            "module": category["module"], "position": category["position"],
            "name_en": category["name_en"], "name_zh": category["name_zh"],
            "help_en": category["help_en"], "help_zh": category["help_zh"], "sort_order": index,
        })


def ensure_builtins(apps) -> None:
    """One read-only row per engine built-in, its draft equal to the engine's document and that document saved as a
    revision. When the engine's document changes, the row follows it and gains a revision (old ones stay)."""
    strategy_model = apps.get_model("strategies_app", "Strategy")
    revision_model = apps.get_model("strategies_app", "StrategyRevision")
    for builtin in builtin_strategies():
        slug = builtin.pop("id")
        strategy, created = strategy_model.objects.get_or_create(
            slug=slug, defaults={"name": builtin["name"], "builtin": True, "draft": builtin, "version": 1})
        if not created and strategy.draft != builtin:
            strategy.draft, strategy.name, strategy.builtin = builtin, builtin["name"], True
            strategy.version += 1
            strategy.save()
        revision_model.objects.get_or_create(strategy=strategy, revision=strategy_revision(builtin),
                                             defaults={"document": builtin, "note": "built-in"})


def ensure_text_templates(apps) -> None:
    """One read-only row per built-in text-completion template (`strategies_app.text_builtins`), following the
    studio's version of it when it changes."""
    from strategies_app.text_builtins import BUILTIN_TEMPLATES

    template_model = apps.get_model("strategies_app", "TextTemplate")
    for kind, fields in BUILTIN_TEMPLATES:
        template_model.objects.update_or_create(kind=kind, name=fields["name"], builtin=True,
                                                defaults={"fields": fields})


def ensure_reference_data(apps) -> None:
    ensure_roles(apps)
    ensure_categories(apps)
    ensure_builtins(apps)
    ensure_text_templates(apps)
