"""Headless Chromium for the page tests: Debian's `chromium` driven by Playwright (no browser
download), a fresh profile per test. `YIEM_SERVE_SCREENSHOTS=DIR` keeps each screenshot as
`DIR/serve-NAME.png`."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests._chromium import chromium_page


@contextlib.contextmanager
def browser_page(profile: Path) -> Iterator[Any]:
    """A Playwright page in headless Chromium, 1280×800, waiting up to 60 s for what it
    looks for (the embedded model answers slowly)."""
    with chromium_page(profile) as page:
        page.set_default_timeout(60_000)
        yield page


def shoot(page: Any, tmp_path: Path, name: str) -> Path:
    """Screenshot the page; returns the file (also copied where YIEM_SERVE_SCREENSHOTS says)."""
    shot = tmp_path / f"serve-{name}.png"
    page.screenshot(path=str(shot))
    keep = os.environ.get("YIEM_SERVE_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / shot.name)
    return shot


def ask(page: Any, text: str) -> None:
    """Type `text` in the composer and press Enter."""
    page.fill("#input", text)
    page.keyboard.press("Enter")
