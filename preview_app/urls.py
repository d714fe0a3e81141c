"""Pages of sessions, previews, comparisons and goldens (web.md screens 1, 3–6). The JSON API is in config/urls.py."""

from django.urls import path  # noqa: F401

app_name = "preview"
urlpatterns: list = []
