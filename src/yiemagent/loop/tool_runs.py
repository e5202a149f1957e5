"""How a tool's `execute` is called (DESIGN R-4.2, R-4.5): plain functions on a pool of daemon
worker threads, `isolation="process"` tools in a worker process, and the call's `on_update`
channel, which may be used from any thread. `pipeline.execute_prepared_tool_call` drives them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
from typing import Any

from yiemagent.loop._processes import ProcessCall, process_target
from yiemagent.loop._threads import ToolThreads
from yiemagent.types import (
    AgentTool,
    AgentToolResult,
    PreparedToolCall,
    TextContent,
    ToolCall,
    ToolExecutionUpdateEvent,
)
from yiemagent.types.callbacks import Emit
from yiemagent.types.signal import AbortSignal

__all__ = [
    "QUICK_WAIT_S",
    "TOOL_THREADS",
    "ToolThreads",
    "ToolUpdates",
    "as_tool_result",
    "call_plain",
    "run_in_process",
    "tool_threads",
]

TOOL_THREADS = 256
"""Most plain-function tools running at once; threads are created on demand and reused."""

QUICK_WAIT_S = 30e-6
"""How long the loop's thread waits (blocked, GIL released) for a plain tool on a warm worker
before it goes back to its other work (`ToolThreads.submit`'s `wait_s`; DESIGN §9, R-4.2).
On an idle 2-core VM the worker wakes on the other CPU and a no-op's round trip through the
loop's selector cost ~27 µs, through this wait ~20 µs (`bench/handoff.py`); a slower tool
holds the loop at most this long (plus the kernel's timer slack, 50 µs by default), and
only the first of a burst of slow calls does."""

_TOOL_THREADS: ToolThreads | None = None
_TOOL_THREADS_LOCK = threading.Lock()


def tool_threads() -> ToolThreads:
    """The shared worker pool for plain-function tools (created on first use)."""
    global _TOOL_THREADS
    if _TOOL_THREADS is None:
        with _TOOL_THREADS_LOCK:
            if _TOOL_THREADS is None:
                _TOOL_THREADS = ToolThreads(TOOL_THREADS, thread_name_prefix="yiem-tool")
    return _TOOL_THREADS


def _after_fork_in_child() -> None:
    global _TOOL_THREADS_LOCK
    _TOOL_THREADS_LOCK = threading.Lock()
    if _TOOL_THREADS is not None:
        _TOOL_THREADS.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ToolUpdates:
    """The call's `on_update`: emits `ToolExecutionUpdateEvent`s, from any thread, until
    closed (the seeds' `accepting` guard). Emissions run as tasks on the call's loop and are
    drained before the outcome is returned.

    An update sent on another thread is queued, then started on the loop. For a call run on
    a worker thread (a plain or process tool) `stop(worker=True)` starts whatever is still
    queued, so an update the tool sent before it returned is emitted even when the loop
    takes the outcome before the queued start has run (`ToolThreads.submit` can settle it at
    once, DESIGN §9); this is what the FIFO order of `call_soon_threadsafe` gave before.
    For an async tool, an update from another thread not yet started when the tool's call
    ends is dropped, as before.
    """

    __slots__ = (
        "_call",
        "_drained",
        "_emit",
        "_loop",
        "_pending",
        "_queued",
        "_thread",
        "accepting",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, emit: Emit, call: ToolCall) -> None:
        self._loop = loop
        self._emit = emit
        self._call = call
        self._thread = threading.get_ident()
        self._pending: list[asyncio.Future[None]] | None = None
        self._queued: collections.deque[AgentToolResult] = collections.deque()
        self._drained = False
        self.accepting = True

    def __call__(self, partial: AgentToolResult) -> None:
        if not self.accepting:
            return
        if isinstance(partial, str):  # as a returned text: one TextContent
            partial = AgentToolResult([TextContent(partial)])
        if threading.get_ident() == self._thread:
            self._start(partial)
            return
        self._queued.append(partial)
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self._loop.call_soon_threadsafe(self._start_queued)

    def _start_queued(self) -> None:
        """On the loop: start the updates queued by other threads, in the order sent."""
        queued = self._queued
        while queued and not self._drained:  # after stop(): one that lost the race
            self._start(queued.popleft())

    def _start(self, partial: AgentToolResult) -> None:
        call = self._call
        event = ToolExecutionUpdateEvent(call.id, call.name, call.arguments, partial)
        if self._pending is None:
            self._pending = []
        self._pending.append(asyncio.ensure_future(self._emit(event), loop=self._loop))

    def stop(self, worker: bool = False) -> bool:
        """Stop accepting updates (and, for a call that ran on a worker thread, start those
        still queued); returns whether accepted ones are still being emitted (then
        `await drain()`)."""
        self.accepting = False
        if worker:
            self._start_queued()
        self._drained = True
        return bool(self._pending)

    async def drain(self) -> None:
        """Stop accepting updates and wait until every accepted one has been emitted."""
        self.stop()
        for task in self._pending or ():
            await task


def as_tool_result(value: object, tool_name: str) -> AgentToolResult:
    """What `execute` returned, as a result: an `AgentToolResult` as it is, a `str` as one
    `TextContent` (R-4.2).

    Raises:
        TypeError: anything else (the pipeline makes it the call's error result).
    """
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult([TextContent(value)])
    raise TypeError(
        f"Tool {tool_name} returned {type(value).__name__}; expected an AgentToolResult or a str"
    )


async def run_in_process(
    loop: asyncio.AbstractEventLoop,
    prepared: PreparedToolCall,
    child: AbortSignal,
    updates: ToolUpdates,
) -> Any:
    """Run an `isolation="process"` tool in a worker process; the call's signal (its timeout,
    the run's abort) kills the process at once."""
    tool = prepared.tool
    target = process_target(tool.execute)
    call = ProcessCall()
    remove = child.add_listener(
        lambda reason: call.kill(f"Operation aborted: tool {tool.name}'s process was stopped")
    )
    try:
        return await tool_threads().submit(
            loop, call.run, target, prepared.tool_call.id, prepared.args, updates
        )
    finally:
        remove()
        updates.accepting = False


def call_plain(
    tool: AgentTool, call: ToolCall, args: dict[str, Any], signal: AbortSignal, updates: ToolUpdates
) -> Any:
    """Runs on a worker thread; updates stop being accepted the moment the tool returns."""
    try:
        return tool.execute(call.id, args, signal, updates)
    finally:
        updates.accepting = False
