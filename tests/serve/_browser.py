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

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def browser_page(profile: Path) -> Iterator[Any]:
    """A Playwright page in headless Chromium, 1280×800."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is missing: run scripts/setup.sh test (as root)"
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 800},
        )
        try:
            page = context.new_page()
            page.set_default_timeout(60_000)
            yield page
        finally:
            context.close()


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
