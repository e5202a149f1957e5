"""The composer's hint names Enter and Shift+Enter only where a hardware keyboard is likely
(DESIGN §18): a phone showed "Shift+Enter for a new line", a key its on-screen keyboard
has not. On a 375 px touch screen the hint says only how steering works, and the return
key is labelled to send (what it does); on a desktop the keys are named. Headless Chromium
against a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests._chromium import chromium_page
from tests.serve._kit import faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

KEYS = "Enter to send · Shift+Enter for a new line · while the agent works, what you send steers it"
TOUCH = "While the agent works, what you send steers it"


def hint_shown(url: str, profile: Path, *, width: int, height: int, touch: bool) -> str:
    """The hint's text as the screen shows it (`innerText` leaves out what is hidden)."""
    with chromium_page(profile, width=width, height=height, touch=touch) as page:
        page.set_default_timeout(60_000)
        page.goto(url)
        page.wait_for_selector("#hint")
        assert page.get_attribute("#input", "enterkeyhint") == "send"
        return " ".join(page.inner_text("#hint").split())


@pytest.mark.parametrize(
    ("width", "height", "touch", "shown"),
    [(375, 667, True, TOUCH), (1280, 800, False, KEYS), (1024, 768, True, TOUCH)],
    ids=["phone", "desktop", "tablet"],
)
async def test_the_hint_names_keys_only_with_a_hardware_keyboard(
    tmp_path: Path, width: int, height: int, touch: bool, shown: str
) -> None:
    with faux_server(InMemorySessionStore()) as (url, _):
        text = await asyncio.to_thread(
            hint_shown, url, tmp_path / "profile", width=width, height=height, touch=touch
        )
    assert text == shown
