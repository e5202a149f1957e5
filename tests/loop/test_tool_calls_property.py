"""DESIGN R-4.1 as a property: random batches of tools that succeed, raise, are blocked, time
out, send updates late from a thread, or abort the run at a random point, in both modes —
every call gets exactly one result, in source order, ids match, nothing raises."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import yiemagent.loop._execution as deadline
from tests.loop._kit import Recorder, call, make_tool, run_batch
from yiemagent import (
    AbortSignal,
    AgentToolResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)

BEHAVIOURS = [
    "ok",
    "raise",
    "block",
    "timeout",
    "late_update",
    "abort",
    "abort_in_hook",
    "unknown",
    "bad_args",
]


LATE: list[threading.Thread] = []
"""The helper threads of "late_update" tools (joined by `_check`)."""
BATCH_DONE = threading.Event()
"""Set once the batch has returned: a "late_update" tool's thread updates only then."""


def build_tool(index: int, behaviour: str, plain: bool, signal: AbortSignal) -> Any:
    name = f"t{index}"

    async def run_async(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        return act(s, on_update)

    def act(s: AbortSignal, on_update: Any) -> str:
        if behaviour == "raise":
            raise RuntimeError(f"{name} failed")
        if behaviour == "abort":
            signal.abort("random abort")
        if behaviour == "late_update":
            on_update(AgentToolResult.text("early"))

            def late() -> None:
                # After the call's end, whatever the load (a fixed sleep raced it).
                BATCH_DONE.wait(10)
                on_update(AgentToolResult.text("late"))

            thread = threading.Thread(target=late, daemon=True)
            LATE.append(thread)
            thread.start()
        return f"{name} ok"

    def run_plain(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        if behaviour == "timeout":
            time.sleep(TIMEOUT_S * 2)
            return "too late"
        return act(s, on_update)

    async def run_slow(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        await asyncio.sleep(5)
        return "too late"

    execute = run_plain if plain else (run_slow if behaviour == "timeout" else run_async)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return make_tool(name, execute, schema=schema, timeout_s=TIMEOUT_S, parallel=True)


TIMEOUT_S = 0.2
"""Generous against scheduling delays on a loaded 2-core CI machine: a tool that should
succeed must never hit it; only the "timeout" behaviour (which sleeps 2x) does."""


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(BEHAVIOURS), st.booleans()), min_size=1, max_size=6),
    st.sampled_from(["parallel", "sequential"]),
    st.booleans(),
)
def test_r4_1_property_every_call_answered_once_in_order(
    spec: list[tuple[str, bool]], mode: str, reuse_ids: bool
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(deadline, "ABORT_GRACE_S", 0.05)
        asyncio.run(_check(spec, mode, reuse_ids))


async def _check(spec: list[tuple[str, bool]], mode: str, reuse_ids: bool) -> None:
    BATCH_DONE.clear()
    LATE.clear()
    signal = AbortSignal()
    tools = [build_tool(i, b, plain, signal) for i, (b, plain) in enumerate(spec) if b != "unknown"]
    calls = []
    for i, (behaviour, _) in enumerate(spec):
        name = "missing" if behaviour == "unknown" else f"t{i}"
        args = {"n": "not a number"} if behaviour == "bad_args" else {"n": i}
        calls.append(call(name, args, id="same" if reuse_ids else f"c{i}"))

    def before(ctx: BeforeToolCallContext, s: AbortSignal) -> BeforeToolCallResult | None:
        behaviour = spec[int(ctx.tool_call.name[1:])][0]
        if behaviour == "abort_in_hook":
            signal.abort("aborted while preparing")
        return BeforeToolCallResult(block=True) if behaviour == "block" else None

    rec = Recorder()
    start = time.perf_counter()
    batch, _, msg = await run_batch(
        tools, *calls, signal=signal, recorder=rec, tool_execution=mode, before_tool_call=before
    )
    assert time.perf_counter() - start < 2.0
    ids = [c.id for c in msg.tool_calls]
    assert len(set(ids)) == len(ids) and all(ids)
    assert [m.tool_call_id for m in batch.messages] == ids
    assert [m.tool_name for m in batch.messages] == [c.name for c in calls]
    assert all(m.content for m in batch.messages)
    for kind in ("tool_execution_start", "tool_execution_end"):
        assert sorted(e.tool_call_id for e in rec.of(kind)) == sorted(ids)
    assert [e.message.tool_call_id for e in rec.of("message_end")] == ids
    for tc_id in ids:
        own = [e.type for e in rec.events if getattr(e, "tool_call_id", None) == tc_id]
        assert own[0] == "tool_execution_start" and own[-1] == "tool_execution_end"
        assert own.count("tool_execution_end") == 1
    for (behaviour, _), message in zip(spec, batch.messages, strict=True):
        if behaviour in ("raise", "block", "timeout", "unknown", "bad_args", "abort_in_hook"):
            assert message.is_error
    aborts = [i for i, (b, _) in enumerate(spec) if b in ("abort", "abort_in_hook")]
    if aborts and mode == "sequential":  # nothing runs after the abort
        first = aborts[0]
        text = "".join(c.text for c in batch.messages[first].content)
        assert text == (
            "Operation aborted" if spec[first][0] == "abort_in_hook" else f"t{first} ok"
        )
        for message in batch.messages[first + 1 :]:
            assert [c.text for c in message.content] == ["Tool call skipped: the run was aborted"]
    BATCH_DONE.set()  # late updates from helper threads arrive now, and are dropped
    for thread in LATE:
        thread.join(10)
    await asyncio.sleep(0.03)  # what they handed to the event loop runs now
    updates = [e.partial_result.content[0].text for e in rec.of("tool_execution_update")]
    assert "late" not in updates
