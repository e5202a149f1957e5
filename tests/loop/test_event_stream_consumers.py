"""What a consumer of `agent_loop`'s event stream may rely on, in the cases pydantic-ai's
tests/test_streaming.py and openai-agents' test_agent_runner_streamed.py check for theirs.

By choice (docs/agent.md, "A run's event stream"): the run is a task of its own, so a
consumer that never reads the events, or stops reading early, does not stop it (pydantic-ai
cancels a run when its stream context is left); stopping is the signal's job."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_stall, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def counting_tool(ran: list[str], *, updates: int = 0) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        for step in range(updates):
            on_update(AgentToolResult(content=f"step {step}"))
        ran.append(call_id)
        return AgentToolResult(content="counted")

    return AgentTool("count", "count", "counts", SCHEMA, execute)


def start(fm: FauxModel, tools: list[AgentTool], signal: AbortSignal | None = None) -> Any:
    context = AgentContext("sys", [], tools)
    config = AgentLoopConfig(model=fm.model)
    return agent_loop([UserMessage("go")], context, config, signal, fm.stream_fn)


async def test_result_without_reading_the_events_still_runs_every_tool() -> None:
    # test_run_event_stream_handler_unconsumed_still_executes_tool_calls
    ran: list[str] = []
    calls = [faux_tool_call("count", {}, id="a"), faux_tool_call("count", {}, id="b")]
    fm = FauxModel([faux_message(*calls), "two counted"])

    messages = await asyncio.wait_for(start(fm, [counting_tool(ran)]).result(), 10)

    assert ran == ["a", "b"]
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert text_of(messages[-1].content) == "two counted"


async def test_a_consumer_that_stops_reading_early_does_not_stop_the_run() -> None:
    # test_stream_text_early_break_cleanup / test_run_stream_events_break_cleanup: here the
    # run goes on to its end, every call answered
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("count", {}, id="a")), "done"])
    stream = start(fm, [counting_tool(ran)])
    async for event in stream:
        if event.type == "message_end":
            break

    messages = await asyncio.wait_for(stream.result(), 10)

    assert ran == ["a"] and text_of(messages[-1].content) == "done"


async def test_aborting_the_signal_is_how_a_consumer_stops_the_run() -> None:
    # test_run_stream_cancel and _all_messages_includes_interrupted_response: the partial
    # answer is kept as the aborted message, and the model is not called again
    signal = AbortSignal()
    fm = FauxModel([faux_stall(after_chunks=2, response="Once upon a time there was")])
    stream = start(fm, [], signal)
    events: list[AgentEvent] = []
    async for event in stream:
        events.append(event)
        if event.type == "message_update":
            signal.abort("the user left")

    messages = await stream.result()
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "aborted"
    answer = messages[-1]
    assert isinstance(answer, AssistantMessage) and answer.stop_reason == "aborted"
    assert text_of(answer.content).startswith("Once")
    assert fm.call_count == 1


async def test_a_call_is_announced_before_it_runs_and_its_result_after() -> None:
    # test_event_ordering_call_before_result, test_function_tool_event_tool_call_id_properties
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("count", {"n": 1}, id="call-7")), "done"])
    events = [e async for e in start(fm, [counting_tool(ran, updates=2)])]

    def index(kind: type, role: str | None = None) -> int:
        return next(
            i
            for i, e in enumerate(events)
            if isinstance(e, kind) and (role is None or e.message.role == role)  # type: ignore[attr-defined]
        )

    assistant_end = index(MessageEndEvent, "assistant")
    tool_start = index(ToolExecutionStartEvent)
    tool_end = index(ToolExecutionEndEvent)
    result_start = index(MessageStartEvent, "toolResult")
    assert assistant_end < tool_start < tool_end < result_start

    for_the_call = [
        e
        for e in events
        if isinstance(e, ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent)
    ]
    assert [type(e).__name__ for e in for_the_call] == [
        "ToolExecutionStartEvent",
        "ToolExecutionUpdateEvent",
        "ToolExecutionUpdateEvent",
        "ToolExecutionEndEvent",
    ]
    assert {e.tool_call_id for e in for_the_call} == {"call-7"}
    assert for_the_call[0].args == {"n": 1}  # type: ignore[union-attr]
    result = events[result_start].message  # type: ignore[attr-defined]
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == "call-7"


async def test_a_call_of_an_unknown_tool_gets_its_events_and_an_error_result() -> None:
    # test_unknown_tool_call_events, test_streamed_tool_not_found_behavior_returns_error_to_model
    fm = FauxModel([faux_message(faux_tool_call("missing", {}, id="x")), "sorry"])
    events = [e async for e in start(fm, [counting_tool([])])]

    starts = [e for e in events if isinstance(e, ToolExecutionStartEvent)]
    ends = [e for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert [(e.tool_call_id, e.tool_name) for e in starts] == [("x", "missing")]
    assert len(ends) == 1 and ends[0].is_error
    assert text_of(ends[0].result.content) == 'Tool "missing" not found. Available tools: count'
    assert fm.call_count == 2  # the model read the error and answered
