"""django-axes' backend for the studio: logins over HTTP (the studio's and the admin's) are throttled per user and
IP; a call of authenticate() without a request (a management command, Client.login in a test) has no IP to throttle
and goes straight to the next backend instead of failing."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class ThrottledLoginBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
