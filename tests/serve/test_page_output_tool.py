"""The page shows a typed agent's answer, not the output tool that hands it over (DESIGN
§14, §18): a `final_result` card ("Final result accepted.") stood above the answer showing
the same value. Now the accepted call has no card, a call it refused is one note naming the
problems, and the agent's other tools keep their cards, live and when the session is
reopened. Headless Chromium against a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)


class Answer(BaseModel):
    answer: str
    sources: list[str]


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the notes."""
    return f"{topic}: see meeting.md"


REFUSED = "The answer did not match the schema: $.sources: 'meeting.md' is not of type 'array'"


def serve_typed() -> Any:
    store = InMemorySessionStore()
    answer = {"answer": "Friday", "sources": "meeting.md"}  # refused: sources is no list
    fm = FauxModel(
        [
            faux_message(faux_tool_call("lookup", {"topic": "launch"})),
            faux_message(faux_tool_call("final_result", answer)),
            faux_message(faux_tool_call("final_result", {**answer, "sources": ["meeting.md"]})),
        ]
    )

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[lookup],
            output_type=Answer,
            session_store=store,
            session_id=session_id,
        )

    return serving(create_app(make_agent, session_store=store))


def shown(page: Any) -> tuple[list[str], list[str], Any]:
    """The tool cards' names, the notes and the answer's value as the page shows them."""
    cards = page.locator("#msgs > .tool .name").all_inner_texts()
    notes = page.locator("#msgs > .note").all_inner_texts()
    return cards, notes, json.loads(page.locator(".assistant pre").first.inner_text())


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "When is the launch?")
        page.wait_for_selector(".assistant:has-text('Friday')")
        page.wait_for_selector("#state:text('idle')")
        expected = (["lookup"], [REFUSED], {"answer": "Friday", "sources": ["meeting.md"]})
        assert shown(page) == expected
        page.reload()  # the session reopened from the store
        page.wait_for_selector(".assistant:has-text('Friday')")
        assert shown(page) == expected


async def test_the_page_shows_the_answer_not_its_output_tool(tmp_path: Path) -> None:
    with serve_typed() as url:
        await asyncio.to_thread(drive, url, tmp_path)
