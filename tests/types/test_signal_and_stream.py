"""AbortSignal (child signals, any thread) and EventStream (always ends, single consumer)."""

from __future__ import annotations

import asyncio
import threading

from yiemagent import AbortSignal, EventStream


def test_abort_is_idempotent_and_keeps_the_first_reason() -> None:
    signal = AbortSignal()
    signal.abort("first")
    signal.abort("second")
    assert signal.aborted and signal.reason == "first"


def test_child_follows_parent_but_not_the_other_way() -> None:
    parent = AbortSignal()
    child_a, child_b = parent.child(), parent.child()
    child_a.abort("only me")
    assert child_a.aborted and not parent.aborted and not child_b.aborted
    parent.abort("all")
    assert child_b.aborted and child_b.reason == "all"


def test_child_of_an_aborted_parent_starts_aborted() -> None:
    parent = AbortSignal()
    parent.abort()
    assert parent.child().aborted


async def test_wait_wakes_when_aborted_from_another_thread() -> None:
    signal = AbortSignal()
    timer = threading.Timer(0.05, signal.abort, args=("from thread",))
    timer.start()
    reason = await asyncio.wait_for(signal.wait(), timeout=2)
    assert reason == "from thread"


async def test_event_stream_yields_in_order_and_ends_with_a_result() -> None:
    stream: EventStream[int, str] = EventStream()

    async def produce() -> None:
        for i in range(3):
            stream.push(i)
            await asyncio.sleep(0)
        stream.end("done")

    task = asyncio.create_task(produce())
    seen = [event async for event in stream]
    await task
    assert seen == [0, 1, 2]
    assert await stream.result() == "done"


async def test_event_stream_final_event_ends_it_and_later_pushes_are_ignored() -> None:
    stream: EventStream[str, str] = EventStream(lambda e: e == "end", lambda e: e.upper())
    stream.push("a")
    stream.push("end")
    stream.push("late")
    assert [e async for e in stream] == ["a", "end"]
    assert await stream.result() == "END"


async def test_result_can_be_awaited_before_the_end() -> None:
    stream: EventStream[int, int] = EventStream()
    waiter = asyncio.create_task(stream.result())
    await asyncio.sleep(0)
    stream.end(7)
    assert await waiter == 7
