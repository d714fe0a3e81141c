"""The Users page (web.md, Users and permissions): admins list users with their roles, add a user with a role, change a role,
deactivate and reactivate, without `/admin/`. Everyone else gets 403."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from assembly.errors import CodedError
from studio import user_services
from studio.errors import ServiceError, not_found
from studio.paging import list_page, search_text
from studio.wording import meaning


def _require_admin(user) -> None:
    if not user_services.is_studio_admin(user):
        raise ServiceError("FORBIDDEN", _("%(user)s may not manage users: only admins do (an admin gives roles on "
                                          "this page).") % {"user": user.get_username()}, status=403,
                           detail={"role": "admin"})


def _page(request, *, error=None, status=200, form=None):
    search = search_text(request.GET)
    users = get_user_model().objects.order_by("username", "pk").prefetch_related("groups")
    page = list_page(request, users.filter(username__icontains=search) if search else users)
    rows = [{"user": u, "role": user_services.user_role(u), "me": u.pk == request.user.pk} for u in page.rows]
    return render(request, "users/list.html", {"rows": rows, "page": page, "search": search,
                                               "roles": user_services.ROLES, "error": error,
                                               "form": form or {"role": "designer"}}, status=status)


def _refused(request, error: CodedError):
    if isinstance(error, CodedError) and error.status == 403:
        return render(request, "users/list.html", {"denied": error.to_json()}, status=403)
    # the add form keeps what was typed into it; a refused role change or deactivation leaves it as it was
    return _page(request, error={**error.to_json(), "meaning": _refusal_words(error)}, status=error.status,
                 form=request.POST if "username" in request.POST else None)


def _refusal_words(error: CodedError) -> str:
    """What a refused change of users means here, in the page's language: the situation a clash names, else the
    code's meaning."""
    reason = error.detail.get("reason")
    if reason == "username_taken":
        return _("The user name “%(username)s” is taken: pick another one.") % {"username": error.detail["username"]}
    words = {
        "last_admin_demoted": _("This is the last active admin: make another user admin before giving this one "
                                "another role."),
        "self_deactivated": _("You cannot deactivate yourself: another admin can."),
        "last_admin_deactivated": _("This is the last active admin: make another user admin before deactivating "
                                    "this one."),
        "already_active": _("This user is already active."),
    }
    return words.get(reason) or meaning(error.code)


def role_word(role: str) -> str:
    return {"admin": _("admin"), "designer": _("designer"), "qa": _("QA")}.get(role, role)


@require_GET
def user_list(request):
    try:
        _require_admin(request.user)
    except CodedError as error:
        return _refused(request, error)
    return _page(request)


@require_POST
def user_add(request):
    try:
        _require_admin(request.user)
        user = user_services.user_create(username=request.POST.get("username", ""),
                                         password=request.POST.get("password", ""), role=request.POST.get("role", ""))
    except CodedError as error:
        return _refused(request, error)
    messages.success(request, _("Added %(user)s as %(role)s.") % {"user": user.get_username(),
                                                                  "role": role_word(request.POST.get("role", ""))})
    return redirect("users")


def _target(pk: int):
    user = get_user_model().objects.filter(pk=pk).first()
    if user is None:
        raise not_found("user", pk)
    return user


@require_POST
def user_role(request, pk):
    try:
        _require_admin(request.user)
        user = _target(pk)
        user_services.user_role_update(actor=request.user, user=user, role=request.POST.get("role", ""))
    except CodedError as error:
        return _refused(request, error)
    messages.success(request, _("%(user)s is now %(role)s.") % {"user": user.get_username(),
                                                                "role": role_word(request.POST.get("role", ""))})
    return redirect("users")


@require_POST
def user_deactivate(request, pk):
    try:
        _require_admin(request.user)
        user = _target(pk)
        user_services.user_deactivate(actor=request.user, user=user)
    except CodedError as error:
        return _refused(request, error)
    messages.success(request, _("Deactivated %(user)s: they can no longer log in.") % {"user": user.get_username()})
    return redirect("users")


@require_POST
def user_reactivate(request, pk):
    try:
        _require_admin(request.user)
        user = _target(pk)
        user_services.user_reactivate(actor=request.user, user=user)
    except CodedError as error:
        return _refused(request, error)
    messages.success(request, _("Reactivated %(user)s: they can log in again.") % {"user": user.get_username()})
    return redirect("users")
