"""Headless Chromium for the tests that open a page: Debian's `chromium` driven by
Playwright (no browser download), a fresh profile each time."""

from __future__ import annotations

import contextlib
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
def chromium_page(
    profile: Path, *, width: int = 1280, height: int = 800, touch: bool = False
) -> Iterator[Any]:
    """A Playwright page in headless Chromium with a `width` × `height` viewport (CSS
    pixels), its user data in `profile`; the browser closes on exit. With `touch` it is a
    phone's: a touch screen for its pointer (no hover) and a mobile viewport."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is missing: run scripts/setup.sh test (as root)"
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": width, "height": height},
            has_touch=touch,
            is_mobile=touch,
        )
        try:
            yield context.new_page()
        finally:
            context.close()
