"""django-axes' backend for the studio: logins over HTTP (the studio's and the admin's) are throttled per user and
IP; a call of authenticate() without a request (a management command, Client.login in a test) has no IP to throttle
and goes straight to the next backend instead of failing. Behind proxies the IP is the one the nearest trusted proxy
saw (`client_ip`), so one proxy's address never stands for every user."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings


class ThrottledLoginBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_ip(request) -> str | None:
    """The address a login is throttled under: REMOTE_ADDR, or behind `STUDIO_TRUSTED_PROXIES` proxies that each
    append to X-Forwarded-For, the entry that many places from its end (what the outermost trusted proxy saw; the
    entries before it are the client's to write). A header with too few entries falls back to REMOTE_ADDR."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.STUDIO_TRUSTED_PROXIES
    if not proxies:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote
