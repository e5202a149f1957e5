"""A hook whose own work was cancelled (it awaited a future or task that something else
cancelled) raises `CancelledError` though the run's task was not cancelled. After
openai-agents' tests/test_agent_runner_streamed.py::
test_streamed_parallel_tool_call_with_cancelled_sibling_reaches_final_output and the
guardrails' rule here (a cancelled check fails closed): that is the hook failing, not the
run being cancelled. `before_tool_call` / `after_tool_call` give that call an error result
(R-4.4, R-4.6) and the run goes on; a loop hook ends the run in error (R-5.9); a listener's
is logged and changes nothing (R-5.1b). `prompt` raised a bare `CancelledError` into a
caller whose task nobody cancelled, and the call's result said "the run's task was
cancelled"."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import Agent, AgentRunError, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def _fine(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "fine"


async def cancelled_work(*args: Any) -> Any:
    """What a hook does when it awaits work that was cancelled elsewhere."""
    work = asyncio.get_running_loop().create_future()
    work.cancel()
    return await work


def agent_with(**hooks: Any) -> tuple[Agent[Any], FauxModel]:
    fm = FauxModel([faux_message(faux_tool_call("fine", {})), "final answer", "again"])
    tool = AgentTool("fine", "fine", "answers fine", SCHEMA, _fine)
    return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool], **hooks), fm


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
async def test_a_tool_hook_whose_work_was_cancelled_fails_that_call_only(hook: str) -> None:
    agent, _ = agent_with(**{hook: cancelled_work})
    reply = await asyncio.wait_for(agent.prompt("go"), 20)
    assert reply.text == "final answer"
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and text_of(result.content) == "CancelledError"


@pytest.mark.parametrize(
    "hook", ["transform_context", "convert_to_llm", "should_stop_after_turn", "prepare_next_turn"]
)
async def test_a_loop_hook_whose_work_was_cancelled_ends_the_run_in_error(hook: str) -> None:
    agent, _ = agent_with(**{hook: cancelled_work})
    with pytest.raises(AgentRunError, match="CancelledError"):
        await asyncio.wait_for(agent.prompt("go"), 20)
    answered = {m.tool_call_id for m in agent.state.messages if isinstance(m, ToolResultMessage)}
    called = {c.id for m in agent.state.messages for c in getattr(m, "tool_calls", [])}
    assert answered == called


async def test_a_listener_whose_work_was_cancelled_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, _ = agent_with()
    agent.subscribe(lambda event, signal: cancelled_work())
    reply = await asyncio.wait_for(agent.prompt("go"), 20)
    assert reply.text == "final answer"
    assert any("raised on agent_start" in r.getMessage() for r in caplog.records)


async def test_cancelling_the_prompt_itself_still_cancels() -> None:
    release = asyncio.Event()

    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await release.wait()
        return "late"

    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "never"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn,
        tools=[AgentTool("slow", "slow", "waits", SCHEMA, slow)],
    )  # fmt: skip
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.prompt("go"), 0.3)
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "cancelled" in text_of(result.content)
