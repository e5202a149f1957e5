"""The plain-function handoff alone: event loop → worker thread → event loop for a no-op
function (DESIGN R-4.2, §9: a plain tool's ≤ 40 µs includes it).

Compared, interleaved round by round so load hits each alike:
- `ToolThreads` (what plain tools use): a worker per call woken by its eventfd, the loop's
  thread waiting up to `QUICK_WAIT_S` for the outcome (a lock), else outcomes handed back
  through the loop's inbox (one eventfd, `add_reader`);
- `ToolThreads` without that wait (`wait_s=0`: always the inbox, or the early claim);
- `ToolThreads` on a loop without `add_reader`: outcomes by `call_soon_threadsafe`
  (what it falls back to, and what it did before the inbox);
- `run_in_executor` on a warm single-thread `ThreadPoolExecutor` (sequential only: one
  thread cannot keep R-4.2 for parallel calls) and on one of 64 threads;
- the floor: the bare round trip of two Python threads ping-ponging two `threading.Lock`s,
  no event loop (`bench/overhead.py`'s floor). Where the woken thread wakes its own CPU (an
  idle machine) no handoff goes under it; where both share a busy CPU `ToolThreads` can (the
  worker often runs the call while the loop's `write()` is in the kernel, and the loop
  takes the outcome without being woken).

`seq`: one call at a time; `par`: 50 calls submitted together, then awaited. Figures are µs
per call, the median of `--rounds`, wall and process CPU time (all threads).

Usage: `.venv/bin/python bench/handoff.py [--rounds 7] [--calls 3000]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from overhead import floor_us  # type: ignore[import-not-found]

from yiemagent.loop._execution import QUICK_WAIT_S, ToolThreads

Submit = Callable[..., "asyncio.Future[Any]"]
WIDTH = 50


def noop(a: int, b: int) -> str:
    return "ok"


class NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop without `add_reader` (as Windows' proactor loop)."""

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:  # type: ignore[override]
        raise NotImplementedError


async def seq(submit: Submit, calls: int) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await submit(loop, noop, 1, 2)
    return (time.perf_counter() - wall) / calls * 1e6, (time.process_time() - cpu) / calls * 1e6


async def par(submit: Submit, calls: int) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls // WIDTH):
        futures = [submit(loop, noop, 1, 2) for _ in range(WIDTH)]
        for future in futures:
            await future
    return (time.perf_counter() - wall) / calls * 1e6, (time.process_time() - cpu) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    ns = parser.parse_args()
    threads = ToolThreads(256, "bench-tool")
    one, many = ThreadPoolExecutor(1), ThreadPoolExecutor(64)

    def waiting(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> asyncio.Future[Any]:
        return threads.submit(loop, fn, *args, wait_s=QUICK_WAIT_S)

    def in_one(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> asyncio.Future[Any]:
        return loop.run_in_executor(one, fn, *args)

    def in_many(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> asyncio.Future[Any]:
        return loop.run_in_executor(many, fn, *args)

    ways: list[tuple[str, Submit, Callable[[], asyncio.AbstractEventLoop], bool]] = [
        ("ToolThreads, wait, else inbox", waiting, asyncio.new_event_loop, True),
        ("ToolThreads, inbox (add_reader)", threads.submit, asyncio.new_event_loop, True),
        ("ToolThreads, call_soon_threadsafe", threads.submit, NoReaderLoop, True),
        ("run_in_executor, 1 warm thread", in_one, asyncio.new_event_loop, False),
        ("run_in_executor, 64 threads", in_many, asyncio.new_event_loop, True),
    ]
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(ns.rounds):
        for name, submit, new_loop, parallel in ways:
            loop = new_loop()
            try:
                for mode, how in (("seq", seq), ("par", par)):
                    if mode == "par" and not parallel:
                        continue
                    loop.run_until_complete(how(submit, ns.calls // 10))  # warm up
                    figure = loop.run_until_complete(how(submit, ns.calls))
                    figures.setdefault((name, mode), []).append(figure)
            finally:
                loop.close()
        figures.setdefault(("floor: two threads, two Locks", "seq"), []).append(floor_us(ns.calls))
    print(f"loop → thread → loop, no-op, µs per call, median of {ns.rounds} rounds")
    print(f"  {'handoff':36} {'mode':4} {'wall':>7} {'cpu':>7}")
    for (name, mode), samples in figures.items():
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"  {name:36} {mode:4} {wall:7.1f} {cpu:7.1f}")


if __name__ == "__main__":
    main()
