"""The parent's abort reaches every member of a team (DESIGN §17): two levels of sub-agents
(`Agent.as_tool`), two of them running at once under the middle one, one waiting for its
model's answer and one waiting in a tool for the abort. One `abort()` of the outermost
agent ends every run at once, each with reason "aborted", and every call at every level
is answered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    AgentEndEvent,
    AgentEvent,
    AgentTool,
    NestedAgentEvent,
    ToolResultMessage,
)
from yiemagent.types import Context

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted

pytestmark = pytest.mark.timeout(120)


async def test_one_abort_ends_every_run_at_every_level_with_every_call_answered() -> None:
    waiting, writing = asyncio.Event(), asyncio.Event()

    async def write(context: Context) -> str:
        writing.set()
        await asyncio.sleep(60)  # the faux model ends the call when the abort comes
        return "never sent"

    async def wait_for_abort(
        call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
    ) -> str:
        waiting.set()
        return f"stopped: {await signal.wait()}"

    writer, _ = scripted("writer", [write])
    worker, _ = scripted(
        "worker",
        [calls(("wait", {"n": 1}))],
        tools=[AgentTool("wait", "wait", "waits", {"type": "object"}, wait_for_abort)],
    )
    mid, _ = scripted(
        "mid",
        [calls(("writer", {"input": "write"}), ("worker", {"input": "work"}))],
        tools=[writer.as_tool(), worker.as_tool()],
    )
    lead, _ = scripted("lead", [calls(("mid", {"input": "go"}))], tools=[mid.as_tool()])
    events: list[AgentEvent] = []
    lead.subscribe(lambda event, signal: events.append(event))

    task = asyncio.create_task(lead.prompt("go"))
    await asyncio.wait_for(asyncio.gather(waiting.wait(), writing.wait()), 30)
    lead.abort()
    reply = await asyncio.wait_for(task, 30)

    assert reply.stop_reason == "aborted"
    assert transcript_problems(lead.state.messages) == []
    ends = {
        e.agent_path: e.event.reason
        for e in events
        if isinstance(e, NestedAgentEvent) and isinstance(e.event, AgentEndEvent)
    }
    assert ends == {
        ("lead", "mid"): "aborted",
        ("lead", "mid", "writer"): "aborted",
        ("lead", "mid", "worker"): "aborted",
    }
    nested_results = [
        (e.agent_path, e.event.message)
        for e in events
        if isinstance(e, NestedAgentEvent)
        and e.event.type == "message_end"
        and isinstance(e.event.message, ToolResultMessage)
    ]
    by_tool = {message.tool_name: (path, message) for path, message in nested_results}
    assert sorted(by_tool) == ["wait", "worker", "writer"]
    assert by_tool["wait"][0] == ("lead", "mid", "worker")  # the tool saw the abort
    assert by_tool["wait"][1].content[0].text.startswith("stopped")  # type: ignore[union-attr]
    for name in ("writer", "worker"):
        path, message = by_tool[name]
        assert path == ("lead", "mid") and message.is_error
        assert message.content[0].text == f"agent {name!r} was aborted"  # type: ignore[union-attr]
    [result] = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and result.content[0].text == "agent 'mid' was aborted"  # type: ignore[union-attr]
