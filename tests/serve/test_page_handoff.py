"""A team's handoff on the page (headless Chromium, faux agents): where another agent
starts answering, the page says so, live and when the session is reopened, as `yiem run`
and `yiem chat` do ("⇢ math answers")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import UserMessage, text_of

pytestmark = pytest.mark.timeout(180)


def brain(context: Context) -> AssistantMessage:
    """The router hands "math ..." to `math` and answers the rest; `math` answers all."""
    question = next(m for m in reversed(context.messages) if isinstance(m, UserMessage))
    asked = text_of(question.content)
    if context.system_prompt == "math":
        return faux_message(faux_text(f"math says: {asked}"))
    if isinstance(context.messages[-1], UserMessage) and asked.startswith("math"):
        return faux_message(faux_tool_call("transfer_to_math", {}))
    return faux_message(faux_text(f"router says: {asked}"))


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "hello")
        page.wait_for_selector(".assistant:has-text('router says: hello')")
        page.wait_for_selector("#state:text('idle')")
        ask(page, "math 2+2")
        page.wait_for_selector(".assistant:has-text('math says: math 2+2')")
        page.wait_for_selector("#state:text('idle')")
        ask(page, "and the time?")  # math answers this one too: no second note
        page.wait_for_selector(".assistant:has-text('math says: and the time?')")
        page.wait_for_selector("#state:text('idle')")
        # Nothing said that math answered from the handoff on.
        assert page.locator("#msgs .note").all_inner_texts() == ["⇢ math answers"]
        note_then_answer = "#msgs .note.handoff + .assistant:has-text('math says: math 2+2')"
        assert page.locator(note_then_answer).count() == 1
        page.reload()
        page.wait_for_selector(".assistant:has-text('math says: and the time?')")
        assert page.locator("#msgs .note").all_inner_texts() == ["⇢ math answers"]
        assert page.locator(note_then_answer).count() == 1


async def test_the_page_says_where_a_handoff_s_target_starts_answering(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 100, chunk_size=8)

    def make_agent(session_id: str) -> Agent[Any]:
        maths = Agent("math", name="math", model=fm.model, stream_fn=fm.stream_fn)
        return Agent(
            "router",
            name="router",
            model=fm.model,
            stream_fn=fm.stream_fn,
            handoffs=[maths],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url, tmp_path)
