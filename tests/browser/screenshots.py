"""Screenshots for looking at a page as its users will: taken only when STUDIO_SHOTS names a folder."""

from __future__ import annotations

import os


def shoot(page, name: str, language: str | None = None) -> None:
    """`name`-`width`.png at 1,400 and 800 px, whole pages from their top; with `language` ("en", "zh-hans"):
    `name`-`width`-`en|zh`.png."""
    folder = os.environ.get("STUDIO_SHOTS")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    tail = "" if language is None else "-" + language.split("-")[0]
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate("window.scrollTo(0, 0)")  # a sticky panel (the editor's preview) shows beside the page's top
        page.screenshot(path=os.path.join(folder, f"{name}-{width}{tail}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})
