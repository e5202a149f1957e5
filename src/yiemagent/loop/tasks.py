"""Waiting on the tasks of a parallel tool-call batch (DESIGN R-4.9, §9)."""

from __future__ import annotations

import asyncio

__all__ = ["all_done"]


async def all_done(tasks: list[asyncio.Task[None]]) -> None:
    """Wait until every task is done; the first that raised (or was cancelled) raises here,
    as `asyncio.gather` would, the others going on. One future and a done-callback per task
    (about 1 µs a task less than `gather` here, DESIGN §9). No tasks: done at once."""
    if not tasks:
        return
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left = len(tasks)

    def finished(task: asyncio.Task[None]) -> None:
        nonlocal left
        left -= 1
        if done.done():
            return
        if task.cancelled():
            done.set_exception(asyncio.CancelledError())
        elif (error := task.exception()) is not None:
            done.set_exception(error)
        elif left == 0:
            done.set_result(None)

    for task in tasks:
        task.add_done_callback(finished)
    await done
