"""Daemon worker threads for plain-function tools (DESIGN R-4.2, R-4.5, §9).

A plain tool runs on a worker thread so it blocks neither the event loop nor another tool.
The handoff is the per-call cost of such a tool, so it is kept to one wake-up each way:

- each worker is a daemon thread blocked on its own wake-up descriptor (an `eventfd`, or a
  pipe where there is none): handing it a call is one attribute write and one `write()`,
  which releases the GIL, so the worker can start at once (a lock or a `queue` wakes the
  worker while the caller still holds the GIL: measured ~1.4 × slower here);
- the worker settles the call's asyncio future with one `call_soon_threadsafe`, instead of
  `run_in_executor`'s chain of a `concurrent.futures.Future`, its condition and a callback
  copying its state.

Workers are created on demand, up to `max_workers` running at once; an idle worker is reused
(the most recently idle first, whose stack is warm); calls beyond `max_workers` wait in a
backlog for the next worker to finish. They are daemon threads: a tool that never returns
(abandoned after its timeout or an abort) does not keep the interpreter from exiting.
The future of an abandoned call may be cancelled: its late result is dropped.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ToolThreads"]

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the loop: hand the worker's outcome to the awaiting task, unless it gave up."""
    if future.done():  # cancelled: an abandoned call (timeout, abort grace, cancelled run)
        return
    if error is None:
        future.set_result(result)
    elif isinstance(error, StopIteration):  # asyncio futures refuse it (TypeError)
        future.set_exception(RuntimeError(f"the tool raised StopIteration: {error}"))
    else:
        future.set_exception(error)


def _run_job(job: _Job) -> None:
    loop, future, fn, args = job
    error: BaseException | None = None
    result: Any = None
    try:
        result = fn(*args)
    except BaseException as exc:  # the tool's failure, whatever it is
        error = exc
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(_settle, future, result, error)


class _Worker:
    """One daemon thread, blocked on its own wake-up descriptor between calls."""

    __slots__ = ("_pool", "_read", "_write", "job")

    def __init__(self, pool: ToolThreads, name: str, job: _Job) -> None:
        self._pool = pool
        if hasattr(os, "eventfd"):  # Linux: one descriptor
            self._read = self._write = os.eventfd(0, os.EFD_CLOEXEC)
        else:
            self._read, self._write = os.pipe()
        self.job: _Job | None = job
        try:
            threading.Thread(target=self._run, name=name, daemon=True).start()
        except BaseException:
            self.close()
            raise

    def wake(self, job: _Job) -> None:
        """Hand this idle worker `job` (called by the one `submit` that took it off the
        idle list)."""
        self.job = job
        os.write(self._write, b"\1\0\0\0\0\0\0\0")  # eventfd: a count of 1; pipe: 8 bytes

    def _run(self) -> None:
        read, pool = self._read, self._pool
        while True:
            job, self.job = self.job, None
            while job is not None:
                _run_job(job)
                del job
                job = pool.next_job(self)
            os.read(read, 8)

    def close(self) -> None:
        for fd in {self._read, self._write}:
            with contextlib.suppress(OSError):
                os.close(fd)


class ToolThreads:
    """A pool of daemon worker threads; `submit` runs a function on one of them and returns
    an asyncio future of its result."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._backlog: collections.deque[_Job] = collections.deque()
        self._workers: list[_Worker] = []

    def submit(
        self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any
    ) -> asyncio.Future[Any]:
        """Run `fn(*args)` on a worker thread.

        Returns:
            A future of `loop` (the running loop) settled with what `fn` returns or raises
            (a `StopIteration` as a `RuntimeError`). Cancelling it abandons the call: `fn`
            runs to its end on its thread and its outcome is dropped.

        Raises:
            OSError, RuntimeError: no worker thread could be started (descriptors or threads
            exhausted).
        """
        future = loop.create_future()
        job: _Job = (loop, future, fn, args)
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
            elif len(self._workers) < self._max_workers:
                worker = None
            else:
                self._backlog.append(job)
                return future
            if worker is None:  # under the lock, so the count never passes max_workers
                name = f"{self._prefix}_{len(self._workers) + 1}"
                self._workers.append(_Worker(self, name, job))
                return future
        worker.wake(job)
        return future

    def next_job(self, worker: _Worker) -> _Job | None:
        """On a worker that finished a call: the next waiting call, or None after it has
        been put back on the idle list."""
        with self._lock:
            if self._backlog:
                return self._backlog.popleft()
            self._idle.append(worker)
            return None

    def forget(self) -> None:
        """After `fork()`, in the child: the workers are the parent's threads, gone here.
        Their descriptors are closed; the next `submit` starts new workers."""
        self._lock = threading.Lock()
        for worker in self._workers:
            worker.close()
        self._workers.clear()
        self._idle.clear()
        self._backlog.clear()
