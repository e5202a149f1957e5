"""The tool pipeline through the whole loop (`agent_loop` + the faux model): event order
(R-5.1), parallel timing, abort while a tool runs, and the faux fault
presets that reach the pipeline."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.loop._kit import make_tool, sleeper
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_duplicate_id_calls,
    faux_malformed_tool_call,
    faux_message,
    faux_tool_call,
    faux_truncated_tool_call,
)
from yiemagent.types import text_of


async def run(
    fm: FauxModel, tools: list[AgentTool], signal: AbortSignal | None = None, **config: Any
) -> tuple[list[Any], list[Any]]:
    stream = agent_loop(
        [UserMessage("go")],
        AgentContext("sys", [], tools),
        AgentLoopConfig(model=fm.model, **config),
        signal=signal,
        stream_fn=fm.stream_fn,
    )
    events = [event async for event in stream]
    return events, await stream.result()


def results_of(messages: list[Any]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_r5_1_tool_events_sit_between_the_assistant_message_and_turn_end() -> None:
    async def progress(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("half"))
        await asyncio.sleep(0)
        return "whole"

    fm = FauxModel([faux_message("calling", faux_tool_call("p", {}, id="c1")), "answer"])
    events, messages = await run(fm, [make_tool("p", progress)])
    kinds = [e.type for e in events]
    first_turn = kinds[: kinds.index("turn_end") + 1]
    tail = first_turn[first_turn.index("tool_execution_start") :]
    assert tail == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
    ]
    assert first_turn[first_turn.index("tool_execution_start") - 1] == "message_end"  # assistant
    assert [text_of(r.content) for r in results_of(messages)] == ["whole"]
    turn_end = next(e for e in events if e.type == "turn_end")
    assert [r.tool_call_id for r in turn_end.tool_results] == ["c1"]
    tool_result_context = fm.contexts[1].messages[-1]
    assert isinstance(tool_result_context, ToolResultMessage)
    assert tool_result_context.tool_call_id == "c1"


async def test_r4_9_parallel_through_the_loop_overlaps_and_keeps_source_order() -> None:
    tools = [sleeper("slow", 0.6), sleeper("fast", 0.15, plain=True), sleeper("mid", 0.3)]
    calls = [faux_tool_call(n, {}, id=n) for n in ("slow", "fast", "mid")]
    fm = FauxModel([faux_message(*calls), "done"])
    start = time.perf_counter()
    events, messages = await run(fm, tools)
    assert time.perf_counter() - start < 0.95  # one after another: 1.05 s
    ends = [e.tool_call_id for e in events if e.type == "tool_execution_end"]
    assert ends == ["fast", "mid", "slow"]
    assert [r.tool_call_id for r in results_of(messages)] == ["slow", "fast", "mid"]


async def test_r4_5_abort_while_a_tool_runs_ends_the_run_with_every_call_answered() -> None:
    signal = AbortSignal()

    async def waits(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        signal.abort("user pressed stop")
        await s.wait()
        return "stopped cleanly"

    fm = FauxModel(
        [
            faux_message(faux_tool_call("w", {}, id="1"), faux_tool_call("w", {}, id="2")),
            "never asked",
        ]
    )
    events, messages = await run(fm, [make_tool("w", waits, parallel=False)], signal)
    assert [text_of(r.content) for r in results_of(messages)] == [
        "stopped cleanly",
        "Tool call skipped: the run was aborted",
    ]
    assert fm.call_count == 1  # no model call after the abort
    assert events[-1].type == "agent_end" and events[-1].reason == "aborted"


async def test_r4_1_faux_fault_presets_reach_the_pipeline_and_every_call_is_answered() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = make_tool("t", schema=schema)
    fm = FauxModel(
        [
            faux_duplicate_id_calls("t", [{"n": 1}, {"n": 2}], id="dup"),
            faux_malformed_tool_call("t", '{"n": '),
            faux_truncated_tool_call("t", {"n": 12345}, id="cut"),
            "done",
        ]
    )
    _, messages = await run(fm, [tool])
    results = results_of(messages)
    assert [r.tool_call_id for r in results[:2]] == ["dup", "dup_2"]
    assert [text_of(r.content) for r in results[:2]] == ["ok t", "ok t"]
    assert results[2].is_error and 'Invalid arguments for tool "t"' in text_of(results[2].content)
    assert results[3].tool_call_id == "cut" and results[3].is_error
    assert "output token limit" in text_of(results[3].content)
    assert fm.call_count == 4


async def test_r4_1_tool_calls_of_an_errored_message_are_answered_not_run() -> None:
    ran: list[str] = []

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(tool_call_id)
        return "ran"

    broken = faux_message(
        faux_tool_call("t", {}, id="e1"), stop_reason="error", error_message="connection reset"
    )
    fm = FauxModel([broken])
    events, messages = await run(fm, [make_tool("t", execute)])
    results = results_of(messages)
    assert ran == []
    assert [r.tool_call_id for r in results] == ["e1"] and results[0].is_error
    assert [e.tool_call_id for e in events if e.type == "tool_execution_end"] == ["e1"]
    assert events[-1].type == "agent_end" and events[-1].reason == "error"
