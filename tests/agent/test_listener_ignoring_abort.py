"""An Agent listener or `on_event` that awaits something which never comes, ignoring the
run's abort (DESIGN R-5.1b, R-6.5): `abort()` still ends the run, `ABORT_GRACE_S` later the
listener is left behind, and the transcript is whole (the tool call answered)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AgentEvent

from ._kit import make_tool

pytestmark = pytest.mark.timeout(120)


async def quick(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "done"


@pytest.mark.parametrize("how", ["subscribe", "on_event"])
async def test_abort_ends_a_run_whose_listener_never_returns(how: str) -> None:
    """Such a listener used to hang the run for ever: `abort()` changed nothing."""
    stuck = asyncio.Event()

    async def listener(event: AgentEvent, *signal: Any) -> None:
        if event.type == "tool_execution_end":
            stuck.set()
            await asyncio.Event().wait()  # ignores the signal

    fm = FauxModel([faux_message(faux_tool_call("quick", {})), "never asked"])
    on_event = listener if how == "on_event" else None
    tools = [make_tool("quick", quick)]
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools, on_event=on_event)
    if how == "subscribe":
        agent.subscribe(listener)
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(stuck.wait(), 30)
    agent.abort()
    done, _ = await asyncio.wait([run], timeout=30)  # the grace is 1 s; a loaded machine
    assert done, "the run did not end after abort()"
    assert run.result().stop_reason == "aborted"
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == ["done"]  # type: ignore[union-attr]
    assert fm.call_count == 1
