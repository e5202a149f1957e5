"""The chat page on a phone-sized screen and with the keyboard alone, in headless Chromium
against faux agents: nothing scrolls sideways or hides past the screen's edge, and every
control a mouse user has (send, a tool call's details, approve) is reached with Tab and
worked with Enter or Space."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests._chromium import chromium_page
from tests.serve._kit import Tools, faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

PHONE: dict[str, Any] = {"width": 375, "height": 667}  # CSS pixels, an iPhone SE


def sideways_overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than the screen (0: it fits)."""
    return int(
        page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )


def outside_the_screen(page: Any, selector: str) -> list[str]:
    """The elements matching `selector` whose box is not wholly inside the viewport's width."""
    boxes = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].map((e) => {
             const r = e.getBoundingClientRect();
             return [e.id || e.className || e.tagName, r.left, r.right];
           })""",
        selector,
    )
    return [name for name, left, right in boxes if left < 0 or right > PHONE["width"]]


def on_a_phone(url: str, profile: Path) -> None:
    with chromium_page(profile, **PHONE) as page:
        page.set_default_timeout(60_000)
        page.goto(url)
        page.wait_for_selector("#input")
        assert sideways_overflow(page) == 0
        assert page.locator("#input").bounding_box()["width"] >= 200  # room to type
        page.fill("#input", "weather Oslo Lisbon")
        page.keyboard.press("Enter")
        page.wait_for_selector(".assistant:has-text('Done: sunny in Oslo; sunny in Lisbon')")
        page.fill("#input", "launch Apollo")
        page.keyboard.press("Enter")
        page.wait_for_selector(".approve button:text('Approve')")
        assert sideways_overflow(page) == 0
        assert outside_the_screen(page, "#side, #main, #input, #send, .tool, .approve button") == []
        page.click(".approve button:text('Approve')")
        page.wait_for_selector(".assistant:has-text('Done: launched Apollo')")


async def test_the_page_fits_a_phone_screen(tmp_path: Path) -> None:
    tools = Tools()
    with faux_server(InMemorySessionStore(), tools) as (url, _):
        await asyncio.to_thread(on_a_phone, url, tmp_path / "profile")
    assert tools.launched == ["Apollo"]


def tab_to(page: Any, matches: str, most: int = 40) -> None:
    """Press Tab until the focused element matches the CSS selector `matches`."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", matches):
            return
    raise AssertionError(f"Tab never reached {matches}")


def keyboard_only(url: str, profile: Path) -> None:
    with chromium_page(profile) as page:
        page.set_default_timeout(60_000)
        page.goto(url)
        tab_to(page, "#input")
        page.keyboard.type("launch Apollo")
        page.keyboard.press("Enter")
        page.wait_for_selector(".approve button:text('Approve')")
        head = page.locator(".tool .head").first
        assert head.get_attribute("aria-expanded") == "true"  # a held call shows its arguments
        tab_to(page, ".tool .head")
        page.keyboard.press("Enter")  # the call's details close, as a click closes them
        page.wait_for_selector(".tool:not(.open)")
        assert head.get_attribute("aria-expanded") == "false"
        page.keyboard.press(" ")  # and open
        page.wait_for_selector(".tool.open .body pre:has-text('Apollo')")
        tab_to(page, ".approve button.primary")
        page.keyboard.press("Enter")
        page.wait_for_selector(".assistant:has-text('Done: launched Apollo')")


async def test_every_control_works_from_the_keyboard(tmp_path: Path) -> None:
    tools = Tools()
    with faux_server(InMemorySessionStore(), tools) as (url, _):
        await asyncio.to_thread(keyboard_only, url, tmp_path / "profile")
    assert tools.launched == ["Apollo"]
