"""DESIGN R-4.2, R-4.5: the worker pool of plain tools (`tool_runs.ToolThreads`) runs every
call exactly once, never more at once than its size (the rest wait in its backlog), hands
each outcome to the loop that asked, and drops the outcome of a call given up on."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent.loop._execution import ToolThreads

CALLS = st.lists(
    st.tuples(st.sampled_from([0.0, 0.0005, 0.002]), st.booleans(), st.booleans()),
    min_size=1,
    max_size=24,
)


class Tally:
    """What the calls did: how often each ran, and how many ran at once at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[int, int] = {}
        self.running = 0
        self.most = 0
        self.threads: set[int] = set()

    def call(self, i: int, seconds: float, fail: bool) -> int:
        with self.lock:
            self.runs[i] = self.runs.get(i, 0) + 1
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(seconds)
            if fail:
                raise ValueError(f"call {i} failed")
            return i
        finally:
            with self.lock:
                self.running -= 1


WAITS = st.sampled_from([0.0, 1e-6, 5e-5, 0.0005, 0.01])
"""`submit`'s `wait_s`: none, shorter than any call, about as long as some, longer."""


async def _submit_all(
    pool: ToolThreads,
    tally: Tally,
    calls: list[tuple[float, bool, bool]],
    base: int,
    wait_s: float = 0.0,
) -> None:
    loop = asyncio.get_running_loop()
    futures = [
        pool.submit(loop, tally.call, base + i, seconds, fail, wait_s=wait_s)
        for i, (seconds, fail, _) in enumerate(calls)
    ]
    # a call the worker finished while `submit` woke it has a settled future: no cancel
    cancelled = [
        cancel and future.cancel() for future, (_, _, cancel) in zip(futures, calls, strict=True)
    ]
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    for i, (outcome, (_, fail, _), cancel) in enumerate(
        zip(outcomes, calls, cancelled, strict=True)
    ):
        if cancel:
            assert isinstance(outcome, asyncio.CancelledError)
        elif fail:
            assert isinstance(outcome, ValueError) and str(outcome) == f"call {base + i} failed"
        else:
            assert outcome == base + i


def _wait_all_ran(tally: Tally, count: int) -> None:
    deadline = time.monotonic() + 20
    while len(tally.runs) < count or tally.running:
        assert time.monotonic() < deadline, f"{len(tally.runs)} of {count} calls ran"
        time.sleep(0.005)


@settings(max_examples=60, deadline=None)
@given(CALLS, st.integers(min_value=1, max_value=4), WAITS, st.booleans())
def test_every_call_runs_exactly_once_within_the_pool_size(
    calls: list[tuple[float, bool, bool]], size: int, wait_s: float, twice: bool
) -> None:
    """Whether `submit` waits for the call or not, and however that wait ends (the call
    done first, the wait first, or both at once)."""
    pool = ToolThreads(size, "test-pool")
    tally = Tally()
    asyncio.run(_submit_all(pool, tally, calls, 0, wait_s))
    if twice:  # again on warm workers, which the wait is for
        _wait_all_ran(tally, len(calls))
        asyncio.run(_submit_all(pool, tally, calls, len(calls), wait_s))
        calls = calls + calls
    _wait_all_ran(tally, len(calls))  # a cancelled call still runs, to its end
    assert tally.runs == {i: 1 for i in range(len(calls))}
    assert tally.most <= size and len(tally.threads) <= size


@settings(max_examples=15, deadline=None)
@given(st.lists(CALLS, min_size=2, max_size=3), st.integers(min_value=1, max_value=3), WAITS)
def test_loops_on_several_threads_share_one_pool(
    batches: list[list[tuple[float, bool, bool]]], size: int, wait_s: float
) -> None:
    """Each loop gets its own outcomes, whichever worker ran them."""
    pool = ToolThreads(size, "test-pool")
    tally = Tally()
    errors: list[BaseException] = []

    def run(calls: list[tuple[float, bool, bool]], base: int) -> None:
        try:
            asyncio.run(_submit_all(pool, tally, calls, base, wait_s))
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(calls, 100 * n)) for n, calls in enumerate(batches)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    total = sum(len(calls) for calls in batches)
    _wait_all_ran(tally, total)
    expected = {100 * n + i: 1 for n, calls in enumerate(batches) for i in range(len(calls))}
    assert tally.runs == expected
    assert tally.most <= size and len(tally.threads) <= size


def test_an_outcome_for_a_closed_loop_is_dropped() -> None:
    """A call still running when its loop is closed: the worker drops the outcome and goes
    on to the next call."""
    pool = ToolThreads(1, "test-pool")
    release = threading.Event()

    async def leave_one_running() -> None:
        pool.submit(asyncio.get_running_loop(), release.wait, 10)

    asyncio.run(leave_one_running())
    release.set()

    async def next_call() -> Any:
        return await asyncio.wait_for(pool.submit(asyncio.get_running_loop(), sum, [1, 2]), 10)

    assert asyncio.run(next_call()) == 3


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_each_loop_s_inbox_is_closed_with_its_loop() -> None:
    """Each loop that submits gets an inbox descriptor (one wake-up for the
    outcomes that arrive together); 40 loops one after another leave none open."""
    pool = ToolThreads(2, "test-pool")

    async def some_calls() -> None:
        loop = asyncio.get_running_loop()
        assert await asyncio.gather(*(pool.submit(loop, sum, [i, 1]) for i in range(5))) == [
            1, 2, 3, 4, 5
        ]  # fmt: skip

    asyncio.run(some_calls())  # the workers' own descriptors exist from here on
    gc.collect()
    before = _open_descriptors()
    for _ in range(40):
        asyncio.run(some_calls())
    gc.collect()
    assert _open_descriptors() <= before + 1


class _NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop without `add_reader` (as Windows' proactor loop)."""

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:  # type: ignore[override]
        raise NotImplementedError


def test_a_loop_without_add_reader_gets_its_outcomes_by_call_soon_threadsafe() -> None:
    pool = ToolThreads(3, "test-pool")
    tally = Tally()
    calls = [(0.0, False, False), (0.001, True, False), (0.0, False, True), (0.002, False, False)]
    loop = _NoReaderLoop()
    try:
        loop.run_until_complete(_submit_all(pool, tally, calls, 0))
    finally:
        loop.close()
    _wait_all_ran(tally, len(calls))
    assert tally.runs == {i: 1 for i in range(len(calls))}


def test_outcomes_of_many_workers_at_once_all_reach_the_loop() -> None:
    """64 calls released together: whichever worker hands over an outcome while the loop is
    already woken for others, every outcome is settled exactly once."""
    pool = ToolThreads(64, "test-pool")
    gate = threading.Barrier(64, timeout=20)

    def meet(i: int) -> int:
        gate.wait()
        return i

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(
            asyncio.gather(*(pool.submit(loop, meet, i) for i in range(64))), 30
        )

    for _ in range(3):
        assert asyncio.run(main()) == list(range(64))


def _warm(pool: ToolThreads, count: int) -> None:
    """Start `count` workers (calls that can only finish together), then let them go idle."""
    gate = threading.Barrier(count, timeout=20)

    async def meet_all() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(pool.submit(loop, gate.wait) for _ in range(count)))

    asyncio.run(meet_all())
    # A worker rejoins the idle list just after handing its outcome over; on a loaded
    # machine that can come after the loop went on, and a call finding no idle worker
    # starts a new one instead of waiting on a warm one.
    deadline = time.monotonic() + 20
    while len(pool._idle) < count and time.monotonic() < deadline:
        time.sleep(0.001)
    assert len(pool._idle) >= count


def test_a_wait_settles_a_quick_call_before_submit_returns() -> None:
    """On a warm worker, `wait_s` long enough for the call: its future is done
    when `submit` returns (no wake-up of the loop), with the call's result or exception."""
    pool = ToolThreads(2, "test-pool")
    _warm(pool, 1)

    def fail() -> None:
        raise KeyError("no such thing")

    async def calls() -> None:
        loop = asyncio.get_running_loop()
        for i in range(20):
            future = pool.submit(loop, sum, [i, 1], wait_s=5.0)
            assert future.done() and future.result() == i + 1
        failed = pool.submit(loop, fail, wait_s=5.0)
        assert failed.done() and isinstance(failed.exception(), KeyError)

    asyncio.run(calls())


def test_a_wait_holds_the_loop_no_longer_than_wait_s() -> None:
    """A call slower than `wait_s` goes on on its thread while the loop goes on; its
    outcome arrives later through the loop's inbox."""
    pool = ToolThreads(2, "test-pool")
    _warm(pool, 1)

    async def slow_call() -> None:
        loop = asyncio.get_running_loop()
        began = time.monotonic()
        future = pool.submit(loop, time.sleep, 1.0, wait_s=0.05)
        held = time.monotonic() - began
        assert not future.done()
        assert held < 0.6, f"the loop was held {held:.3f} s"
        assert await asyncio.wait_for(future, 20) is None

    asyncio.run(slow_call())


def test_after_a_wait_runs_out_the_loop_waits_no_more_until_an_outcome_arrives() -> None:
    """In a burst of slow calls (a parallel batch) only the first one waits; the rest
    start at once. Eight calls of 1 s with `wait_s` = 0.25 s: submitting all of them takes
    about 0.25 s, not 2 s. Once an outcome has arrived, the next call waits again."""
    pool = ToolThreads(8, "test-pool")
    _warm(pool, 8)

    async def burst() -> None:
        loop = asyncio.get_running_loop()
        began = time.monotonic()
        futures = [pool.submit(loop, time.sleep, 1.0, wait_s=0.25) for _ in range(8)]
        held = time.monotonic() - began
        assert held < 1.0, f"submitting 8 slow calls held the loop {held:.3f} s"
        assert not any(future.done() for future in futures)
        assert await asyncio.wait_for(asyncio.gather(*futures), 20) == [None] * 8
        quick = pool.submit(loop, sum, [2, 3], wait_s=5.0)
        assert quick.done() and quick.result() == 5

    asyncio.run(burst())


def _limit_of_descriptors() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@pytest.mark.skipif(os.name != "posix", reason="select's FD_SETSIZE limit is POSIX's")
def test_a_loop_whose_descriptors_are_past_select_s_limit_still_gets_every_outcome() -> None:
    """In a process with more than FD_SETSIZE (1024) descriptors open, the loop's inbox gets
    numbers `select` refuses: the wait for a call and the inbox must not depend on `select`
    (a `select`-based wait failed here with "filedescriptor out of range in select()")."""
    if _limit_of_descriptors() < 1300:
        pytest.skip("the descriptor limit is below 1300")
    pool = ToolThreads(2, "test-pool")
    _warm(pool, 1)
    fillers = []
    try:
        while not fillers or fillers[-1] < 1100:  # the loop's inbox comes after these
            fillers.append(os.open(os.devnull, os.O_RDONLY))

        tally = Tally()

        async def calls() -> list[Any]:
            loop = asyncio.get_running_loop()
            outcomes = []
            for i in range(10):  # one at a time: each call is still running when it waits
                future = pool.submit(loop, tally.call, i, 0.002, False, wait_s=0.5)
                outcomes.append(await asyncio.wait_for(future, 20))
            return outcomes

        assert asyncio.run(calls()) == list(range(10))
    finally:
        for fd in fillers:
            os.close(fd)
