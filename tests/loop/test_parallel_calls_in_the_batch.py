"""DESIGN R-4.9, §9: a parallel batch starts each call in the batch's own task and makes an
asyncio Task only for the calls after the first one that waits (`loop.tasks.run_concurrently`).
What a Task per call gave must hold all the same: the calls wait on one another freely, a
context variable one call sets is seen by no other call nor the caller, `asyncio.timeout` and
`TaskGroup` inside a tool, the call timeout, the abort grace and the run's cancellation each
end what they should and nothing else, and every call runs once, its end event in the order
the tools returned."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import yiemagent.loop._execution as deadline
from tests.loop._kit import MODEL, Recorder, call, make_tool, message, run_batch, texts
from yiemagent import AbortSignal, AgentContext, AgentLoopConfig, execute_tool_calls
from yiemagent.loop._tool_calls import run_concurrently

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def ids_of(rec: Recorder, kind: str) -> list[str]:
    return [e.tool_call_id if kind.startswith("tool") else e.message.tool_call_id
            for e in rec.of(kind)]  # fmt: skip


async def test_parallel_async_tools_can_wait_on_one_another() -> None:
    """Six tools that can only finish together: none may wait for another to end first."""
    barrier = asyncio.Barrier(6)

    async def meet(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.wait_for(barrier.wait(), 5)
        return f"{tool_call_id} met"

    async def quick(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return f"{tool_call_id} quick"

    tools = [make_tool("meet", meet), make_tool("quick", quick)]
    calls = [call("quick", id="q0")] + [call("meet", id=f"m{i}") for i in range(6)]
    calls.insert(3, call("quick", id="q1"))
    batch, rec, _ = await run_batch(tools, *calls)
    assert texts(batch) == [f"{c.id} {'quick' if c.name == 'quick' else 'met'}" for c in calls]
    assert ids_of(rec, "tool_execution_end")[:1] == ["q0"]
    assert ids_of(rec, "message_end") == [c.id for c in calls]


async def test_a_context_variable_one_parallel_tool_sets_is_seen_by_no_other() -> None:
    WHO.set("caller")
    seen: dict[str, list[str]] = {}

    def tool(steps: int) -> Any:
        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            seen[tool_call_id] = [WHO.get()]
            WHO.set(tool_call_id)
            for _ in range(steps):
                await asyncio.sleep(0)
                seen[tool_call_id].append(WHO.get())
            return WHO.get()

        return execute

    tools = [make_tool("now", tool(0)), make_tool("later", tool(3))]
    calls = [call("now", id="n0"), call("later", id="l1"), call("now", id="n2"),
             call("later", id="l3")]  # fmt: skip
    batch, _, _ = await run_batch(tools, *calls)
    assert texts(batch) == ["n0", "l1", "n2", "l3"]
    for c in calls:  # each starts with the caller's value and keeps its own
        assert seen[c.id] == ["caller"] + [c.id] * (0 if c.name == "now" else 3)
    assert WHO.get() == "caller"


async def test_asyncio_timeout_and_task_group_in_parallel_tools_end_only_their_tool() -> None:
    async def times_out(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out inside"
        return "slept"

    async def group(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        async def fail() -> None:
            await asyncio.sleep(0.02)
            raise ValueError("child failed")

        async with asyncio.TaskGroup() as tg:
            tg.create_task(asyncio.sleep(10))
            tg.create_task(fail())
        return "no error"

    async def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(0.2)
        return "slow done"

    tools = [make_tool("t", times_out), make_tool("g", group), make_tool("s", slow)]
    tools.append(make_tool("ok"))
    for order in (["ok", "t", "g", "s"], ["g", "t", "s", "ok"], ["s", "ok", "g", "t"]):
        calls = [call(name, id=f"{name}{i}") for i, name in enumerate(order)]
        started = time.monotonic()
        batch, _, _ = await run_batch(tools, *calls)
        want = {"t": "timed out inside", "s": "slow done", "ok": "ok ok",
                "g": "child failed"}  # the error inside the group  # fmt: skip
        assert texts(batch) == [want[name] for name in order], order
        assert [m.is_error for m in batch.messages] == [name == "g" for name in order]
        assert time.monotonic() - started < 5


async def test_the_call_timeout_ends_each_hung_parallel_tool_and_no_other() -> None:
    async def hang(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.Event().wait()
        return "never"

    tools = [make_tool("hang", hang), make_tool("ok")]
    calls = [call("ok", id="a"), call("hang", id="b"), call("hang", id="c"), call("ok", id="d")]
    started = time.monotonic()
    batch, rec, _ = await run_batch(tools, *calls, tool_timeout_s=0.1)
    hung = "Tool hang timed out after 0.1 s"
    assert texts(batch) == ["ok ok", hung, hung, "ok ok"]
    assert ids_of(rec, "tool_execution_end")[:2] == ["a", "d"]
    assert time.monotonic() - started < 5


async def test_the_abort_grace_abandons_each_parallel_tool_that_ignores_the_abort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)

    async def deaf(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(10)
        return "never"

    async def listens(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        await s.wait()
        return "stopped"

    signal = AbortSignal()
    asyncio.get_running_loop().call_later(0.05, signal.abort)
    tools = [make_tool("deaf", deaf), make_tool("listens", listens), make_tool("ok")]
    calls = [call("deaf", id="a"), call("ok", id="b"), call("listens", id="c"),
             call("deaf", id="d")]  # fmt: skip
    started = time.monotonic()
    batch, _, _ = await run_batch(tools, *calls, signal=signal)
    abandoned = "Operation aborted: tool deaf did not stop within 0.1 s"
    assert texts(batch) == [abandoned, "ok ok", "stopped", abandoned]
    assert time.monotonic() - started < 5


async def test_cancelling_the_run_cancels_every_waiting_parallel_tool() -> None:
    cancelled: list[str] = []
    waiting = asyncio.Event()

    async def hang(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        try:
            waiting.set()
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(tool_call_id)
            raise
        return "never"

    answered: list[Any] = []
    msg = message(call("ok", id="a"), call("hang", id="b"), call("hang", id="c"))
    run = asyncio.ensure_future(
        execute_tool_calls(
            AgentContext(tools=[make_tool("hang", hang), make_tool("ok")]),
            msg,
            AgentLoopConfig(model=MODEL, tool_execution="parallel"),
            AbortSignal(),
            Recorder(),
            answered=answered,
        )
    )
    await asyncio.wait_for(waiting.wait(), 5)
    await asyncio.sleep(0.02)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    for _ in range(10):
        await asyncio.sleep(0)
    assert sorted(cancelled) == ["b", "c"]
    assert [m.tool_call_id for m in answered] == ["a", "b", "c"]
    assert [m.is_error for m in answered] == [False, True, True]


# ── run_concurrently itself ──────────────────────────────────────────────────

BEHAVIOURS = st.one_of(
    st.just(("return", 0)),
    st.just(("raise", 0)),
    st.tuples(st.sampled_from(["return", "raise"]), st.integers(1, 4)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BEHAVIOURS, min_size=1, max_size=8))
def test_run_concurrently_runs_each_coroutine_once_and_raises_the_first_failure(
    behaviours: list[tuple[str, int]],
) -> None:
    """Each created coroutine runs to its end exactly once (those after a failure that came
    before any wait are never created); the failure raised is the first the caller sees (one
    before any wait, else the one it drives, else a Task's); only the coroutines
    after the first one that waits get a Task."""

    async def main() -> None:
        created: list[int] = []
        ended: list[int] = []
        tasks: list[asyncio.Task[None]] = []

        async def body(i: int, outcome: str, steps: int) -> None:
            for _ in range(steps):
                await asyncio.sleep(0)
            ended.append(i)
            if outcome == "raise":
                raise ValueError(i)

        def coroutines() -> Any:
            for i, (outcome, steps) in enumerate(behaviours):
                created.append(i)
                c: Coroutine[Any, Any, None] = body(i, outcome, steps)
                yield c

        raised: int | None = None
        try:
            await run_concurrently(coroutines(), tasks)
        except ValueError as exc:
            raised = exc.args[0]
        await asyncio.gather(*tasks, return_exceptions=True)
        assert sorted(ended) == created  # each created one ended, once
        first_wait = next((i for i, (_, s) in enumerate(behaviours) if s), len(behaviours))
        eager_fail = [i for i in range(first_wait) if behaviours[i][0] == "raise"]
        task_fails = [i for i in ended if i > first_wait and behaviours[i][0] == "raise"]
        if eager_fail:  # raised before anything waited: nothing after it was made
            assert raised == eager_fail[0]
            assert created == list(range(raised + 1)) and not tasks
            return
        assert created == list(range(len(behaviours)))
        assert len(tasks) == max(0, len(behaviours) - first_wait - 1)
        if first_wait < len(behaviours) and behaviours[first_wait][0] == "raise":
            assert raised == first_wait  # the one the caller drives: seen first
        elif task_fails:
            assert raised in task_fails  # then a Task's failure
        else:
            assert raised is None

    asyncio.run(main())
