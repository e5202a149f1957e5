"""A call held for approval shows its whole arguments on the page before anyone decides
(DESIGN §14, §18), in headless Chromium on a phone-sized screen against a real server of
faux agents: the card's one-line summary cuts arguments at the screen's edge (and at 120
characters), and what is approved must be read whole. Once decided, the card folds again
like every other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests._chromium import chromium_page
from tests.serve._kit import Tools, faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

CITY = "Apollo-" * 30 + "end"  # 213 characters: past the summary's cut and the screen


def approve_on_a_phone(url: str, profile: Path) -> tuple[bool, str, bool]:
    with chromium_page(profile, width=390, height=844) as page:
        page.set_default_timeout(60_000)
        page.goto(url)
        page.fill("#input", f"launch {CITY}")
        page.keyboard.press("Enter")
        approve = page.locator(".tool.held .approve button.primary")
        approve.wait_for()
        shown = page.locator(".tool.held .body pre").first
        visible, text = shown.is_visible(), shown.inner_text()
        approve.click()
        page.wait_for_selector(".assistant:has-text('Done: launched')")
        page.wait_for_selector(".tool.ok")
        folded = page.locator(".tool.ok .head").get_attribute("aria-expanded") == "false"
        return visible, text, folded and page.locator(".tool.open").count() == 0


async def test_a_held_calls_whole_arguments_show_before_the_decision(tmp_path: Path) -> None:
    tools = Tools()
    with faux_server(InMemorySessionStore(), tools) as (url, _):
        visible, text, folded = await asyncio.to_thread(
            approve_on_a_phone, url, tmp_path / "profile"
        )
    assert visible
    assert CITY in text.replace("\n", "")
    assert folded
    assert tools.launched == [CITY]
