"""A sub-agent whose tool ignores the parent's abort (DESIGN R-6.5, `docs/teams.md`): the
sub-run gives its tool up within half the parent's grace and ends, so the parent answers its
call with what the sub-run said, never that the sub-agent did not stop; the whole run still
ends within the one grace of an abort."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import AbortSignal, AgentTool
from yiemagent.loop import ABORT_GRACE_S
from yiemagent.types import AgentEvent, NestedAgentEvent, TextContent, ToolExecutionEndEvent

from ._kit import calls, scripted


def stuck_tool(started: asyncio.Event) -> AgentTool:
    """An async tool that never looks at its signal (it stops only when cancelled)."""

    async def stuck(call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    return AgentTool("stuck", "stuck", "hangs", {"type": "object"}, stuck)


def result_text(event: ToolExecutionEndEvent) -> str:
    block = event.result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_the_parent_says_the_sub_agent_was_aborted_and_it_names_its_tool() -> None:
    started = asyncio.Event()
    researcher, _ = scripted("researcher", [calls(("stuck", {}))], tools=[stuck_tool(started)])
    middle, _ = scripted(
        "middle", [calls(("researcher", {"input": "x"}))], tools=[researcher.as_tool()]
    )
    lead, _ = scripted("lead", [calls(("middle", {"input": "x"}))], tools=[middle.as_tool()])
    ends: list[tuple[tuple[str, ...], str, str]] = []

    def listen(event: AgentEvent) -> None:
        path: tuple[str, ...] = ()
        if isinstance(event, NestedAgentEvent):
            path, event = tuple(event.agent_path), event.event
        if isinstance(event, ToolExecutionEndEvent):
            ends.append((path, event.tool_name, result_text(event)))

    lead.subscribe(listen)
    task = asyncio.create_task(lead.prompt("go"))
    await asyncio.wait_for(started.wait(), 30)
    lead.abort()
    reply = await asyncio.wait_for(task, 30)

    assert reply.stop_reason == "aborted"
    quarter = ABORT_GRACE_S / 4
    assert ends == [
        (
            ("lead", "middle", "researcher"),
            "stuck",
            f"Operation aborted: tool stuck did not stop within {quarter:g} s",
        ),
        (("lead", "middle"), "researcher", "agent 'researcher' was aborted"),
        ((), "middle", "agent 'middle' was aborted"),
    ]
