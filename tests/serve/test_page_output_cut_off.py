"""A typed agent's output tool call cut off by the output token limit checked no value, so
the page's note does not say the answer "did not match the schema" (it said so, sending a
user to the schema for a problem of `max_tokens`): it says the answer was not taken, and
why. Headless Chromium against a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, Usage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

LEGS = {"type": "object", "properties": {"legs": {"type": "integer"}}, "required": ["legs"]}
NOT_TAKEN = (
    "The answer was not taken: not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)
IN_A_CALL = (
    "⋯ cut off: max_tokens 40 was reached in the middle of a tool call; raise it so calls fit"
)


def serve_cut_off() -> Any:
    store = InMemorySessionStore()
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("final_result", {"legs": 8}),
                stop_reason="length",
                usage=Usage(output=40),
            ),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
        ]
    )

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            output_type=LEGS,
            max_tokens=40,
            session_store=store,
            session_id=session_id,
        )

    return serving(create_app(make_agent, session_store=store))


def check_notes(page: Any) -> None:
    """The note of the refused call (beside the cut-off note of its message)."""
    notes = page.locator("#msgs > .note").all_inner_texts()
    assert NOT_TAKEN in notes, notes
    assert not [note for note in notes if "schema" in note], notes


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "How many legs?")
        page.wait_for_selector(".assistant:has-text('legs')")
        page.wait_for_selector("#state:text('idle')")
        check_notes(page)
        # the message's note says where the limit came: in a call, not before an answer
        assert IN_A_CALL in page.locator("#msgs > .note").all_inner_texts()
        page.reload()  # the session reopened from the store
        page.wait_for_selector(".assistant:has-text('legs')")
        check_notes(page)


async def test_the_page_says_a_cut_off_answer_was_not_taken(tmp_path: Path) -> None:
    with serve_cut_off() as url:
        await asyncio.to_thread(drive, url, tmp_path)
