"""Credentials a shared SillyTavern preset can carry (SillyTavern's own report of leaked keys): found and removed before a preset is
stored or exported, so no role ever sees them."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Fields that are a credential whatever they hold.
SECRET_FIELDS = frozenset({"proxy_password", "reverse_proxy", "custom_include_headers"})
_SECRET_NAME = re.compile(r"(_key$|^api_key|^password)", re.IGNORECASE)


def _is_secret_field(name: str) -> bool:
    return name in SECRET_FIELDS or bool(_SECRET_NAME.search(name))


def _without_credentials(url: str) -> str | None:
    """`url` without `user:password@`, or None when it carries none."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.username is None and parts.password is None:
        return None
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def strip_preset_secrets(document: Any) -> tuple[Any, list[str]]:
    """A preset file's top-level object without its credentials -> (cleaned copy, names of what was removed).
    Anything that is not an object comes back unchanged (the preset reader names what is wrong with it)."""
    if not isinstance(document, dict):
        return document, []
    cleaned: dict[str, Any] = {}
    removed: list[str] = []
    for name, value in document.items():
        if name == "oai_settings" and isinstance(value, dict):  # a settings.json carries the preset inside
            inner, inner_removed = strip_preset_secrets(value)
            cleaned[name] = inner
            removed += [f"oai_settings.{n}" for n in inner_removed]
        elif isinstance(name, str) and _is_secret_field(name) and value not in ("", None, [], {}):
            removed.append(name)  # an empty field holds no secret and stays (SillyTavern's own presets have them)
        elif name == "custom_url" and isinstance(value, str) and (bare := _without_credentials(value)) is not None:
            cleaned[name] = bare
            removed.append("custom_url (its user name and password)")
        else:
            cleaned[name] = value
    return cleaned, removed
