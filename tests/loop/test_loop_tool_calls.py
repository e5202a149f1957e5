"""DESIGN R-5.3, R-5.6, R-5.7: tool calls inside the loop, truncated and failed messages,
aborts mid-stream and at a turn boundary (every call answered)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    Model,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_duplicate_id_calls,
    faux_message,
    faux_text,
    faux_tool_call,
    faux_truncated_tool_call,
)
from yiemagent.types import AssistantMessageEventStream

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


def counting_tool(calls: list[Any], name: str = "count") -> AgentTool:
    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        calls.append(args)
        return f"counted {args.get('n')}"

    return AgentTool(name, name, "counts", SCHEMA, execute)


async def run(
    fm: FauxModel,
    tools: list[AgentTool],
    signal: AbortSignal | None = None,
    sink: Any = None,
    **config: Any,
) -> tuple[list[AgentEvent], AgentContext]:
    context = AgentContext("sys", [], tools)
    events: list[AgentEvent] = []

    async def emit(event: AgentEvent) -> None:
        events.append(event)
        if sink is not None:
            await sink(event)

    await run_agent_loop(
        [UserMessage("go")],
        context,
        AgentLoopConfig(model=fm.model, **config),
        emit,
        signal,
        fm.stream_fn,
    )
    return events, context


def results(context: AgentContext) -> list[ToolResultMessage]:
    return [m for m in context.messages if isinstance(m, ToolResultMessage)]


def end_reason(events: list[AgentEvent]) -> str:
    end = events[-1]
    assert isinstance(end, AgentEndEvent)
    return end.reason


def assert_every_call_answered(context: AgentContext) -> None:
    """Each call of each assistant message has exactly one result, in order."""
    answered = [m.tool_call_id for m in results(context)]
    asked = [
        c.id for m in context.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert answered == asked and len(set(asked)) == len(asked)


async def test_r5_3_results_join_the_transcript_and_the_new_messages() -> None:
    calls: list[Any] = []
    fm = FauxModel(
        [faux_message(faux_tool_call("count", {"n": 1}), faux_tool_call("count", {"n": 2})), "done"]
    )
    events, context = await run(fm, [counting_tool(calls)])
    assert calls == [{"n": 1}, {"n": 2}]
    assert [m.content[0].text for m in results(context)] == ["counted 1", "counted 2"]
    assert events[-1].messages == context.messages  # type: ignore[union-attr]
    # The second model call saw both results.
    assert [m.role for m in fm.contexts[1].messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
    ]


async def test_r5_3_duplicate_tool_call_ids_are_made_unique_before_the_batch() -> None:
    calls: list[Any] = []
    fm = FauxModel([faux_duplicate_id_calls("count", [{"n": 1}, {"n": 2}, {"n": 3}]), "ok"])
    _, context = await run(fm, [counting_tool(calls)])
    assert len(calls) == 3
    assert_every_call_answered(context)


async def test_r5_6_length_runs_no_tool_call_and_calls_the_model_again() -> None:
    calls: list[Any] = []
    fm = FauxModel([faux_truncated_tool_call("count", {"n": 12345}), "retrying properly"])
    events, context = await run(fm, [counting_tool(calls)])
    assert calls == []
    (result,) = results(context)
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "not executed: the response hit the output token limit; "
        "re-issue the call with complete arguments"
    )
    assert fm.call_count == 2 and end_reason(events) == "stop"
    assert_every_call_answered(context)


async def test_r5_7_error_message_answers_its_tool_calls_and_ends_the_run() -> None:
    calls: list[Any] = []
    broken = faux_message(faux_text("x"), faux_tool_call("count", {"n": 1}), stop_reason="error")
    fm = FauxModel([broken, "never"])
    events, context = await run(fm, [counting_tool(calls)])
    assert calls == [] and fm.call_count == 1
    assert end_reason(events) == "error"
    (result,) = results(context)
    assert result.is_error and "not executed" in result.content[0].text  # type: ignore[union-attr]
    turn_end = [e for e in events if e.type == "turn_end"][-1]
    assert turn_end.tool_results == [result]  # type: ignore[union-attr]
    assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    assert_every_call_answered(context)


async def test_r5_7_abort_mid_stream_ends_the_run_as_aborted() -> None:
    signal = AbortSignal()
    fm = FauxModel(["a long answer that streams slowly " * 4, "never"], chunk_size=2, delay_s=0.002)

    async def abort_on_first_update(event: AgentEvent) -> None:
        if event.type == "message_update":
            signal.abort("user pressed stop")

    events, context = await run(fm, [], signal, abort_on_first_update)
    assert end_reason(events) == "aborted"
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert last.error_message == "Request was aborted: user pressed stop"  # the provider's own
    assert fm.call_count == 1


async def test_r5_7_abort_ends_a_model_call_whose_provider_ignores_it() -> None:
    signal = AbortSignal()
    silent = AssistantMessageEventStream()  # a provider that never answers nor honours aborts

    def stream_fn(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
        asyncio.get_running_loop().call_later(0.05, signal.abort)
        return silent

    context = AgentContext("sys", [], [])
    events: list[AgentEvent] = []
    started = time.perf_counter()
    await run_agent_loop(
        [UserMessage("go")],
        context,
        AgentLoopConfig(model=Model("m", "p", "x")),
        events.append,
        signal,
        stream_fn,
    )
    assert time.perf_counter() - started < 3.0  # the grace after the abort, not the idle limit
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert end_reason(events) == "aborted"


async def test_r5_7_abort_at_a_turn_boundary_makes_no_further_model_call() -> None:
    signal = AbortSignal()

    def aborting(tool_call_id: str, args: Any, signal_: Any, on_update: Any) -> str:
        signal.abort("stop after this tool")
        return "did it"

    tool = AgentTool("count", "count", "aborts the run", SCHEMA, aborting)
    fm = FauxModel([faux_message(faux_tool_call("count", {"n": 1})), "never"])
    events, context = await run(fm, [tool], signal)
    assert fm.call_count == 1
    assert end_reason(events) == "aborted"
    assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    assert_every_call_answered(context)


async def test_r5_7_aborted_before_the_start_calls_no_model() -> None:
    signal = AbortSignal()
    signal.abort()
    fm = FauxModel(["never"])
    events, context = await run(fm, [], signal)
    assert fm.call_count == 0
    assert end_reason(events) == "aborted"
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    types = [e.type for e in events]
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_r5_7_abort_while_a_parallel_batch_runs_answers_every_call() -> None:
    signal = AbortSignal()
    started = asyncio.Event()

    async def slow(tool_call_id: str, args: Any, signal_: AbortSignal, on_update: Any) -> str:
        started.set()
        await signal_.wait()
        return "stopped"

    tool = AgentTool("count", "count", "waits", SCHEMA, slow, parallel=True)
    calls = [faux_tool_call("count", {"n": n}) for n in range(3)]
    fm = FauxModel([faux_message(*calls), "never"])

    async def abort_soon() -> None:
        await started.wait()
        signal.abort()

    aborter = asyncio.create_task(abort_soon())
    events, context = await run(fm, [tool], signal)
    await aborter
    assert fm.call_count == 1 and end_reason(events) == "aborted"
    assert_every_call_answered(context)
