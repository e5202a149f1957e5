"""The page shows a typed agent's answer (DESIGN §14, §18): an agent with an output type
that answers through its output tool writes no text, so the page shows the validated
output itself as the answer, live and again when the session is reopened (also after the
server restarts on the same SQLite file). Headless Chromium against a real Uvicorn server
on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving, text_of
from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import Context

pytestmark = pytest.mark.timeout(180)


class Answer(BaseModel):
    answer: str
    sources: list[str]


def typed_brain(context: Context) -> Any:
    """Answers every question through the output tool, naming the question."""
    question = text_of(context.messages[-1])
    value = {"answer": f"about {question}", "sources": ["meeting.md"]}
    return faux_message(faux_tool_call("final_result", value))


def serve_typed(db: Path) -> Any:
    store = SqliteSessionStore(db)
    fm = FauxModel([typed_brain] * 10)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            output_type=Answer,
            session_store=store,
            session_id=session_id,
        )

    return serving(create_app(make_agent, session_store=store))


ANSWER = ".assistant:has-text('about the launch'):has-text('meeting.md')"


def drive(url: str, tmp_path: Path, db: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "the launch")
        page.wait_for_selector(ANSWER)
        page.wait_for_selector("#state:text('idle')")
        shown = json.loads(page.locator(".assistant pre").first.inner_text())
        assert shown == {"answer": "about the launch", "sources": ["meeting.md"]}
        address = page.url

        with serve_typed(db) as again:  # another server on the same file: reopened
            page.goto(again + "/" + address.split("/", 3)[3])
            page.wait_for_selector(".user:has-text('the launch')")
            page.wait_for_selector(ANSWER)
            assert page.locator(".assistant").count() == 1


async def test_the_page_shows_a_typed_answer_live_and_reopened(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with serve_typed(db) as url:
        await asyncio.to_thread(drive, url, tmp_path, db)


@tool(requires_approval=True)
def save_note(text: str) -> str:
    """Save a note.

    Args:
        text: The note.
    """
    return f"saved {text}"


def save_and_answer(context: Context) -> Any:
    """Saves the question as a note (held for approval) and answers in the same reply."""
    question = text_of(context.messages[-1])
    return faux_message(
        faux_tool_call("save_note", {"text": question}),
        faux_tool_call("final_result", {"answer": f"about {question}", "sources": ["a.md"]}),
    )


def drive_held(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "the launch")
        page.get_by_role("button", name="Approve").click()
        page.wait_for_selector(".tool:has-text('saved the launch')")
        page.wait_for_selector(".assistant pre:has-text('about the launch')")
        page.wait_for_selector("#state:text('idle')")
        page.reload()
        page.wait_for_selector(".user:has-text('the launch')")
        page.wait_for_selector(".assistant pre:has-text('about the launch')")
        assert page.locator(".assistant").count() == 1


async def test_a_typed_answer_given_beside_a_held_call_shows_once_approved(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    fm = FauxModel([save_and_answer] * 4)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[save_note],
            output_type=Answer,
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive_held, url, tmp_path)


LONG = "the launch moves to the third week of March because " * 8
UNBROKEN = "https://example.com/" + "x" * 300


def long_brain(context: Context) -> Any:
    """Answers through the output tool with a long sentence and an unbroken source."""
    return faux_message(faux_tool_call("final_result", {"answer": LONG, "sources": [UNBROKEN]}))


def drive_long(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "the launch")
        block = page.locator(".assistant pre").first
        block.wait_for()
        page.wait_for_selector("#state:text('idle')")
        sizes = block.evaluate("(pre) => [pre.scrollWidth, pre.clientWidth]")
        assert sizes[0] <= sizes[1], f"the JSON block scrolls sideways: {sizes}"
        shown = json.loads(block.inner_text())  # wrapped on screen, the same JSON
        assert shown == {"answer": LONG, "sources": [UNBROKEN]}


async def test_a_long_typed_answer_wraps_instead_of_scrolling_sideways(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    fm = FauxModel([long_brain] * 4)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            output_type=Answer,
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive_long, url, tmp_path)
