"""A worker pool of daemon threads for plain-function tools (DESIGN R-4.5).

`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so one
plain tool that never returns (already abandoned after its timeout or an abort) would keep a
finished program from exiting. These workers are daemon threads: such a tool is left behind
at exit instead. Threads are created on demand up to `max_workers` and reused when idle.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

__all__ = ["DaemonThreadPool"]

P = ParamSpec("P")
T = TypeVar("T")

_WorkItem = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(Executor):
    """An `Executor` whose workers are daemon threads, created on demand and reused."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._work: queue.SimpleQueue[_WorkItem] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._count = 0

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        self._work.put((future, fn, args, kwargs))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._count < self._max_workers:
                    self._count += 1
                    name = f"{self._prefix}_{self._count}"
                    threading.Thread(target=self._run, name=name, daemon=True).start()
        return future

    def _run(self) -> None:
        while True:
            future, fn, args, kwargs = self._work.get()
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, fn, args, kwargs
            self._idle.release()
