"""A call held inside a sub-agent, on the page (DESIGN §17, §18): the held call shows its
approve buttons inside the card of the call that runs the sub-agent, and that card is
held too — it kept "running", its timer ticking on after the run had ended. After a
reload, which reads the session back without the sub-run's steps, the held call is put
inside that card again; approving it there finishes both. Headless Chromium against a
real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import Tools, brain, serving
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)


def held_inside(page: Any) -> None:
    """The helper's card is held and holds the held `launch` call with its buttons."""
    helper = page.locator("#msgs > .tool[data-name='helper']")
    launch = helper.locator(".nest .tool.held[data-name='launch']")
    launch.locator(".approve button.primary").wait_for()
    page.wait_for_selector("#state:text('waiting for your approval')")
    assert "held" in (helper.get_attribute("class") or "").split()
    assert helper.locator(":scope > .head .time").inner_text() == "waiting for you"
    assert page.locator("#msgs > .tool").count() == 1  # nothing beside it


def drive(url: str, tmp_path: Path, tools: Tools) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "delegate launch Apollo")
        held_inside(page)
        page.reload()
        page.wait_for_selector(".user:has-text('delegate launch Apollo')")
        held_inside(page)
        assert tools.launched == []
        page.locator(".tool.held .approve button.primary").click()
        page.wait_for_selector(".assistant:has-text('Done: Done: launched Apollo')")
        assert tools.launched == ["Apollo"]
        helper = page.locator("#msgs > .tool[data-name='helper']")
        assert "ok" in (helper.get_attribute("class") or "").split()


async def test_a_call_held_in_a_sub_agent_holds_its_parents_card_live_and_reloaded(
    tmp_path: Path,
) -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 1000, delay_s=0.01)
    tools = Tools()

    def make_agent(session_id: str) -> Agent[Any]:
        helper = Agent(name="helper", model=fm.model, stream_fn=fm.stream_fn, tools=tools.all())
        return Agent(
            name="main",
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[helper.as_tool(description="asks the helper")],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url, tmp_path, tools)
