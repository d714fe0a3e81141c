"""The way into the Django admin: a logged-in user without admin rights gets a page saying so (403) and where to
go instead, rather than the admin's login form (which reads like a broken page to someone already logged in);
everyone else goes on to the admin's own login."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.shortcuts import render


@login_not_required  # the admin's own login page: reachable before logging in, as the view it wraps
def admin_login(request, extra_context=None):
    user = request.user
    if user.is_authenticated and not (user.is_active and user.is_staff):
        return render(request, "errors/admin_denied.html", status=403)
    return admin.site.login(request, extra_context)
