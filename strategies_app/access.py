"""Who may do what (web.md "Users and permissions"), checked on every object lookup so an id in a URL never
reaches an object its user may not touch.

Reads are open to every logged-in user. Writes need the role permission (`edit_strategy`, `edit_session`,
`manage_resources`, `approve_golden`); a designer edits their own strategies and sessions, an admin every one
(`edit_any_*`). Built-ins are never editable. Each model has one policy here (or in `preview_app.access`): the
yes/no answer pages use to show controls, and the raising check every write goes through, both from one rule.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from strategies_app.models import (
    Character,
    Persona,
    Preset,
    RegexScript,
    Strategy,
    StrategyRevision,
    TextTemplate,
    WorldBook,
)
from studio.errors import ServiceError, forbidden, not_found
from studio.input_boundary import is_row_id

EDIT_STRATEGY = "strategies_app.edit_strategy"
EDIT_ANY_STRATEGY = "strategies_app.edit_any_strategy"
MANAGE_RESOURCES = "strategies_app.manage_resources"


# What each refused action is, in words (the permission's codename is no word for a user).
ACTION_WORDS = {
    "create sessions": gettext_lazy("create sessions"), "edit sessions": gettext_lazy("edit sessions"),
    "apply strategies to sessions": gettext_lazy("apply strategies to sessions"),
    "approve golden snapshots": gettext_lazy("approve golden snapshots"),
    "delete golden snapshots": gettext_lazy("delete golden snapshots"),
    "import resources": gettext_lazy("import resources"), "manage regex scripts": gettext_lazy("manage regex scripts"),
    "edit strategies": gettext_lazy("edit strategies"), "create strategies": gettext_lazy("create strategies"),
    "import strategies": gettext_lazy("import strategies"), "copy strategies": gettext_lazy("copy strategies"),
    "edit presets": gettext_lazy("edit presets"), "manage users": gettext_lazy("manage users"),
    "edit text-completion templates": gettext_lazy("edit text-completion templates"),
    "copy text-completion templates": gettext_lazy("copy text-completion templates"),
}


def role_refusal(user, permission: str, action: str) -> ServiceError:
    """The refusal for a role that lacks `permission`: the action in the page's words and the way out."""
    message = _("%(user)s may not %(action)s: their role does not allow it (an admin gives roles on the "
                "Users page).") % {"user": user.get_username(), "action": ACTION_WORDS.get(action, action)}
    # The words are for people; an API client reads the permission it lacks from the detail.
    return ServiceError("FORBIDDEN", message, status=403, detail={"permission": permission})


def require(user, permission: str, action: str) -> None:
    if not user.has_perm(permission):
        raise role_refusal(user, permission, action)


def _shown_name(strategy: Strategy) -> str:
    from strategies_app.presenters import strategy_name  # the presenters read the policy: imported when refusing

    return strategy_name(strategy.name)


def builtin_strategy_refusal(strategy: Strategy) -> ServiceError:
    return ServiceError("STRATEGY_READ_ONLY", _("strategy “%(name)s” is a built-in: copy it to edit") % {
        "name": _shown_name(strategy)}, status=409, detail={"id": strategy.slug})


def can_create_strategies(user) -> bool:
    """Create, copy or import strategies."""
    return user.has_perm(EDIT_STRATEGY)


def can_manage_resources(user) -> bool:
    return user.has_perm(MANAGE_RESOURCES)


def strategy_for_read(slug: str) -> Strategy:
    strategy = Strategy.objects.filter(slug=slug).first()
    if strategy is None:
        raise not_found("strategy", slug)
    return strategy


def _strategy_edit_refusal(user, strategy: Strategy) -> ServiceError | None:
    """The strategy policy: why `user` may not edit `strategy`, or None when they may."""
    if not user.has_perm(EDIT_STRATEGY):
        return role_refusal(user, EDIT_STRATEGY, "edit strategies")
    if strategy.builtin:
        return builtin_strategy_refusal(strategy)
    if strategy.owner_id != user.pk and not user.has_perm(EDIT_ANY_STRATEGY):
        return forbidden(_("strategy “%(name)s” belongs to another user: you can read it, or copy it to edit your "
                           "own") % {"name": _shown_name(strategy)})
    return None


def can_edit_strategy(user, strategy: Strategy) -> bool:
    return _strategy_edit_refusal(user, strategy) is None


def strategy_for_edit(user, slug: str) -> Strategy:
    require(user, EDIT_STRATEGY, "edit strategies")  # before the lookup: no 404 for who may not edit at all
    strategy = strategy_for_read(slug)
    refusal = _strategy_edit_refusal(user, strategy)
    if refusal is not None:
        raise refusal
    return strategy


def revision_for_read(strategy: Strategy, revision: str | None) -> StrategyRevision:
    """A revision of `strategy` by sha, or its latest when `revision` is None."""
    revisions = strategy.revisions.all()
    found = revisions.filter(revision=revision).first() if revision is not None else revisions.first()
    if found is None:
        if revision is None:
            raise ServiceError("REVISION_NOT_FOUND", f"strategy {strategy.slug!r} has no saved revision yet: "
                               "save one before applying it", status=409, detail={"id": strategy.slug})
        raise not_found(f"revision of {strategy.slug!r}", revision)
    return found


RESOURCE_MODELS = {"preset": Preset, "character": Character, "persona": Persona, "worldbook": WorldBook,
                   "regex": RegexScript, "template": TextTemplate}


def resource_for_read(kind: str, pk) -> Preset | Character | Persona | WorldBook | RegexScript:
    model = RESOURCE_MODELS.get(kind)
    if model is None:
        raise not_found("resource kind", kind)
    found = model.objects.filter(pk=pk).first() if is_row_id(pk) else None
    if found is None:
        raise not_found(kind, pk)
    return found


def _text_template_refusal(user, template: TextTemplate) -> ServiceError | None:
    """The template policy: built-ins are read-only (copy to edit); a designer edits the templates they own (their
    copies), an admin (manage_resources) every other one."""
    if not user.has_perm(EDIT_STRATEGY) and not user.has_perm(MANAGE_RESOURCES):
        return role_refusal(user, EDIT_STRATEGY, "edit text-completion templates")
    if template.builtin:
        return ServiceError("TEMPLATE_READ_ONLY", _("template “%(name)s” is a built-in: copy it to edit") % {
            "name": template.name}, status=409, detail={"id": template.pk})
    if template.owner_id != user.pk and not user.has_perm(MANAGE_RESOURCES):
        return forbidden(_("template “%(name)s” belongs to another user: you can read it, or copy it to edit your "
                           "own") % {"name": template.name})
    return None


def can_edit_text_template(user, template: TextTemplate) -> bool:
    return _text_template_refusal(user, template) is None


def can_copy_text_templates(user) -> bool:
    return user.has_perm(EDIT_STRATEGY) or user.has_perm(MANAGE_RESOURCES)


def text_template_for_edit(user, pk) -> TextTemplate:
    if not can_copy_text_templates(user):  # before the lookup: no 404 for who may not edit at all
        raise role_refusal(user, EDIT_STRATEGY, "edit text-completion templates")
    template = resource_for_read("template", pk)
    refusal = _text_template_refusal(user, template)
    if refusal is not None:
        raise refusal
    return template


def regex_script_for_manage(user, pk) -> RegexScript:
    """A global regex script its user may enable, disable or change (the manage_resources permission)."""
    require(user, MANAGE_RESOURCES, "manage regex scripts")  # before the lookup: no 404 for who may not manage
    return resource_for_read("regex", pk)
