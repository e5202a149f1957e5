"""One event loop on its own daemon thread: where an MCP connection lives (DESIGN §12).

An MCP client session is bound to the event loop that opened it (anyio streams, a
subprocess, an HTTP client). Runs are not: `Agent.prompt_sync` and the CLI start a fresh
loop per call. So each connection runs on a loop of its own and every caller, on any
loop or thread, hands it coroutines with `submit`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one asyncio loop until `stop()`.

    Invariants: `submit` is safe from any thread; after `stop()` it raises `RuntimeError`.
    The thread is a daemon, so a connection nobody closed never keeps the program alive.
    """

    def __init__(self, name: str) -> None:
        """Start the thread and its loop.

        Raises:
            OSError, RuntimeError: no loop or no thread could be made (the process is out
                of file descriptors or threads); nothing is left open.
        """
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        try:
            self._thread.start()
        except BaseException:
            self.loop.close()
            raise

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self._cancel_leftovers()
            self.loop.close()

    def _cancel_leftovers(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    @property
    def running(self) -> bool:
        """Whether the thread is alive and its loop accepts work."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def on_thread(self) -> bool:
        """Whether the caller runs on this thread."""
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the thread's loop; cancel the returned future to cancel it.

        Raises:
            RuntimeError: the thread was stopped.
        """
        if not self.running:
            coro.close()
            raise RuntimeError("the MCP connection thread has stopped")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the loop (pending tasks are cancelled) and wait up to `timeout_s` for the thread."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.on_thread():
            self._thread.join(timeout_s)
