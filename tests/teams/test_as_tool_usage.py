"""A sub-agent's tokens count once in its parent's totals however its run ends: answered,
cut off by the parent's tool timeout, aborted with the parent, stopped by a limit or by
`max_turns` (DESIGN §17: "the result message's usage is the sub-run's total")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import AbortSignal, AgentTool, ToolResultMessage, UsageLimits
from yiemagent.types import AssistantMessage, Usage

from ..approvals._kit import transcript_problems
from ._kit import answer, calls, scripted, slow_tool


def spent(messages: list[Any]) -> int:
    """Input tokens of a transcript: its model calls and its tool results (sub-runs)."""
    total = 0
    for message in messages:
        if isinstance(message, AssistantMessage | ToolResultMessage) and message.usage:
            total += message.usage.input
    return total


def researcher_result(messages: list[Any]) -> ToolResultMessage:
    return next(
        m for m in messages if isinstance(m, ToolResultMessage) and m.tool_name == "researcher"
    )


async def test_a_sub_run_cut_off_by_the_parents_tool_timeout_keeps_its_usage() -> None:
    researcher, _ = scripted(
        "researcher",
        [calls(("lookup", {"n": 1}), usage=Usage(input=850)), "never"],
        tools=[slow_tool("lookup", [], delay_s=30)],
    )
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"}), usage=Usage(input=100)), answer("done")],
        tools=[researcher.as_tool()],
        tool_timeout_s=0.3,
    )

    assert (await lead.prompt("go")).text == "done"

    result = researcher_result(lead.state.messages)
    assert result.is_error and "timed out" in result.content[0].text  # type: ignore[union-attr]
    assert result.usage is not None and result.usage.input == 850
    assert spent(lead.state.messages) == 950
    assert transcript_problems(lead.state.messages) == []


@pytest.mark.parametrize("limited", [False, True])
async def test_a_sub_run_cut_off_by_its_timeout_counts_once_in_the_parents_limits(
    limited: bool,
) -> None:
    """The live count of the cut-off sub-run and the usage on its result are one count."""
    researcher, _ = scripted(
        "researcher",
        [calls(("lookup", {"n": 1}), usage=Usage(input=400)), "never"],
        tools=[slow_tool("lookup", [], delay_s=30)],
    )
    lead, lead_fm = scripted(
        "lead",
        [
            calls(("researcher", {"input": "x"}), usage=Usage(input=100)),
            answer("done", Usage(input=100)),
        ],
        tools=[researcher.as_tool()],
        tool_timeout_s=0.3,
        usage_limits=UsageLimits(max_input_tokens=601) if limited else None,
    )

    assert (await lead.prompt("go")).text == "done"  # 600 < 601: not reached
    assert spent(lead.state.messages) == 600
    assert lead_fm.call_count == 2


async def test_a_sub_run_whose_tool_ignores_the_abort_keeps_its_usage() -> None:
    """The parent's abort: the sub-run's tool ignores it, so both pipelines give up after
    their grace; the sub-run's spending still reaches the parent's result."""
    started = asyncio.Event()

    async def stuck(call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    researcher, _ = scripted(
        "researcher",
        [calls(("stuck", {"n": 1}), usage=Usage(input=700))],
        tools=[AgentTool("stuck", "stuck", "hangs", {"type": "object"}, stuck)],
    )
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"}), usage=Usage(input=100))],
        tools=[researcher.as_tool()],
    )

    task = asyncio.create_task(lead.prompt("go"))
    await asyncio.wait_for(started.wait(), 30)
    lead.abort()
    reply = await asyncio.wait_for(task, 30)

    assert reply.stop_reason == "aborted"
    result = researcher_result(lead.state.messages)
    assert result.is_error
    assert result.usage is not None and result.usage.input == 700
    assert spent(lead.state.messages) == 800
    assert transcript_problems(lead.state.messages) == []


async def test_a_sub_run_stopped_by_max_turns_or_its_limit_keeps_its_usage() -> None:
    looping = [calls(("lookup", {"n": 1}), usage=Usage(input=300))] * 5
    by_turns, _ = scripted(
        "by_turns", looping, tools=[slow_tool("lookup", [], delay_s=0)], max_turns=2
    )
    by_limit, _ = scripted(
        "by_limit",
        looping,
        tools=[slow_tool("lookup", [], delay_s=0)],
        usage_limits=UsageLimits(max_input_tokens=500),
    )
    lead, _ = scripted(
        "lead",
        [calls(("by_turns", {"input": "x"}), ("by_limit", {"input": "y"})), answer("done")],
        tools=[by_turns.as_tool(), by_limit.as_tool()],
    )

    assert (await lead.prompt("go")).text == "done"

    results = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.usage.input if r.usage else None) for r in results] == [
        ("by_turns", 600),
        ("by_limit", 600),
    ]
    assert spent(lead.state.messages) == 1200
