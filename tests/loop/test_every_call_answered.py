"""DESIGN R-4.1: every tool call gets exactly one result, in source order, on every path;
empty or repeated ids are made unique in the message itself; nothing raises."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import yiemagent.loop._tool_calls as batches
from tests.loop._kit import (
    MODEL,
    Recorder,
    call,
    make_tool,
    message,
    run_batch,
    texts,
)
from yiemagent import (
    AbortSignal,
    AfterToolCallContext,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    TextContent,
    ToolCall,
    execute_tool_calls,
)
from yiemagent.loop import fail_tool_calls
from yiemagent.types import ensure_unique_tool_call_ids

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def every_path_tools(signal: AbortSignal) -> list[Any]:
    async def raises(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        raise OSError("no such file")

    async def slow(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        await asyncio.sleep(2)
        return "never"

    async def aborter(tool_call_id: str, args: Any, s: Any, on_update: Any) -> str:
        signal.abort("user")
        return "aborted the run"

    return [
        make_tool("ok", parallel=False),
        make_tool("strict", schema=SCHEMA, parallel=False),
        make_tool("raises", raises, parallel=False),
        make_tool("slow", slow, timeout_s=0.05, parallel=False),
        make_tool("blocked", parallel=False),
        make_tool("after_fails", parallel=False),
        make_tool("aborter", aborter, parallel=False),
    ]


def before(ctx: BeforeToolCallContext, s: AbortSignal) -> BeforeToolCallResult | None:
    return BeforeToolCallResult(block=True) if ctx.tool_call.name == "blocked" else None


def after(ctx: AfterToolCallContext, s: AbortSignal) -> None:
    if ctx.tool_call.name == "after_fails":
        raise RuntimeError("after hook failed")


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_r4_1_every_path_gets_exactly_one_result_in_order(mode: str) -> None:
    signal = AbortSignal()
    calls = [
        call("ok", id="1"),
        call("nope", id="2"),
        call("strict", {"n": "x"}, id="3"),
        call("raises", id="4"),
        call("slow", id="5"),
        call("blocked", id="6"),
        call("after_fails", id="7"),
        call("aborter", id="8"),
        call("ok", id="9"),
    ]
    batch, rec, _ = await run_batch(
        every_path_tools(signal),
        *calls,
        signal=signal,
        tool_execution=mode,
        before_tool_call=before,
        after_tool_call=after,
    )
    ids = [str(i) for i in range(1, 10)]
    assert [m.tool_call_id for m in batch.messages] == ids
    assert [m.tool_name for m in batch.messages] == [c.name for c in calls]
    got = texts(batch)
    assert got[0] == "ok ok"
    assert got[1].startswith('Tool "nope" not found')
    assert got[2].startswith('Invalid arguments for tool "strict"')
    assert got[3] == "no such file"
    assert got[4] == "Tool slow timed out after 0.05 s"
    assert got[5] == "Tool execution was blocked"
    assert got[6] == "after hook failed"
    assert got[7] == "aborted the run"
    assert got[8] == "Tool call skipped: the run was aborted"
    assert [m.is_error for m in batch.messages] == [False, *[True] * 6, False, True]
    for kind in ("tool_execution_start", "tool_execution_end", "message_start", "message_end"):
        seen = [getattr(e, "tool_call_id", None) or e.message.tool_call_id for e in rec.of(kind)]
        assert sorted(seen) == ids, kind


async def test_r4_1_empty_and_repeated_ids_are_rewritten_in_the_message_first() -> None:
    calls = [
        call("ok", id=""),
        call("ok", id="a"),
        call("ok", id="a"),
        call("ok", id="a_2"),
        call("ok", id=""),
    ]
    batch, rec, msg = await run_batch([make_tool("ok")], *calls)
    new_ids = [c.id for c in msg.tool_calls]
    assert new_ids == ["call_1", "a", "a_3", "a_2", "call_5"]
    assert len(set(new_ids)) == 5
    assert [m.tool_call_id for m in batch.messages] == new_ids
    assert [e.tool_call_id for e in rec.of("tool_execution_start")] == new_ids


def test_r4_1_ensure_unique_ids_leaves_good_ids_alone_and_avoids_collisions() -> None:
    good = message(call("a", id="x"), call("b", id="y"))
    ensure_unique_tool_call_ids(good)
    assert [c.id for c in good.tool_calls] == ["x", "y"]
    tricky = message(call("a", id="call_2"), call("b", id=""), call("c", id="call_2"))
    ensure_unique_tool_call_ids(tricky)
    ids = [c.id for c in tricky.tool_calls]
    assert ids[0] == "call_2" and len(set(ids)) == 3 and all(ids)


async def test_r4_1_fail_tool_calls_answers_each_call_with_all_events() -> None:
    rec = Recorder()
    calls = [call("a", id="1"), call("b", id="2")]
    batch = await fail_tool_calls(
        calls, "not executed: the response hit the output token limit", rec
    )
    assert [m.tool_call_id for m in batch.messages] == ["1", "2"]
    assert all(m.is_error for m in batch.messages) and not batch.terminate
    assert texts(batch) == ["not executed: the response hit the output token limit"] * 2
    assert (
        rec.kinds()
        == ["tool_execution_start", "tool_execution_end", "message_start", "message_end"] * 2
    )


async def test_r4_1_a_bug_inside_the_pipeline_still_answers_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug in the pipeline")

    monkeypatch.setattr(batches, "_execute", broken)  # what a batch runs each call with
    for mode in ("sequential", "parallel"):
        batch, rec, _ = await run_batch(
            [make_tool("ok")],
            call("ok", id="1"),
            call("missing", id="2"),
            call("ok", id="3"),
            tool_execution=mode,
        )
        assert [m.tool_call_id for m in batch.messages] == ["1", "2", "3"]
        bug = "Tool call failed: internal error: bug in the pipeline"
        assert texts(batch)[0] == bug and texts(batch)[2] == bug
        assert texts(batch)[1].startswith('Tool "missing" not found')
        for kind in ("tool_execution_start", "tool_execution_end", "message_end"):
            seen = [
                getattr(e, "tool_call_id", None) or e.message.tool_call_id for e in rec.of(kind)
            ]
            assert sorted(seen) == ["1", "2", "3"], (mode, kind)


async def test_r4_1_a_bug_in_the_schedule_still_answers_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = batches.create_tool_result_message
    calls_made: list[int] = []

    def broken_once(finalized: Any, *rest: Any) -> Any:
        calls_made.append(1)
        if len(calls_made) == 2:
            raise RuntimeError("bug while publishing")
        return real(finalized, *rest)

    monkeypatch.setattr(batches, "create_tool_result_message", broken_once)
    for mode in ("sequential", "parallel"):
        calls_made.clear()
        batch, rec, _ = await run_batch(
            [make_tool("ok")], *(call("ok", id=str(i)) for i in range(1, 5)), tool_execution=mode
        )
        assert [m.tool_call_id for m in batch.messages] == ["1", "2", "3", "4"]
        assert texts(batch)[0] == "ok ok"
        for kind in ("tool_execution_start", "tool_execution_end", "message_end"):
            seen = [
                getattr(e, "tool_call_id", None) or e.message.tool_call_id for e in rec.of(kind)
            ]
            assert sorted(seen) == ["1", "2", "3", "4"], (mode, kind)


async def test_r4_1_a_raising_event_sink_changes_nothing() -> None:
    def sink(event: AgentEvent) -> None:
        raise ValueError("listener bug")

    msg = message(call("ok", id="1"), call("ok", id="2"))
    batch = await execute_tool_calls(
        AgentContext(tools=[make_tool("ok")]),
        msg,
        AgentLoopConfig(model=MODEL),
        AbortSignal(),
        sink,
    )
    assert texts(batch) == ["ok ok", "ok ok"]


async def test_r4_1_no_tool_calls_is_an_empty_batch() -> None:
    rec = Recorder()
    msg = message()
    msg.content = [TextContent("just text")]
    batch = await execute_tool_calls(
        AgentContext(), msg, AgentLoopConfig(model=MODEL), AbortSignal(), rec
    )
    assert batch.messages == [] and not batch.terminate and rec.events == []


async def test_r4_1_non_dict_arguments_get_an_error_result_not_an_exception() -> None:
    weird = ToolCall(id="w", name="ok", arguments="[1, 2]")  # type: ignore[arg-type]
    batch, _, _ = await run_batch([make_tool("ok")], weird)
    assert batch.messages[0].is_error and "must be a JSON object" in texts(batch)[0]
