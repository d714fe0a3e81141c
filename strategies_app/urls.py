"""Pages of strategies: the list and the editor (web.md screen 2). The JSON API is in config/urls.py."""

from django.urls import path  # noqa: F401

app_name = "strategies"
urlpatterns: list = []
