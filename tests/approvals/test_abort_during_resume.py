"""Aborting, twice, the run that `resume()` starts for an approved call (DESIGN §14): the
approved call is answered exactly once, nothing stays held, and the next `resume()` goes on
from the transcript without running the call again."""

from __future__ import annotations

import asyncio

from yiemagent import Agent, InMemorySessionStore, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import recording_tool, transcript_problems


async def test_an_approved_call_aborted_twice_while_it_runs_is_answered_once() -> None:
    ran: list[str] = []
    rm = recording_tool("rm", ran, requires_approval=True, delay_s=0.3)
    fm = FauxModel([faux_message(faux_tool_call("rm", {"n": 1}, id="h1")), "removed"])
    store = InMemorySessionStore()
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[rm], session_store=store, session_id="s"
    )
    await agent.prompt("remove it")
    assert [held.tool_call_id for held in agent.pending_approvals] == ["h1"]

    started = asyncio.Event()
    agent.subscribe(lambda e, _s: started.set() if e.type == "tool_execution_start" else None)
    agent.approve("h1")
    resumed = asyncio.create_task(agent.resume())
    await asyncio.wait_for(started.wait(), timeout=30)  # the approved call is running
    agent.abort()
    agent.abort()
    aborted = await resumed

    assert aborted.stop_reason == "aborted"
    assert agent.pending_approvals == []
    assert transcript_problems(agent.state.messages) == []
    answer = await agent.resume()
    assert (answer.stop_reason, answer.text) == ("stop", "removed")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["h1"] and ran == ["h1"]
    assert text_of(results[0].content) == "rm ran with {'n': 1}"
