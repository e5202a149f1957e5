"""A typed run's output tools stay hidden on the page from their first call (DESIGN §14,
§17): the run-start answer names the agent's output tool and its typed sub-agents' (by
agent name), so a refused answer is one note from the start, never an error card first, and
a typed sub-agent's `final_result` calls get no cards inside its call's card, a refused one
a line naming the agent. Headless Chromium against a real Uvicorn server on 127.0.0.1; a
MutationObserver records every `final_result` card the page ever shows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from pydantic import BaseModel

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving, wait_done
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

LEGS = {"type": "object", "properties": {"legs": {"type": "integer"}}, "required": ["legs"]}


class Answer(BaseModel):
    answer: str
    sources: list[str]


REFUSED = "The answer did not match the schema: $.sources: 'zoo' is not of type 'array'"
SUB_REFUSED = (
    "counter The answer did not match the schema: $.legs: 'eight' is not of type 'integer'"
)

WATCH = """
window.shownOutput = [];
new MutationObserver(() => {
  for (const card of document.querySelectorAll("#msgs .tool")) {
    const name = card.querySelector(".name");
    if (name && name.textContent === "final_result" && card.checkVisibility())
      window.shownOutput.push(card.className);
  }
}).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
"""


def serve_team() -> Any:
    """An entry agent typed `Answer` asking a sub-agent typed `LEGS`; each refuses one answer.
    The model streams slowly, so a refused call's end and the next call arrive apart."""
    store = InMemorySessionStore()
    fm = FauxModel(
        [
            faux_message(faux_tool_call("counter", {"input": "Spider legs?"})),
            faux_message(faux_tool_call("final_result", {"legs": "eight"})),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
            faux_message(faux_tool_call("final_result", {"answer": "8", "sources": "zoo"})),
            faux_message(faux_tool_call("final_result", {"answer": "8", "sources": ["zoo"]})),
        ],
        chunk_size=8,
        delay_s=0.05,
    )

    def make_agent(session_id: str) -> Agent[Any]:
        counter = Agent(name="counter", model=fm.model, stream_fn=fm.stream_fn, output_type=LEGS)
        return Agent(
            name="zoo",
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[counter.as_tool()],
            output_type=Answer,
            session_store=store,
            session_id=session_id,
        )

    return serving(create_app(make_agent, session_store=store))


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.add_init_script(WATCH)
        page.goto(url)
        ask(page, "How many legs has a spider?")
        page.wait_for_selector(".assistant pre")
        page.wait_for_selector("#state:text('idle')")
        assert page.evaluate("window.shownOutput") == []
        assert page.locator("#msgs > .tool .name").all_inner_texts() == ["counter"]
        assert page.locator("#msgs .nest .tool").count() == 0
        assert page.locator("#msgs .nest .refused").all_inner_texts() == [SUB_REFUSED]
        assert page.locator("#msgs > .note").all_inner_texts() == [REFUSED]
        value = json.loads(page.locator(".assistant pre").first.inner_text())
        assert value == {"answer": "8", "sources": ["zoo"]}


async def test_the_page_hides_output_tools_from_their_first_call(tmp_path: Path) -> None:
    with serve_team() as url:
        await asyncio.to_thread(drive, url, tmp_path)


def test_a_run_start_names_the_output_tools() -> None:
    with serve_team() as url, httpx.Client(base_url=url) as client:
        started = client.post("/v1/sessions/s1/runs", json={"input": "Spider legs?"})
        assert started.status_code == 202, started.text
        run = started.json()
        assert run["output_tool"] == "final_result"
        assert run["output_tools"] == {"zoo": "final_result", "counter": "final_result"}
        summary = wait_done(client, run["run_id"])
        assert (summary["output_tool"], summary["output_tools"]) == (
            run["output_tool"],
            run["output_tools"],
        )
