"""A sub-agent's own sub-agent on the page (DESIGN §17, §18): in a team lead → mid → leaf,
the leaf's tool calls reach the page as events nested twice (the leaf's events under the
mid's call of the leaf); they show inside the card of the mid's call of the leaf, which is
inside the card of the lead's call of the mid, while the run goes on and after a reload
mid-run. Headless Chromium against a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import Tools, brain, serving, text_of
from yiemagent import Agent, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

LEAF_CALL = "#msgs > .tool[data-name='mid'] .nest .tool[data-name='leaf']"
WEATHER = LEAF_CALL + " .nest .tool[data-name='weather']"


def asks(sub_agent: str) -> Any:
    """A faux model's replies: the user's text goes to `sub_agent`, whose answer is said."""

    def reply(context: Context) -> AssistantMessage:
        last = context.messages[-1]
        if getattr(last, "role", None) == "toolResult":
            return faux_message(faux_text("Done: " + text_of(last)))
        return faux_message(faux_tool_call(sub_agent, {"input": text_of(last)}))

    return reply


def weather_inside_the_leaf(page: Any, *, done: bool) -> None:
    weather = page.locator(WEATHER)
    weather.wait_for()
    if done:
        page.wait_for_selector(WEATHER + ".ok")
        assert "sunny in Oslo" in weather.inner_text()
    assert page.locator(LEAF_CALL).count() == 1
    assert page.locator("#msgs > .tool").count() == 1  # the lead's one call, nothing beside


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "weather Oslo")
        page.wait_for_selector(WEATHER + ".running")
        weather_inside_the_leaf(page, done=False)
        page.reload()
        page.wait_for_selector(".user:has-text('weather Oslo')")
        weather_inside_the_leaf(page, done=False)
        page.wait_for_selector(".assistant:has-text('Done: Done: Done: sunny in Oslo')")
        weather_inside_the_leaf(page, done=True)


async def test_a_sub_agents_own_sub_agent_shows_inside_its_call_live_and_reloaded(
    tmp_path: Path,
) -> None:
    store = InMemorySessionStore()
    tools = Tools(delay_s=4.0)  # the reload comes while the leaf's call runs

    def make_agent(session_id: str) -> Agent[Any]:
        def faux(reply: Any) -> FauxModel:
            return FauxModel([reply] * 1000, delay_s=0.01)

        leaf_model, mid_model, lead_model = faux(brain), faux(asks("leaf")), faux(asks("mid"))
        leaf = Agent(
            name="leaf", model=leaf_model.model, stream_fn=leaf_model.stream_fn, tools=tools.all()
        )
        mid = Agent(
            name="mid",
            model=mid_model.model,
            stream_fn=mid_model.stream_fn,
            tools=[leaf.as_tool(description="asks the leaf")],
        )
        return Agent(
            name="lead",
            model=lead_model.model,
            stream_fn=lead_model.stream_fn,
            tools=[mid.as_tool(description="asks the mid")],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url, tmp_path)
