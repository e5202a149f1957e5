"""Running the calls of a parallel tool-call batch concurrently (DESIGN R-4.9, §9).

`run_concurrently` starts each call in the batch's own task, as `await` would, and makes an
asyncio Task only for the calls that still have work when one before them waits: a call that
finishes without waiting (a quick async tool, a plain tool whose thread answered at once)
costs no Task, no loop round trip and no done callback (about 4 µs a call on a 2-core
machine, DESIGN §9). `all_done` waits for such Tasks.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator, Iterable
from typing import Any

__all__ = ["all_done", "run_concurrently"]


async def run_concurrently(
    coroutines: Iterable[Coroutine[Any, Any, None]], tasks: list[asyncio.Task[None]]
) -> None:
    """Run `coroutines` concurrently until each is done (R-4.9); none waits on another.

    Each coroutine runs in its own copy of the current context, as a Task's would. They are
    started in order in the calling task; the first one that waits (awaits something not yet
    done) stays in the calling task, which drives it to the end, and each one after it gets
    its own Task, appended to `tasks` at once (so a caller that is cancelled can cancel
    them). The coroutine the calling task drives sees it as `asyncio.current_task()`, and its
    cancellation, like a call of a sequential batch.

    Args:
        coroutines: the calls, created lazily (those after a failure are never created).
        tasks: receives the Tasks made; the caller's list, usually empty.

    Raises:
        Whatever a coroutine raises, as soon as the calling task sees it (a Task's failure
        once the calling task waits for the Tasks): `asyncio.gather`'s rule; the Tasks still
        running go on (the caller cancels them).
    """
    held: _Drive | None = None
    loop: asyncio.AbstractEventLoop | None = None
    for coroutine in coroutines:
        if held is not None:
            tasks.append(loop.create_task(coroutine) if loop else asyncio.create_task(coroutine))
            continue
        context = contextvars.copy_context()
        try:
            waiting_on = context.run(coroutine.send, None)
        except StopIteration:
            continue  # done without waiting: no Task
        held = _Drive(coroutine, context, waiting_on)
        loop = asyncio.get_running_loop()
    if held is not None:
        await held
    if tasks:
        await all_done(tasks)


class _Drive:
    """Awaiting it drives a started coroutine to its end in the awaiting task: what it waits
    on is handed up to the task, what the task sends or throws in is handed down, each step
    in the coroutine's own context (what a native `await` does, plus the context)."""

    __slots__ = ("_context", "_coroutine", "_waiting_on")

    def __init__(
        self, coroutine: Coroutine[Any, Any, None], context: contextvars.Context, waiting_on: Any
    ) -> None:
        self._coroutine = coroutine
        self._context = context
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, run, waiting_on = self._coroutine, self._context.run, self._waiting_on
        self._waiting_on = None
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:  # the awaiting coroutine is being closed
                run(coroutine.close)
                raise
            except BaseException as exc:  # cancelled (or a bad yield): the coroutine decides
                try:
                    waiting_on = run(coroutine.throw, exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = run(coroutine.send, sent)
                except StopIteration:
                    return


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
