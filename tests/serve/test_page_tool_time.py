"""A tool card's time is how long the call ran, not how long the page waited between its
start and end events: a page that reads a run's events late gets them in one batch, and
every card then said "0.00 s" (seen after approving a held MCP call: the resumed run's
call had ended before the page's event stream opened). The result's `duration_ms`, the
time the stored session shows on a reload, now sets it. Headless Chromium against a real
Uvicorn server on 127.0.0.1, the event stream held back two seconds by the browser."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)


@tool
async def slow(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return "waited"


def serve_slow() -> Any:
    store = InMemorySessionStore()
    fm = FauxModel([faux_message(faux_tool_call("slow", {"seconds": 0.6})), "Done waiting."])

    def make_agent(session_id: str) -> Agent:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=[slow], session_store=store,
            session_id=session_id,
        )  # fmt: skip

    return serving(create_app(make_agent, session_store=store))


def held_back(route: Any) -> None:
    time.sleep(2)  # the run ends meanwhile: its events reach the page in one batch
    route.continue_()


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.route("**/events*", held_back)
        page.goto(url)
        ask(page, "Wait a little.")
        page.wait_for_selector(".assistant:has-text('Done waiting.')")
        page.wait_for_selector("#state:text('idle')")
        shown = page.locator("#msgs > .tool .time").inner_text()
        assert shown.endswith(" s") and float(shown[:-2]) >= 0.6, shown


async def test_a_card_read_late_shows_how_long_its_call_ran(tmp_path: Path) -> None:
    with serve_slow() as url:
        await asyncio.to_thread(drive, url, tmp_path)
