"""Screenshots for looking at a page as its users will: taken only when STUDIO_SHOTS names a folder."""

from __future__ import annotations

import os


def shoot(page, name: str) -> None:
    folder = os.environ.get("STUDIO_SHOTS")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=os.path.join(folder, f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})
