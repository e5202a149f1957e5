"""Tool calls that fail again and again, in the cases pydantic-ai's test_agent.py and
test_tools.py check (`test_unknown_tool_multiple_retries`, `test_tool_retries`,
`test_parallel_tool_exception_cancels_sibling_tasks`).

By choice (docs/tools.md, "When a call fails"): a failed call is an error result the model
reads, every time; there is no per-tool retry budget that ends the run (pydantic-ai raises
`UnexpectedModelBehavior` once a tool's retries are spent). A run is bounded by
`max_turns` or `UsageLimits(max_tool_calls=...)`. A call that raises never cancels the
other calls of its batch (pydantic-ai cancels the siblings): each is answered (R-4.1)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    AfterToolCallResult,
    Agent,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    TextContent,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def failing(ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        ran.append(call_id)
        raise RuntimeError("the database is locked")

    return AgentTool("flaky", "flaky", "fails", SCHEMA, execute)


def run_of(fm: FauxModel, *tools: AgentTool, **kwargs: Any) -> tuple[Agent, list[str]]:
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=list(tools), **kwargs)
    reasons: list[str] = []
    agent.subscribe(lambda e, s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None)
    return agent, reasons


def results(agent: Agent) -> list[str]:
    return [text_of(m.content) for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_an_unknown_tool_called_again_and_again_is_answered_each_time() -> None:
    # test_unknown_tool_multiple_retries: pydantic-ai gives up after its retries
    calls = [faux_message(faux_tool_call("missing", {})) for _ in range(4)]
    fm = FauxModel([*calls, "I cannot do that."])
    agent, reasons = run_of(fm, failing([]))
    reply = await agent.prompt("go")

    assert reasons == ["stop"] and text_of(reply.content) == "I cannot do that."
    assert results(agent) == ['Tool "missing" not found. Available tools: flaky'] * 4


async def test_a_tool_that_keeps_failing_is_bounded_by_max_turns() -> None:
    # test_tool_retries: no retry budget here; max_turns ends the run, no error raised
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("flaky", {})) for _ in range(10)])
    agent, reasons = run_of(fm, failing(ran), max_turns=3)
    await agent.prompt("go")

    assert reasons == ["max_turns"] and fm.call_count == 3 and len(ran) == 3
    assert results(agent) == ["the database is locked"] * 3


async def test_a_tool_that_keeps_failing_is_bounded_by_max_tool_calls() -> None:
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("flaky", {})) for _ in range(10)])
    agent, reasons = run_of(fm, failing(ran), usage_limits=UsageLimits(max_tool_calls=2))
    with pytest.raises(UsageLimitExceeded, match="max_tool_calls=2"):
        await agent.prompt("go")
    assert reasons == ["usage_limit"] and len(ran) == 2


async def test_a_call_that_raises_does_not_cancel_its_parallel_siblings() -> None:
    # test_parallel_tool_exception_cancels_sibling_tasks: here the sibling finishes
    finished: list[str] = []

    async def boom(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(0.3)
        finished.append(call_id)
        return AgentToolResult(content="slow done")

    fm = FauxModel(
        [faux_message(faux_tool_call("boom", {}), faux_tool_call("slow", {}, id="s1")), "ok"]
    )
    agent, reasons = run_of(
        fm,
        AgentTool("boom", "boom", "d", SCHEMA, boom, parallel=True),
        AgentTool("slow", "slow", "d", SCHEMA, slow, parallel=True),
    )
    await agent.prompt("go")

    assert finished == ["s1"] and reasons == ["stop"]
    assert results(agent) == ["boom", "slow done"]


async def test_after_tool_call_sees_the_calls_that_ran_not_the_ones_refused() -> None:
    # openai-agents' test_tool_not_found_behavior_uses_tool_error_formatter: its formatter
    # rewrites the not-found text; here, as in the seeds, only executed calls are finalized
    seen: list[str] = []

    def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        seen.append(ctx.tool_call.id)
        return AfterToolCallResult(content=[TextContent("rewritten")])

    async def needs_n(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "ran"

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    calls = [
        faux_tool_call("missing", {}, id="unknown"),
        faux_tool_call("t", {}, id="invalid"),
        faux_tool_call("t", {"n": 1}, id="ran"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent, _ = run_of(fm, AgentTool("t", "t", "d", schema, needs_n), after_tool_call=after)
    await agent.prompt("go")

    assert seen == ["ran"]
    texts = results(agent)
    assert texts[0] == 'Tool "missing" not found. Available tools: t'
    assert texts[1].startswith('Invalid arguments for tool "t":')
    assert texts[2] == "rewritten"
