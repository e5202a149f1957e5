"""Calls approved and run by `resume()` are a batch like any other (DESIGN §13, §14,
R-4.10). As mastra#17074 found runs held for approval missing from their traces, the
approved calls ran with no `execute_tool` span; they also escaped the run's
`max_tool_calls`, and calls that all asked to terminate the run had the model called
again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent import (
    Agent,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import recording_tool, transcript_problems


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


def _two_held_calls() -> FauxModel:
    calls = [faux_tool_call("rm", {"n": n}, id=f"c{n}") for n in (1, 2)]
    return FauxModel([faux_message(*calls), "done"])


async def test_approved_calls_are_traced_under_the_resumed_run(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    ran: list[str] = []
    fm = _two_held_calls()
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[recording_tool("rm", ran, requires_approval=True)],
        tracer_provider=provider,
    )
    await agent.prompt("remove both")
    agent.approve("c1")
    agent.reject("c2", "keep it")
    assert (await agent.resume()).text == "done"
    assert ran == ["c1"]
    spans = memory.get_finished_spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    assert [dict(s.attributes or {})["yiemagent.end_reason"] for s in runs] == [
        "awaiting_approval",
        "stop",
    ]
    tools = {
        dict(s.attributes or {})["gen_ai.tool.call.id"]: s
        for s in spans
        if s.name == "execute_tool rm"
    }
    assert set(tools) == {"c1", "c2"}
    for span in tools.values():
        assert span.parent is not None and span.parent.span_id == runs[1].context.span_id
    assert "error.type" not in dict(tools["c1"].attributes or {})
    assert "error.type" in dict(tools["c2"].attributes or {})  # rejected: never ran


async def test_approved_calls_count_against_max_tool_calls() -> None:
    ran: list[str] = []
    fm = _two_held_calls()
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[recording_tool("rm", ran, requires_approval=True)],
        usage_limits=UsageLimits(max_tool_calls=1),
    )
    await agent.prompt("remove both")
    agent.approve("c1")
    agent.approve("c2")
    with pytest.raises(UsageLimitExceeded, match="max_tool_calls=1"):
        await agent.resume()
    assert len(ran) == 1 and fm.call_count == 1
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert sorted(text_of(r.content).startswith("not executed: usage limit") for r in results) == [
        False,
        True,
    ]
    assert transcript_problems(agent.state.messages) == []


async def test_approved_calls_that_all_terminate_end_the_run_without_a_model_call() -> None:
    def finish(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=f"finished {args['n']}", terminate=True)

    tool = AgentTool("rm", "rm", "ends the run", {"type": "object"}, finish, requires_approval=True)
    fm = _two_held_calls()
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    ends: list[str] = []
    agent.subscribe(lambda e: ends.append(e.reason) if isinstance(e, AgentEndEvent) else None)
    await agent.prompt("remove both")
    agent.approve("c1")
    agent.approve("c2")
    reply = await agent.resume()
    assert ends == ["awaiting_approval", "terminate"]
    assert fm.call_count == 1  # "done" was never asked for
    assert reply.stop_reason == "tool_use_terminated"
    assert "finished 1" in reply.text and "finished 2" in reply.text
