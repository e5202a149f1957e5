"""A tool that raises `CancelledError` or `TimeoutError` of its own, and tool time limits,
as openai-agents (test_agent_runner.py's cancelled-tool cases, test_function_tool.py's
timeout cases) and pydantic-ai (test_tools.py's timeout cases) check theirs: a tool's own
exception is its error result and the run goes on to its answer; only the run's abort or
the time limit speaks for the framework."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from yiemagent import Agent, AgentEndEvent, AgentTool, AgentToolResult, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def gives_up(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    raise asyncio.CancelledError  # e.g. a client library's own cancelled request


async def answers(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    await asyncio.sleep(0.05)
    return AgentToolResult(content="fine")


def agent_of(fm: FauxModel, *tools: AgentTool, **kwargs: Any) -> tuple[Agent, list[str]]:
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=list(tools), **kwargs)
    reasons: list[str] = []
    agent.subscribe(lambda e, s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None)
    return agent, reasons


def results(agent: Agent) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_a_tool_that_raises_cancelled_is_an_error_and_the_run_answers(
    parallel: bool,
) -> None:
    # test_parallel_tool_call_with_cancelled_sibling_reaches_final_output and
    # test_single_tool_call_with_cancelled_tool_reaches_final_output
    fm = FauxModel(
        [faux_message(faux_tool_call("gives_up", {}), faux_tool_call("answers", {})), "final"]
    )
    agent, reasons = agent_of(
        fm,
        AgentTool("gives_up", "gives_up", "d", SCHEMA, gives_up, parallel=parallel),
        AgentTool("answers", "answers", "d", SCHEMA, answers, parallel=parallel),
    )
    reply = await asyncio.wait_for(agent.prompt("go"), 10)

    assert text_of(reply.content) == "final" and reasons == ["stop"]
    assert results(agent) == [("gives_up", True, "CancelledError"), ("answers", False, "fine")]
    assert not agent.state.active_run


@pytest.mark.parametrize("timeout_s", [None, 5.0], ids=["no-limit", "own-limit"])
async def test_a_tool_s_own_timeout_error_is_its_text_not_the_framework_s(
    timeout_s: float | None,
) -> None:
    # test_invoke_function_tool_does_not_rewrite_tool_raised_timeout_error
    async def upstream(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        raise TimeoutError("the weather service did not answer")

    fm = FauxModel([faux_message(faux_tool_call("upstream", {})), "sorry"])
    agent, _ = agent_of(
        fm, AgentTool("upstream", "upstream", "d", SCHEMA, upstream, timeout_s=timeout_s)
    )
    await agent.prompt("go")

    assert results(agent) == [("upstream", True, "the weather service did not answer")]


def slow(seconds: float) -> Any:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(seconds)
        return AgentToolResult(content="finished")

    return execute


@pytest.mark.parametrize(
    ("tool_limit", "agent_limit", "expected"),
    [
        pytest.param(None, 0.2, "Tool slow timed out after 0.2 s", id="agent-wide-limit"),
        pytest.param(0.2, 30.0, "Tool slow timed out after 0.2 s", id="tool-limit-wins-lower"),
        pytest.param(30.0, 0.2, "finished", id="tool-limit-wins-higher"),
        pytest.param(None, None, "finished", id="no-limit-by-default"),
    ],
)
async def test_a_tool_s_own_limit_overrides_the_agent_s(
    tool_limit: float | None, agent_limit: float | None, expected: str
) -> None:
    # test_agent_level_tool_timeout, test_per_tool_timeout_overrides_agent_timeout,
    # test_no_timeout_by_default, test_tool_timeout_message_format
    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "ok"])
    tool = AgentTool("slow", "slow", "d", SCHEMA, slow(0.6), timeout_s=tool_limit)
    agent, reasons = agent_of(fm, tool, tool_timeout_s=agent_limit)
    await agent.prompt("go")

    [(_, is_error, text)] = results(agent)
    assert text == expected and is_error == (expected != "finished")
    assert reasons == ["stop"]  # a timed-out call is the model's to handle


async def test_cancelling_the_prompt_cancels_the_running_tool() -> None:
    # pydantic-ai test_tool_cancelled_when_agent_cancelled
    started = asyncio.Event()
    outcome: list[str] = []

    async def long(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return AgentToolResult(content="never")

    fm = FauxModel([faux_message(faux_tool_call("long", {})), "never asked"])
    agent, reasons = agent_of(fm, AgentTool("long", "long", "d", SCHEMA, long))
    run = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 10)
    began = time.monotonic()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert outcome == ["cancelled"] and time.monotonic() - began < 10
    [(_, is_error, _text)] = results(agent)
    assert is_error and reasons == ["aborted"] and fm.call_count == 1
    assert not agent.state.active_run
