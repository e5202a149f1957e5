"""The local backend's in-process scheduler: `concurrency` tasks at a time as asyncio tasks of
the driver's event loop (DESIGN §16). Right for hosted models, where a task mostly waits on
the network; the embedded model uses the process pool (`batch/_pool.py`) instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from yiemagent.batch._execute import MakeAgent, TaskOptions, run_task
from yiemagent.batch._results import TaskResult
from yiemagent.batch._tasks import BatchTask

__all__ = ["ResultSink", "run_in_process"]


class ResultSink(Protocol):
    """Where a backend reports to the driver (which alone writes the results file)."""

    def started(self, task: BatchTask) -> None:
        """`task` started running."""

    def finished(self, result: TaskResult) -> None:
        """A task ended: write its line now. Raises `BatchError` when it cannot."""


async def run_in_process(
    pending: Sequence[BatchTask],
    make_agent: MakeAgent,
    options: TaskOptions,
    *,
    concurrency: int,
    sink: ResultSink,
    stop: asyncio.Event,
) -> None:
    """Run `pending` in this event loop, at most `concurrency` at once, reporting each
    result to `sink` as it ends. When `stop` is set, running tasks are aborted (and
    reported "interrupted") and no new task starts."""
    queue = iter(pending)

    def take() -> BatchTask | None:
        """The next task, reported started (one shared iterator: each is taken once)."""
        task = None if stop.is_set() else next(queue, None)
        if task is not None:
            sink.started(task)
        return task

    async def worker() -> None:
        task = take()
        while task is not None:
            result = await run_task(task, make_agent, options, stop)
            task = take()  # before `finished`, whose progress line counts it running
            sink.finished(result)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(pending)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:  # a failing sink (disk full) stops the others too
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
