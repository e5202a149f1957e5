"""Agent cases from other frameworks' bug reports (DESIGN R-4.1): a
prompt cancelled by `asyncio.wait_for`, state after aborts, agent reuse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.agent._kit import faux_agent, make_tool
from yiemagent import AssistantMessage, ToolResultMessage, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of


async def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await asyncio.sleep(5)
    return "slow"


async def until_aborted(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await asyncio.wait_for(signal.wait(), 5)
    return "stopped"


def answered(messages: list[Any]) -> bool:
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    return calls == results


@pytest.mark.parametrize("parallel", [False, True])
async def test_r4_1_prompt_cancelled_by_wait_for_leaves_every_call_answered(
    parallel: bool,
) -> None:
    """The common `await asyncio.wait_for(agent.prompt(...), timeout)`: the transcript keeps
    a result for each tool call, the state is idle and clean, and the agent is reusable."""
    calls = faux_message(faux_tool_call("slow", {}), faux_tool_call("slow", {}))
    fm = FauxModel([calls, "next answer"])
    agent = faux_agent(fm, tools=[make_tool("slow", slow, parallel=parallel)])
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(agent.prompt("go"), 0.1)
    assert answered(agent.state.messages)
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and all(
        r.is_error and "cancelled" in text_of(r.content) for r in results
    )
    state = agent.state
    assert not state.active_run and not agent.is_busy
    assert state.pending_tool_calls == set() and state.streaming_message is None
    reply = await agent.prompt("again")
    assert text_of(reply.content) == "next answer"
    sent = fm.contexts[-1].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "toolResult", "user"]


async def test_r6_2_prompt_cancelled_mid_stream_leaves_no_streaming_message() -> None:
    fm = FauxModel([faux_message(faux_text("word " * 50)), "fine"], chunk_size=2, delay_s=0.01)
    agent = faux_agent(fm)
    seen: list[str] = []
    agent.subscribe(lambda event, signal: seen.append(event.type))
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(agent.prompt("go"), 0.05)
    assert agent.state.streaming_message is None and not agent.state.active_run
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert seen[-3:] == ["message_end", "turn_end", "agent_end"]
    assert text_of((await agent.prompt("again")).content) == "fine"


async def test_r6_5_abort_during_tools_keeps_queued_steering_for_the_next_run() -> None:
    """Steering and follow-ups queued during an aborted run are not lost: the next run
    delivers them."""
    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "after steer", "after follow-up"])
    agent = faux_agent(fm, tools=[make_tool("slow", until_aborted)])
    task = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.sleep(0.05)
    agent.steer("steer me")
    agent.follow_up("and then")
    agent.abort()
    reply = await task
    assert reply.stop_reason == "aborted" and answered(agent.state.messages)
    assert agent.state.pending_tool_calls == set()
    assert text_of((await agent.prompt("next")).content) == "after follow-up"
    users = [text_of(m.content) for m in agent.state.messages if isinstance(m, UserMessage)]
    assert users[-3:] == ["next", "steer me", "and then"]


async def test_one_abort_during_tools_with_a_steer_queued_ends_the_run_once() -> None:
    """pi PR #8658: an abort during tool execution did not stop the loop; with a steering
    message queued it asked the model again on the dead signal, so one Stop gave two
    aborted answers. Here: one model call, one run end, nothing after the tool results,
    and the steer left for the next run."""
    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "after steer"])
    agent = faux_agent(fm, tools=[make_tool("slow", until_aborted)])
    ends: list[str] = []
    agent.subscribe(lambda e, _s: ends.append(e.reason) if e.type == "agent_end" else None)
    task = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.sleep(0.05)
    agent.steer("second message")
    agent.abort()
    reply = await task
    assert reply.stop_reason == "aborted" and ends == ["aborted"] and fm.call_count == 1
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]
    assert text_of((await agent.prompt("next")).content) == "after steer"
