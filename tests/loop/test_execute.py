"""DESIGN R-4.5: execute — threads for plain tools, results, exceptions, on_update from any
thread, child signals, timeouts, abort while running."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import pytest

import yiemagent.loop._execution as deadline
from tests.loop._kit import Recorder, call, make_tool, result_text, run_batch, texts
from yiemagent import (
    AbortSignal,
    AgentToolResult,
    ImageContent,
    PreparedToolCall,
    TextContent,
    execute_prepared_tool_call,
)


async def test_r4_5_plain_tools_run_on_a_worker_thread_async_tools_on_the_loop() -> None:
    threads: dict[str, int] = {}

    def plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        threads["plain"] = threading.get_ident()
        return "p"

    async def coro(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        threads["async"] = threading.get_ident()
        return "a"

    batch, _, _ = await run_batch(
        [make_tool("p", plain), make_tool("a", coro)], call("p"), call("a")
    )
    assert texts(batch) == ["p", "a"]
    assert threads["async"] == threading.get_ident()
    assert threads["plain"] != threading.get_ident()


async def test_r4_5_a_plain_tool_does_not_block_the_event_loop() -> None:
    # The tool returns only once the event loop has ticked five times while it runs: run on
    # the loop's thread, it would block the ticker and give up after 10 s (no time margin).
    ticked = threading.Event()

    async def ticker() -> None:
        for _ in range(5):
            await asyncio.sleep(0.01)
        ticked.set()

    def blocking(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "slept" if ticked.wait(10) else "the event loop was blocked"

    task = asyncio.create_task(ticker())
    batch, _, _ = await run_batch([make_tool("b", blocking, parallel=False)], call("b"))
    await task
    assert texts(batch) == ["slept"]


async def test_r4_5_return_values_str_result_and_wrong_type() -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")

    async def rich(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("t"), image], details={"k": 1}, added_tool_names=["z"])

    async def wrong(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return 42

    tools = [make_tool("rich", rich), make_tool("wrong", wrong), make_tool("text")]
    batch, _, _ = await run_batch(tools, call("rich"), call("wrong"), call("text"))
    rich_msg, wrong_msg, text_msg = batch.messages
    assert rich_msg.content == [TextContent("t"), image]
    assert rich_msg.details == {"k": 1} and rich_msg.added_tool_names == ["z"]
    assert not rich_msg.is_error
    assert wrong_msg.is_error and "returned int" in texts(batch)[1]
    assert text_msg.content == [TextContent("ok text")]


async def test_r4_5_exceptions_become_error_results_never_empty() -> None:
    async def raises(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise ValueError("disk full")

    def raises_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError()

    async def cancels_itself(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise asyncio.CancelledError()

    tools = [make_tool("a", raises), make_tool("b", raises_plain), make_tool("c", cancels_itself)]
    for mode in ("parallel", "sequential"):
        batch, _, _ = await run_batch(tools, call("a"), call("b"), call("c"), tool_execution=mode)
        assert texts(batch) == ["disk full", "RuntimeError", "CancelledError"]
        assert all(m.is_error for m in batch.messages)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print myself")


async def test_r4_5_an_exception_group_is_the_texts_of_the_errors_in_it() -> None:
    # griptape#2027, IBM/mcp-context-forge#1902: a tool whose work runs in a TaskGroup (an
    # MCP or HTTP client's) failed with "unhandled errors in a TaskGroup (1 sub-exception)",
    # and the model never learnt what failed. It reads each error in the group, nested
    # groups opened.
    async def fetch(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        async def refused() -> None:
            raise ConnectionError("connection refused by 127.0.0.1:9")

        async with asyncio.TaskGroup() as group:
            group.create_task(refused())
        return "unreachable"

    def several(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        inner = ExceptionGroup("inner", [TimeoutError(), KeyError("id")])
        raise ExceptionGroup("outer", [ValueError("bad page"), inner])

    tools = [make_tool("fetch", fetch), make_tool("several", several)]
    batch, _, _ = await run_batch(tools, call("fetch"), call("several"))
    assert texts(batch) == [
        "connection refused by 127.0.0.1:9",
        "bad page; TimeoutError; KeyError: 'id'",
    ]
    assert all(m.is_error for m in batch.messages)


async def test_r4_5_an_exception_whose_text_cannot_be_read_is_named_by_its_class() -> None:
    # langchain4j#5087's neighbour: a tool error whose message cannot be had must still
    # say what failed. An exception whose __str__ raises was reported as the pipeline's own
    # "internal error" with the unrelated text of the second exception; it is the tool's
    # failure, named by the exception's class.
    def raises(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise _Unprintable()

    batch, _, _ = await run_batch([make_tool("a", raises)], call("a"))
    assert texts(batch) == ["_Unprintable"]
    assert batch.messages[0].is_error


async def test_r4_5_on_update_from_async_tool_emits_update_events_in_order_before_end() -> None:
    async def progress(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        for i in range(3):
            on_update(AgentToolResult.text(f"step {i}"))
            await asyncio.sleep(0)
        return "done"

    _, rec, _ = await run_batch([make_tool("p", progress)], call("p", {"x": 1}))
    updates = rec.of("tool_execution_update")
    assert [result_text(u.partial_result) for u in updates] == ["step 0", "step 1", "step 2"]
    assert all(
        u.tool_call_id == "id_p" and u.tool_name == "p" and u.args == {"x": 1} for u in updates
    )
    kinds = rec.kinds()
    assert kinds.index("tool_execution_end") > max(
        i for i, k in enumerate(kinds) if k == "tool_execution_update"
    )


async def test_r4_5_on_update_from_threads_is_emitted_on_the_loop_and_late_updates_ignored() -> (
    None
):
    late_sent = threading.Event()

    def plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("from worker"))
        helper = threading.Thread(target=lambda: on_update(AgentToolResult.text("from helper")))
        helper.start()
        helper.join()

        def late() -> None:
            time.sleep(0.05)
            on_update(AgentToolResult.text("too late"))
            late_sent.set()

        threading.Thread(target=late).start()
        return "returned"

    rec = Recorder()
    batch, _, _ = await run_batch([make_tool("p", plain)], call("p"), recorder=rec)
    assert await asyncio.to_thread(late_sent.wait, 2)
    await asyncio.sleep(0.02)
    updates = rec.of("tool_execution_update")
    assert [result_text(u.partial_result) for u in updates] == ["from worker", "from helper"]
    loop_thread = threading.get_ident()
    assert set(rec.threads) == {loop_thread}  # the sink is only ever called on the loop
    assert texts(batch) == ["returned"]


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_r4_5_an_update_sent_just_before_a_quick_return_is_emitted_before_the_end(
    mode: str,
) -> None:
    """A plain tool that sends an update and returns at once often finishes while the loop is
    still waking its worker, and the loop then takes the outcome without waiting: the update, sent
    on the worker, is still emitted, before the call's end event."""

    def quick(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text(f"progress {tool_call_id}"))
        return "done"

    calls = [call("q", id=f"c{i}") for i in range(40)]
    for _ in range(5):
        rec = Recorder()
        batch, _, _ = await run_batch(
            [make_tool("q", quick)], *calls, recorder=rec, tool_execution=mode
        )
        assert texts(batch) == ["done"] * 40
        for c in calls:
            mine = [e.type for e in rec.events if getattr(e, "tool_call_id", None) == c.id]
            assert mine == [
                "tool_execution_start", "tool_execution_update", "tool_execution_end"
            ], (c.id, mine)  # fmt: skip


async def test_r4_5_each_call_gets_its_own_child_signal() -> None:
    seen: dict[str, AbortSignal] = {}

    async def selfish(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        seen[tool_call_id] = signal
        signal.abort("only me")
        return "aborted myself"

    async def other(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        seen[tool_call_id] = signal
        return "aborted" if signal.aborted else "fine"

    run_signal = AbortSignal()
    batch, _, _ = await run_batch(
        [make_tool("s", selfish), make_tool("o", other)],
        call("s"),
        call("o"),
        signal=run_signal,
        tool_execution="sequential",
    )
    assert texts(batch) == ["aborted myself", "fine"]
    assert not run_signal.aborted
    assert seen["id_s"] is not run_signal and seen["id_s"] is not seen["id_o"]


@pytest.mark.parametrize("plain", [False, True])
async def test_r4_5_timeout_from_the_tool_aborts_its_signal(plain: bool) -> None:
    observed: dict[str, Any] = {}
    finished = threading.Event()

    async def slow_async(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            observed["cancelled"] = True
            observed["signal_aborted"] = signal.aborted
            raise
        return "never"

    def slow_plain(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        time.sleep(1.5)  # ignores its signal; left to finish
        observed["signal_aborted"] = signal.aborted
        on_update(AgentToolResult.text("late update"))
        finished.set()
        return "late result"

    tool = make_tool("slow", slow_plain if plain else slow_async, timeout_s=0.1)
    start = time.perf_counter()
    batch, rec, _ = await run_batch([tool, make_tool("quick")], call("slow"), call("quick"))
    elapsed = time.perf_counter() - start
    assert texts(batch) == ["Tool slow timed out after 0.1 s", "ok quick"]
    assert batch.messages[0].is_error
    assert elapsed < 1.2  # did not wait for the tool (5 s async, 1.5 s thread)
    if plain:
        assert await asyncio.to_thread(finished.wait, 5)
        await asyncio.sleep(0.02)
        assert rec.of("tool_execution_update") == []  # the late update is dropped
    else:
        assert observed["cancelled"]
    assert observed["signal_aborted"]


async def test_r4_5_config_tool_timeout_applies_and_the_tools_own_wins() -> None:
    batch, _, _ = await run_batch(
        [
            make_tool("a", _sleep_then("a", 0.3)),
            make_tool("b", _sleep_then("b", 0.3), timeout_s=1.0),
        ],
        call("a"),
        call("b"),
        tool_timeout_s=0.05,
    )
    assert texts(batch) == ["Tool a timed out after 0.05 s", "b"]


def _sleep_then(text: str, seconds: float) -> Any:
    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(seconds)
        return text

    return execute


async def test_r4_5_a_tools_own_timeout_error_is_an_ordinary_error() -> None:
    async def raises(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise TimeoutError("upstream timed out")

    batch, _, _ = await run_batch([make_tool("t", raises, timeout_s=5)], call("t"))
    assert texts(batch) == ["upstream timed out"]


async def test_r4_5_abort_while_running_a_cooperative_tool_decides_its_result() -> None:
    signal = AbortSignal()

    async def cooperative(
        tool_call_id: str, args: Any, tool_signal: AbortSignal, on_update: Any
    ) -> str:
        asyncio.get_running_loop().call_later(0.05, signal.abort, "user")
        reason = await tool_signal.wait()
        return f"stopped early ({reason})"

    batch, _, _ = await run_batch([make_tool("c", cooperative)], call("c"), signal=signal)
    assert texts(batch) == ["stopped early (user)"]
    assert not batch.messages[0].is_error


@pytest.mark.parametrize("plain", [False, True])
async def test_r4_5_abort_never_hangs_on_a_tool_that_ignores_it(
    plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    signal = AbortSignal()

    async def stubborn_async(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        await asyncio.sleep(10)
        return "never"

    def stubborn_plain(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        time.sleep(2.0)
        return "late"

    asyncio.get_running_loop().call_later(0.05, signal.abort)
    start = time.perf_counter()
    batch, _, _ = await run_batch(
        [make_tool("s", stubborn_plain if plain else stubborn_async), make_tool("next")],
        call("s"),
        call("next"),
        signal=signal,
        tool_execution="sequential",
    )
    elapsed = time.perf_counter() - start
    assert 0.12 < elapsed < 1.5  # abort at 0.05 s + 0.1 s grace; the tool wanted 2 s
    assert texts(batch) == [
        "Operation aborted: tool s did not stop within 0.1 s",
        "Tool call skipped: the run was aborted",
    ]


@pytest.mark.parametrize("ending", ["timeout", "abort"])
async def test_r4_5_an_async_tool_that_swallows_its_cancellation_is_left_behind(
    ending: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool that catches CancelledError (a retry loop, a bare `except`) kept the batch
    waiting until it chose to return, though its result already said it timed out or was
    abandoned. It is left to finish on its own; its late result goes nowhere."""
    monkeypatch.setattr(deadline, "ABORT_GRACE_S", 0.1)
    release = asyncio.Event()
    finished: list[str] = []

    async def stubborn(tool_call_id: str, args: Any, s: AbortSignal, on_update: Any) -> str:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # swallowed
                await release.wait()
        on_update(AgentToolResult.text("late update"))
        finished.append(tool_call_id)
        return "late result"

    signal = AbortSignal()
    if ending == "abort":
        asyncio.get_running_loop().call_later(0.05, signal.abort)
    tool = make_tool("s", stubborn, timeout_s=0.1 if ending == "timeout" else None)
    running = asyncio.ensure_future(
        run_batch([tool, make_tool("next")], call("s"), call("next"), signal=signal)
    )
    done, _ = await asyncio.wait({running}, timeout=30)  # a hang guard, not a time budget
    release.set()
    assert done, "the batch waited for a tool it had already answered"
    batch, rec, _ = running.result()
    expected = (
        "Tool s timed out after 0.1 s"
        if ending == "timeout"
        else "Operation aborted: tool s did not stop within 0.1 s"
    )
    assert texts(batch) == [expected, "ok next"] and finished == []  # it still ran
    for _ in range(100):
        if finished:
            break
        await asyncio.sleep(0.01)
    assert finished == ["id_s"]
    assert rec.of("tool_execution_update") == []  # its late update is dropped too


async def test_r4_5_execute_prepared_tool_call_directly() -> None:
    tool = make_tool("t", _sleep_then("x", 0.2))
    prepared = PreparedToolCall(tool, call("t"), {})
    rec = Recorder()
    timed_out = await execute_prepared_tool_call(prepared, AbortSignal(), rec, timeout_s=0.02)
    assert timed_out.is_error and result_text(timed_out.result) == "Tool t timed out after 0.02 s"
    done = await execute_prepared_tool_call(prepared, AbortSignal(), rec)
    assert not done.is_error and result_text(done.result) == "x"
    assert rec.events == []  # execute emits only update events


async def test_r4_5_async_callable_objects_and_plain_functions_returning_awaitables() -> None:
    class AsyncCallable:
        async def __call__(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            return f"object on loop: {threading.get_ident() == loop_thread}"

    def returns_coroutine(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return _sleep_then("awaited", 0)(tool_call_id, args, signal, on_update)

    loop_thread = threading.get_ident()
    batch, _, _ = await run_batch(
        [make_tool("o", AsyncCallable()), make_tool("c", returns_coroutine)], call("o"), call("c")
    )
    assert texts(batch) == ["object on loop: True", "awaited"]


async def test_r4_5_cancelling_the_batch_cancels_running_tools() -> None:
    cancelled: list[str] = []

    async def slow(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(tool_call_id)
            raise
        return "never"

    task = asyncio.create_task(
        run_batch([make_tool("a", slow), make_tool("b", slow)], call("a"), call("b"))
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["id_a", "id_b"]
