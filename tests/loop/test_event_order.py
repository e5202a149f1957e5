"""DESIGN R-5.1 / R-5.1b: the exact event order of a run, and a sink that raises."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from yiemagent import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    UserMessage,
    agent_loop,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def echo_tool(calls: list[dict[str, Any]]) -> AgentTool:
    def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        calls.append(args)
        on_update(AgentToolResult.text("working"))
        return f"echo: {args.get('text')}"

    return AgentTool("echo", "Echo", "Echoes its text", SCHEMA, execute)


def collapse(events: list[AgentEvent]) -> list[str]:
    """Event types, with runs of message_update / tool_execution_update written once + '*'."""
    out: list[str] = []
    for event in events:
        name = event.type
        if name in ("message_update", "tool_execution_update"):
            name += "*"
            if out and out[-1] == name:
                continue
        out.append(name)
    return out


def tool_then_answer() -> FauxModel:
    return FauxModel(
        [faux_message(faux_tool_call("echo", {"text": "hi"}, id="c1")), "All done here."]
    )


async def test_r5_1_event_order_one_prompt_one_tool_call_then_answer() -> None:
    calls: list[dict[str, Any]] = []
    fm = tool_then_answer()
    context = AgentContext("sys", [], [echo_tool(calls)])
    stream = agent_loop(
        [UserMessage("go")], context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn
    )
    events = [event async for event in stream]

    assert collapse(events) == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update*",
        "message_end",
        "tool_execution_start",
        "tool_execution_update*",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_update*",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    roles = [e.message.role for e in events if e.type == "message_end"]  # type: ignore[union-attr]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert calls == [{"text": "hi"}]
    messages = await stream.result()
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert context.messages == messages
    end = events[-1]
    assert end.type == "agent_end" and end.reason == "stop" and end.messages == messages
    turn_ends = [e for e in events if e.type == "turn_end"]
    assert [len(e.tool_results) for e in turn_ends] == [1, 0]  # type: ignore[union-attr]
    assert turn_ends[0].tool_results[0].tool_call_id == "c1"  # type: ignore[union-attr]


async def test_r5_1_message_updates_carry_the_growing_partial() -> None:
    fm = FauxModel(["abcdefghijkl"], chunk_size=4, delay_s=0.001)
    events: list[AgentEvent] = []
    snapshots: list[str] = []
    deltas: list[str] = []

    def sink(event: AgentEvent) -> None:
        events.append(event)
        if event.type == "message_update":
            snapshots.append(event.message.text)
            if event.assistant_message_event.type == "text_delta":
                deltas.append(event.assistant_message_event.delta)

    await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=fm.model),
        sink,
        stream_fn=fm.stream_fn,
    )
    assert snapshots[-1] == "abcdefghijkl"
    assert "abcd" in snapshots and "abcdefgh" in snapshots
    assert deltas == ["abcd", "efgh", "ijkl"]
    final = [e for e in events if e.type == "message_end"][-1]
    assert final.message.text == "abcdefghijkl"  # type: ignore[union-attr]
    assert final.message.stop_reason == "stop"  # type: ignore[union-attr]


async def test_r5_1b_emit_that_raises_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[dict[str, Any]] = []
    fm = tool_then_answer()
    seen: list[str] = []

    def bad_sink(event: AgentEvent) -> None:
        seen.append(event.type)
        raise RuntimeError("sink broke")

    context = AgentContext("sys", [], [echo_tool(calls)])
    with caplog.at_level(logging.ERROR):
        messages = await run_agent_loop(
            [UserMessage("go")],
            context,
            AgentLoopConfig(model=fm.model),
            bad_sink,
            stream_fn=fm.stream_fn,
        )
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert calls == [{"text": "hi"}]
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"
    assert "tool_execution_end" in seen
    assert "turn_end" in caplog.text and "sink broke" in caplog.text


async def test_r5_1b_async_emit_is_awaited_in_order() -> None:
    fm = FauxModel(["hello"])
    order: list[str] = []

    async def sink(event: AgentEvent) -> None:
        order.append(event.type)

    await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=fm.model),
        sink,
        stream_fn=fm.stream_fn,
    )
    assert order[0] == "agent_start" and order[-1] == "agent_end"
    assert order.index("turn_end") == len(order) - 2


async def test_r5_1b_async_emit_raising_after_it_awaited_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The tool-call events are handed to a sink at once and awaited only when it returns an
    awaitable: one that raises after its first await is logged like any other."""
    calls: list[dict[str, Any]] = []
    fm = tool_then_answer()
    seen: list[str] = []

    async def sink(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)
        if event.type.startswith(("tool_execution", "message")):
            raise RuntimeError(f"late break on {event.type}")

    context = AgentContext("sys", [], [echo_tool(calls)])
    with caplog.at_level(logging.ERROR):
        messages = await run_agent_loop(
            [UserMessage("go")], context, AgentLoopConfig(model=fm.model), sink,
            stream_fn=fm.stream_fn,
        )  # fmt: skip
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert calls == [{"text": "hi"}]
    tool_part = seen[seen.index("tool_execution_start") : seen.index("turn_end", 3)]
    assert [t for t in tool_part if t != "tool_execution_update"] == [
        "tool_execution_start", "tool_execution_end", "message_start", "message_end"
    ]  # fmt: skip
    for kind in ("tool_execution_start", "tool_execution_end", "message_end"):
        assert f"late break on {kind}" in caplog.text


async def test_r5_1_two_prompts_both_announced_in_the_first_turn() -> None:
    fm = FauxModel([faux_message(faux_text("ok"))])
    stream = agent_loop(
        [UserMessage("one"), UserMessage("two")],
        AgentContext(),
        AgentLoopConfig(model=fm.model),
        stream_fn=fm.stream_fn,
    )
    events = [event async for event in stream]
    assert collapse(events)[:7] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "message_start",
    ]
    assert [m.content[0].text for m in fm.contexts[0].messages] == ["one", "two"]
