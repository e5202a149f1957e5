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

    async def worker() -> None:
        for task in queue:  # one shared iterator: each task is taken once
            if stop.is_set():
                return
            sink.started(task)
            sink.finished(await run_task(task, make_agent, options, stop))

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(pending)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:  # a failing sink (disk full) stops the others too
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
