"""Running a tool's code (DESIGN §4): plain functions on a pool of daemon worker threads,
`isolation="process"` tools in a worker process, the call's `on_update` channel (usable
from any thread), and the one deadline helper (a tool call's timeout, a model stream's idle
limit, the grace after an abort). `_tool_calls.execute_prepared_tool_call` drives them.

Threads. A plain tool runs on a worker thread so it blocks neither the event loop nor another
tool. The handoff is the per-call cost of such a tool, so each way is one `write()` of an
eventfd (a pipe where there is none), which releases the GIL, so the woken side can start at
once:

- each worker is a daemon thread blocked on its own wake-up descriptor: handing it a call is
  one attribute write and one `write()` (a lock or a `queue` wakes the worker while the
  caller still holds the GIL, which is slower);
- each event loop that submits calls has an inbox: a deque of outcomes and a descriptor
  the loop watches (`add_reader`). A worker appends the outcome and writes the descriptor
  only if the loop has not been woken already, so outcomes that arrive together (a parallel
  batch) cost the loop one wake-up; the loop reads the descriptor once, then settles every
  outcome. `call_soon_threadsafe` is kept for loops without `add_reader`;
- a worker puts itself back on the idle list before it hands the outcome over, so the loop,
  woken, finds it idle for its next call, and the worker's last step (blocking on its
  descriptor) lets go of the GIL right after the hand-over; a loop's thread that waits for
  the call (below) is woken first, since it cannot run before the worker lets go of the
  GIL: the worker goes back on the idle list while that thread's CPU wakes up;
- when the worker has finished the call before the loop looks again (it often runs the whole
  call while the loop's `write()` is in the kernel), the loop settles the future itself
  before `submit` returns: no hand-over and no wake-up of the loop at all (`_Call`);
- `submit(..., wait_s=)`: on an idle machine the kernel wakes the worker on the other CPU,
  and a round trip through the loop's selector costs the loop's way to `epoll_wait` and back
  besides the two cross-CPU wake-ups. Instead the loop's thread may block at once for at
  most `wait_s` on the inbox's `ready` lock (the GIL released); the worker, done, releases
  it and the loop settles the future before `submit` returns. One lock per loop, held
  between waits, not one per call; the worker releases it only when the loop has said it
  waits, after the wake-up, so a worker that finishes while the loop's `write()` is in the
  kernel costs no system call. A call that outlasts the wait goes on as above, and the loop
  waits no more (`_Inbox.patient`) until an outcome has come back, so in a burst of slow
  calls only the first one holds the loop.

Workers are created on demand, up to `max_workers` running at once; an idle worker is reused
(the most recently idle first, whose stack is warm); calls beyond `max_workers` wait in a
backlog for the next worker to finish, as do calls for which no new worker can be started
(the process is out of descriptors or threads) while others run. They are daemon threads:
a tool that never returns (abandoned after its timeout or an abort) does not keep the
interpreter from exiting.
The future of an abandoned call may be cancelled: its late outcome is dropped, as is one for
a loop that was closed meanwhile.

Processes (docs/tools.md "Timeouts, and stopping a tool"). A plain function on a thread
cannot be stopped once it runs; a function in a child process can: a timeout or an abort
kills the process. Workers are reused while idle (up to `IDLE_WORKERS`), so a call costs a
round trip over two pipes, not a process start; a killed or broken worker is replaced by a
new one on the next call. A tool file's function runs the code its module ran here, sent to
each worker once, so a file changed on disk since (by hand, or by another agent's
`writeTool`) changes no loaded tool, in a thread or a process alike. The calling side of
one call runs on a tool worker thread (it blocks on the pipe); killing the process ends
that read at once. The tool's `execute` must
be a plain or async function defined at the top level of a module or a tool file (the child
imports it by module name, or runs its file's code); its arguments, updates and result cross the
process boundary by pickle. The child's side is `_process_worker`.

Deadlines. A `Deadline` belongs to one piece of work awaited by one task (a tool call, a
model call). It ends the work early by aborting the work's own signal and cancelling the
task, which the caller turns into an outcome with `uncancel()`:

- `timeout_s`: seconds the work may spend waiting (for a tool: since it started; for a model
  stream: since `arm()` or the provider's last `keep_alive()`, so time spent in the loop's
  own event handlers does not count, and a provider busy without output can say so);
- after the run is aborted, `ABORT_GRACE_S` more seconds to return on its own, so a tool or
  provider that ignores aborts never hangs a run. The deadline makes the work's signal, a
  `child()` of the run's whose `on_parent_abort` starts the grace: a run's abort starts it,
  the work aborting its own signal does not.
- a run nested in a tool (a sub-agent called as a tool) has half its tool's grace, for
  each of its own pieces of work: its stuck tool is given up and its run ends within the
  grace its caller waits for, so each level says truly which work did not stop
  (`nested_grace`).

At most one timer per piece of work (none without a timeout), moved only when it fires, so
arming per stream event costs an attribute write; no listener of its own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import hashlib
import inspect
import marshal
import math
import os
import signal as os_signal
import subprocess
import sys
import threading
import typing
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any, Literal, TypeVar

from yiemagent.errors import ConfigError, YiemAgentError, exception_summary
from yiemagent.files import module_code
from yiemagent.loop._process_worker import read_frame, write_frame
from yiemagent.types import (
    AbortSignal,
    AgentTool,
    AgentToolResult,
    PreparedToolCall,
    TextContent,
    ToolCall,
    ToolExecutionUpdateEvent,
)
from yiemagent.types.callbacks import Emit, adopt_task

__all__ = [
    "ABORT_GRACE_S",
    "QUICK_WAIT_S",
    "Deadline",
    "HookAbandoned",
    "ToolRaised",
    "ToolThreads",
    "ToolUpdates",
    "abort_grace_s",
    "as_tool_result",
    "await_apart",
    "call_plain",
    "nested_grace",
    "run_in_process",
    "tool_threads",
    "within_abort_grace",
]


T = TypeVar("T")

TOOL_THREADS = 256
"""Most plain-function tools running at once; threads are created on demand and reused."""


QUICK_WAIT_S = 30e-6
"""How long the loop's thread waits (blocked, GIL released) for a plain tool on a warm worker
before it goes back to its other work (`ToolThreads.submit`'s `wait_s`). On an idle machine
the worker wakes on the other CPU, and this wait is quicker than a round trip through the
loop's selector; a slower tool holds the loop at most this long (plus the kernel's timer
slack), and only the first of a burst of slow calls does."""


IDLE_WORKERS = 8
"""Idle worker processes kept for reuse."""


ABORT_GRACE_S = 1.0
"""Seconds a running tool or model stream gets to end by itself after the run is aborted,
before the loop abandons it (a tool: "Operation aborted: ..."; a stream: stop reason
"aborted")."""


_GRACE_S: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "yiemagent_abort_grace_s", default=None
)
"""The abort grace of the run in this context, when it runs inside a tool; None: a top-level
run (`ABORT_GRACE_S`)."""


def abort_grace_s() -> float:
    """Seconds of grace after an abort for the work of the run in this context: the
    `ABORT_GRACE_S` of a top-level run, less for a run nested in a tool (`nested_grace`)."""
    grace = _GRACE_S.get()
    return ABORT_GRACE_S if grace is None else grace


@contextlib.contextmanager
def nested_grace(grace_s: float) -> Generator[None]:
    """While a tool whose own grace is `grace_s` starts, runs nested in it get half of it.

    A sub-agent run inside the tool must give up its own stuck work and end before the
    caller gives up on the tool; with the same grace both would end at once, and the caller
    would say the tool did not stop though the sub-run did. The context is copied into the
    tool's task or thread when it starts, so the tool keeps the value after this exits."""
    token = _GRACE_S.set(grace_s / 2)
    try:
        yield
    finally:
        _GRACE_S.reset(token)


_ONE = b"\1\0\0\0\0\0\0\0"  # eventfd: add 1; pipe: 8 bytes


_BOOT = "from yiemagent.loop._process_worker import main; main()"


_TOOL_THREADS: ToolThreads | None = None


_TOOL_THREADS_LOCK = threading.Lock()


_idle: list[subprocess.Popen[bytes]] = []


_idle_lock = threading.Lock()


# ── one tool call's code ─────────────────────────────────────────────────────


def call_plain(
    tool: AgentTool, call: ToolCall, args: dict[str, Any], signal: AbortSignal, updates: ToolUpdates
) -> Any:
    """Runs on a worker thread; updates stop being accepted the moment the tool returns."""
    try:
        return tool.execute(call.id, args, signal, updates)
    finally:
        updates.accepting = False


_LEFT_RUNNING: set[asyncio.Future[Any]] = set()
"""Async tools still running after their call was answered (kept from the collector)."""


async def await_apart(awaitable: Awaitable[T]) -> T:
    """Await an async tool in a task of its own. Cancelling the caller (a timeout, an abort
    past its grace, a cancelled batch) cancels the tool and waits up to `ABORT_GRACE_S` for
    it to end; a tool that swallows the cancellation is then left to finish on its own, its
    result and error dropped, instead of holding the batch until it chooses to return."""
    inner: asyncio.Future[Any]
    if inspect.iscoroutine(awaitable):  # the usual tool: one that may not wait at all
        context = contextvars.copy_context()  # its own, as a task's: first step included
        try:
            waiting_on = context.run(awaitable.send, None)  # here: most need no task
        except StopIteration as done:
            return typing.cast("T", done.value)
        resumed = _caught(_Resumed(awaitable, waiting_on))
        inner = asyncio.get_running_loop().create_task(resumed, context=context)
    else:
        inner = asyncio.ensure_future(_caught(awaitable))
    adopt_task(inner)
    try:
        await asyncio.wait((inner,))
    except asyncio.CancelledError:
        inner.cancel()
        await asyncio.wait((inner,), timeout=abort_grace_s())
        if not inner.done():
            _LEFT_RUNNING.add(inner)
            inner.add_done_callback(_forget)
            raise
    value = inner.result()  # the tool's own outcome: its CancelledError says why it stopped
    if isinstance(value, _Raised):
        raise value.error
    return typing.cast("T", value)


class _Resumed:
    """A coroutine whose first step has run (it now waits on `waiting_on`), driven on to its
    end by the task that awaits this: what it waits on goes up to the task, what the task
    sends or throws in goes down."""

    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, waiting_on = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # cancelled: the coroutine decides
                try:
                    waiting_on = coroutine.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    waiting_on = coroutine.send(sent)
                except StopIteration as done:
                    return done.value


class _Raised:
    """A `BaseException` the tool raised (`SystemExit`, `KeyboardInterrupt`): carried out of
    its task to be raised in the caller's, since a task lets those escape the event loop."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _caught(awaitable: Awaitable[T]) -> T | _Raised:
    try:
        return await awaitable
    except (asyncio.CancelledError, Exception):
        raise
    except BaseException as exc:
        return _Raised(exc)


def _forget(inner: asyncio.Future[Any]) -> None:
    _LEFT_RUNNING.discard(inner)
    if not inner.cancelled():
        inner.exception()  # read, so a late failure is not logged as never retrieved


async def run_in_process(
    loop: asyncio.AbstractEventLoop,
    prepared: PreparedToolCall,
    child: AbortSignal,
    updates: ToolUpdates,
) -> Any:
    """Run an `isolation="process"` tool in a worker process; the call's signal (its timeout,
    the run's abort) kills the process at once."""
    tool = prepared.tool
    target, code = process_target(tool.execute)
    call = ProcessCall(code)
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


class ToolUpdates:
    """The call's `on_update`: emits `ToolExecutionUpdateEvent`s, from any thread, until
    closed (the seeds' `accepting` guard). Emissions run as tasks on the call's loop and are
    drained before the outcome is returned.

    An update sent on another thread is queued, then started on the loop. For a call run on
    a worker thread (a plain or process tool) `stop(worker=True)` starts whatever is still
    queued, so an update the tool sent before it returned is emitted even when the loop
    takes the outcome before the queued start has run (`ToolThreads.submit` can settle it at
    once); this is what the FIFO order of `call_soon_threadsafe` gave before.
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
        emitting = asyncio.ensure_future(self._emit(event), loop=self._loop)
        adopt_task(emitting)  # its listeners are the run's code
        self._pending.append(emitting)

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
    `TextContent`.

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


# ── worker threads ───────────────────────────────────────────────────────────


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


class ToolThreads:
    """A pool of daemon worker threads; `submit` runs a function on one of them and returns
    an asyncio future of its result."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._backlog: collections.deque[_Call] = collections.deque()
        self._workers: list[_Worker] = []
        self._inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox | None]
        self._inboxes = weakref.WeakKeyDictionary()
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], _Inbox | None] | None = None
        """The last loop's inbox (one tuple, so threads read loop and inbox together)."""

    def _inbox(self, loop: asyncio.AbstractEventLoop) -> _Inbox | None:
        """`loop`'s inbox (made on its first call); None where the loop has no `add_reader`."""
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        with self._lock:
            if loop in self._inboxes:
                inbox = self._inboxes[loop]
            else:
                try:
                    inbox = _Inbox(loop)
                except (NotImplementedError, AttributeError):  # e.g. Windows' proactor loop
                    inbox = None
                self._inboxes[loop] = inbox
        self._last = (weakref.ref(loop), inbox)
        return inbox

    def submit(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[..., Any],
        *args: Any,
        wait_s: float = 0.0,
    ) -> asyncio.Future[Any]:
        """Run `fn(*args)` on a worker thread.

        Args:
            wait_s: seconds the calling thread may block (GIL released) for the call to end
                when an idle worker takes it, so that its future is settled before `submit`
                returns (see the module docstring); 0: never. It does not wait after a wait
                of this loop ran out, until an outcome has come back.

        Returns:
            A future of `loop` (the running loop) settled with what `fn` returns or raises
            (a `StopIteration` as a `RuntimeError`). Cancelling it abandons the call: `fn`
            runs to its end on its thread and its outcome is dropped.

        Raises:
            RuntimeError: no worker thread could be started (descriptors or threads
            exhausted) and none exists to wait for; when some exist the call waits for one.
        """
        future = loop.create_future()
        inbox = self._inbox(loop)
        job = _Call(inbox, future, fn, args)
        worker: _Worker | None = None
        idle = self._idle
        if idle:  # an idle worker without the lock: `list.pop` is atomic (GIL)
            try:
                worker = idle.pop()
            except IndexError:  # another thread took the last one
                worker = None
        if worker is None:
            with self._lock:
                if self._idle:
                    worker = self._idle.pop()
                elif len(self._workers) >= self._max_workers or not self._start_worker(job):
                    job.unclaimed.clear()  # it waits: the worker that takes it hands it over
                    self._backlog.append(job)
                    return future
            if worker is None:  # a new worker took it
                job.claim()
                return future
        if wait_s and inbox is not None and inbox.patient:
            worker.wake(job)
            try:
                inbox.wait(job, wait_s)
            finally:
                inbox.patient = job.claim()
        else:
            worker.wake(job)
            if job.claim() and inbox is not None:
                inbox.patient = True
        return future

    def _start_worker(self, job: _Call) -> bool:
        """Start a worker thread on `job` (under `_lock`, so the count never passes
        `max_workers`). False: none could be started (descriptors or threads exhausted)
        but workers exist, so `job` may wait for one of them.

        Raises:
            RuntimeError: no worker could be started and none exists (the reason in its
                text).
        """
        try:
            self._workers.append(_Worker(self, f"{self._prefix}_{len(self._workers) + 1}", job))
        except (OSError, RuntimeError) as exc:
            if not self._workers:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise RuntimeError(f"no thread could be started for the tool: {why}") from None
            return False
        return True

    def next_job(self, worker: _Worker) -> _Call | None:
        """On a worker that finished a call: the next waiting call, or None after it has
        been put back on the idle list."""
        with self._lock:
            if self._backlog:
                return self._backlog.popleft()
            self._idle.append(worker)
            return None

    def forget(self) -> None:
        """After `fork()`, in the child: the workers are the parent's threads, gone here.
        Their descriptors are closed; the next `submit` starts new workers (and gives each
        loop a new inbox: the old ones' descriptors close with their loops)."""
        self._lock = threading.Lock()
        for worker in self._workers:
            worker.close()
        self._workers.clear()
        self._idle.clear()
        self._backlog.clear()
        self._inboxes = weakref.WeakKeyDictionary()
        self._last = None


class _Worker:
    """One daemon thread, blocked on its own wake-up descriptor between calls."""

    __slots__ = ("_pool", "_read", "_write", "job")

    def __init__(self, pool: ToolThreads, name: str, job: _Call) -> None:
        self._pool = pool
        self._read, self._write = _wake_descriptors()
        self.job: _Call | None = job
        try:
            threading.Thread(target=self._run, name=name, daemon=True).start()
        except BaseException:
            self.close()
            raise

    def wake(self, job: _Call) -> None:
        """Hand this idle worker `job` (called by the one `submit` that took it off the
        idle list)."""
        self.job = job
        os.write(self._write, _ONE)

    def _run(self) -> None:
        read, pool = self._read, self._pool
        while True:
            job, self.job = self.job, None
            while job is not None:
                job.run()
                if job.leave():  # the loop, woken, waits for the GIL until this thread blocks
                    job = pool.next_job(self)
                    continue
                following = pool.next_job(self)  # before the hand-over: see the docstring
                job.hand_over()
                job = following
                del following
            os.read(read, 8)

    def close(self) -> None:
        _close(self._read, self._write)


class _Call:
    """One call: where its outcome goes (`inbox`; None: `call_soon_threadsafe` on the
    future's loop), its future, the function and its arguments, and its outcome.

    `unclaimed` holds one token, popped (one atomic `list.pop` under the GIL) by whichever
    side comes first: the worker when it has stored the outcome, or the submitting loop
    right after waking the worker. A worker that finished first — it often runs the whole
    call while the loop's `write()` is in the kernel — leaves the outcome to the loop, which
    settles the future before `submit` returns, so the call costs no wake-up of the loop;
    otherwise the worker hands the outcome over through the inbox. `waited`: the loop's
    thread waits for the call (`submit`'s `wait_s`); the worker that won the token then
    releases the inbox's `ready` lock. The token alone decides who settles the future."""

    __slots__ = ("args", "error", "fn", "future", "inbox", "result", "unclaimed", "waited")

    def __init__(
        self,
        inbox: _Inbox | None,
        future: asyncio.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        self.inbox = inbox
        self.future = future
        self.fn: Callable[..., Any] | None = fn
        self.args: tuple[Any, ...] | None = args
        self.result: Any = None
        self.error: BaseException | None = None
        self.unclaimed = [True]
        self.waited = False

    def run(self) -> None:
        """On a worker: run the function and store its outcome (the tool's failure,
        whatever it is, is its outcome: every call gets its result)."""
        fn, args = self.fn, self.args
        self.fn = self.args = None
        assert fn is not None and args is not None
        try:
            self.result = fn(*args)
        except BaseException as exc:
            self.error = exc

    def leave(self) -> bool:
        """On a worker, after `run`: leave the outcome to the loop if it has not looked yet
        (True; a loop waiting for it is woken), else False: `hand_over` it."""
        try:
            self.unclaimed.pop()
        except IndexError:
            return False
        if self.waited:  # then `inbox` is set
            try:  # not contextlib.suppress, which costs more on the way back
                self.inbox.ready.release()  # type: ignore[union-attr]
            except RuntimeError:  # released already: by a stale wake-up (see `wait`)
                return True
        return True  # the submitting loop settles the future itself

    def hand_over(self) -> None:
        """On a worker, after `leave` said False: give the outcome to the loop."""
        future, result, error = self.future, self.result, self.error
        self.result = self.error = None
        if self.inbox is not None:
            self.inbox.put(future, result, error)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                future.get_loop().call_soon_threadsafe(_settle, future, result, error)

    def claim(self) -> bool:
        """On the loop, right after waking the worker: settle the future now if the worker is
        done already (True), else leave it to the worker (False)."""
        unclaimed = self.unclaimed
        if unclaimed:  # (no exception raised where the worker has won: the common case)
            try:
                unclaimed.pop()
                return False  # the worker will hand the outcome over
            except IndexError:
                pass
        _settle(self.future, self.result, self.error)  # no callbacks yet: nothing scheduled
        self.result = self.error = None
        return True


class _Inbox:
    """One loop's outcomes, handed over by workers; the loop is woken once for all that are
    waiting (see the module docstring)."""

    __slots__ = ("_read", "_write", "items", "patient", "ready", "waking")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._read, self._write = _wake_descriptors()
        os.set_blocking(self._read, False)
        self.ready = threading.Lock()
        """Held on the loop's side between waits; a worker that finished a call the loop's
        thread waits for releases it (`wait`)."""
        self.ready.acquire()
        self.items: collections.deque[tuple[asyncio.Future[Any], Any, BaseException | None]]
        self.items = collections.deque()
        self.waking = False
        """Whether the loop has been woken and not yet drained (read and written under the
        GIL: a worker appends, then tests it; the loop clears it, then drains)."""
        self.patient = True
        """Whether `submit` may wait for a call: False from a wait that ran out until an
        outcome comes back (read and written on the loop's thread only)."""
        try:
            # The reader's handle lives as long as the loop: made in an empty context, it
            # keeps nothing of the first run's (a team run and its agents).
            contextvars.Context().run(loop.add_reader, self._read, self._drain)
        except BaseException:
            self.close()
            raise
        # The descriptors live as long as the loop (a closed loop's selector forgets them).
        weakref.finalize(loop, _close, self._read, self._write)

    def put(self, future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        """On a worker: queue an outcome; wake the loop unless it is awake for the inbox.
        The caller holds `future`, hence its loop, hence these descriptors."""
        self.items.append((future, result, error))
        if not self.waking:
            self.waking = True
            with contextlib.suppress(OSError):  # only if the descriptors are gone
                os.write(self._write, _ONE)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self._read, 4096)
        self.waking = False
        self.patient = True
        items = self.items
        while items:
            _settle(*items.popleft())

    def wait(self, job: _Call, wait_s: float) -> None:
        """On the loop's thread: block (GIL released) until the worker has finished `job`
        or `wait_s` has passed. A wake-up left over from a wait that ran out (its worker
        finished just after) ends one wait early; the caller's `claim` decides anyway."""
        acquire = self.ready.acquire
        job.waited = True  # before looking: the worker looks at it after taking the token
        for _ in range(2):  # a second time after a stale wake-up
            if not job.unclaimed or not acquire(timeout=wait_s):
                return  # (acquired, the lock is held again for the next wait)

    def close(self) -> None:
        _close(self._read, self._write)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the loop: hand the worker's outcome to the awaiting task, unless it gave up."""
    if future.done():  # cancelled: an abandoned call (timeout, abort grace, cancelled run)
        return
    if error is None:
        future.set_result(result)
    elif isinstance(error, StopIteration):  # asyncio futures refuse it (TypeError)
        future.set_exception(ToolRaised(exception_summary(error)))
    else:
        future.set_exception(error)


class ToolRaised(RuntimeError):
    """A tool raised what cannot reach the pipeline as itself: a `BaseException` in a tool
    process (`SystemExit`, ...) or a `StopIteration` on a tool thread (asyncio futures refuse
    it). Its text is the exception's `exception_summary`; the pipeline names the tool."""


class HookAbandoned(YiemAgentError):
    """A hook (`before_tool_call`, `after_tool_call`) still running `ABORT_GRACE_S` after the
    run was aborted: it is cancelled, and its call gets this error's text as its result."""


async def within_abort_grace(value: T | Awaitable[T], signal: AbortSignal, what: str) -> T:
    """`value`, awaited when a hook returned an awaitable; once `signal` is aborted the
    hook has `ABORT_GRACE_S` more seconds, then it is cancelled, so a hook that ignores
    the abort never hangs a run.

    Raises:
        HookAbandoned: the hook outlived the grace ("Operation aborted: <what> did not stop
            within N s").
        CancelledError: the calling task itself was cancelled.
    """
    if not inspect.isawaitable(value):
        return value
    deadline = Deadline(None, signal)
    try:
        return await await_apart(value)
    except asyncio.CancelledError:
        if deadline.fired is None or deadline.uncancel() > 0:
            raise
        raise HookAbandoned(
            f"Operation aborted: {what} did not stop within {deadline.grace_s:g} s"
        ) from None
    finally:
        deadline.close()


def _wake_descriptors() -> tuple[int, int]:
    """A (read, write) pair for waking a thread or a loop: one eventfd, else a pipe."""
    if hasattr(os, "eventfd"):  # Linux: one descriptor
        fd = os.eventfd(0, os.EFD_CLOEXEC)
        return fd, fd
    read, write = os.pipe()
    return read, write


def _close(*fds: int) -> None:
    for fd in set(fds):
        with contextlib.suppress(OSError):
            os.close(fd)


# ── worker processes ─────────────────────────────────────────────────────────


def process_target(
    execute: Callable[..., Any],
) -> tuple[tuple[str, str | None, str, str | None], bytes | None]:
    """How a child process finds `execute`: `(module name, file or None, qualname, digest
    or None)`, and for a function of a tool file the code its module ran (marshalled; the
    digest names it), so the child runs the version this process loaded, whatever the
    file holds now.

    Raises:
        ConfigError: `execute` is not a function defined at the top level of a module, or
            the tool file that defines it is gone before its first call in a process.
    """
    qualname = getattr(execute, "__qualname__", "")
    module_name = getattr(execute, "__module__", None)
    if not inspect.isfunction(execute) or "<" in qualname or not module_name:
        raise ConfigError(
            f'isolation="process" needs execute to be a function defined at the top level of '
            f"a module or tool file, not {execute!r}"
        )
    if module_name == "__main__":  # loading the script again in the child would re-run it
        raise ConfigError(
            f'isolation="process": {qualname} is defined in the main script; define it in a '
            "module (or a tool file) the child process can import"
        )
    module = sys.modules.get(module_name)
    spec = getattr(module, "__spec__", None)
    if not module_name.startswith("_yiemagent_") and spec is not None and spec.name == module_name:
        return (module_name, None, qualname, None), None  # importable by name in the child
    file = getattr(module, "__file__", None) or execute.__code__.co_filename
    if not file:
        raise ConfigError(f'isolation="process": cannot find the file that defines {qualname}')
    # the code its module ran, also when the module has left `sys.modules` (a tool replaced)
    code = module_code(execute.__globals__)
    if code is None and module is not None and module.__dict__ is execute.__globals__:
        code = _LOADED_ELSEWHERE.get(module)
        if code is None:  # a module loaded some other way: the file at its first call
            code = _LOADED_ELSEWHERE[module] = _compile_tool_file(file, qualname)
    elif code is None:  # such a module gone from `sys.modules`: the file as it is
        code = _compile_tool_file(file, qualname)
    digest, data = _shipped(code)
    return (module_name, os.path.abspath(file), qualname, digest), data


def _compile_tool_file(file: str, qualname: str) -> CodeType:
    try:
        return compile(Path(file).read_bytes(), file, "exec")
    except FileNotFoundError:
        raise ConfigError(
            f'isolation="process": the tool file {file} that defines {qualname} is gone '
            "(removed or renamed after it was loaded)"
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ConfigError(
            f'isolation="process": the tool file {file} that defines {qualname} does not '
            f"compile: {exception_summary(exc)}"
        ) from None


_LOADED_ELSEWHERE: weakref.WeakKeyDictionary[ModuleType, CodeType] = weakref.WeakKeyDictionary()
"""The code a process tool's module not made by `import_file` gets in worker processes."""

_SHIPPED: weakref.WeakKeyDictionary[CodeType, tuple[str, bytes]] = weakref.WeakKeyDictionary()


def _shipped(code: CodeType) -> tuple[str, bytes]:
    """`code` marshalled for a worker process (the same Python), and its SHA-256, hex."""
    shipped = _SHIPPED.get(code)
    if shipped is None:
        data = marshal.dumps(code)
        shipped = _SHIPPED[code] = (hashlib.sha256(data).hexdigest(), data)
    return shipped


class ProcessCall:
    """One call of a tool in a worker process; `run` blocks (call it on a worker thread),
    `kill` (any thread) stops the process and makes `run` raise."""

    __slots__ = ("_code", "_killed", "_lock", "_proc", "pid")

    def __init__(self, code: bytes | None = None) -> None:
        self._code = code
        """The tool module's code (`process_target`), sent when the worker asks for it."""
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._killed: str | None = None
        self.pid: int | None = None
        """The worker's process id while the call runs."""

    def run(
        self,
        target: tuple[str, str | None, str, str | None],
        tool_call_id: str,
        args: dict[str, Any],
        on_update: Callable[[Any], None],
    ) -> Any:
        """Send the call to a worker and wait for its result (a worker that has not run the
        tool's module yet asks for its code first).

        Raises:
            ToolRaised: the tool raised a `BaseException` (its `exception_summary`).
            RuntimeError: the tool raised an `Exception` (its text), the process was killed
                (`kill`), died, or could not be started (out of file descriptors).
        """
        proc = self._checkout()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            write_frame(proc.stdin, (target, tool_call_id, args))
            while True:
                kind, value = read_frame(proc.stdout)
                if kind == "code":
                    write_frame(proc.stdin, self._code)
                elif kind == "update":
                    on_update(value)
                else:
                    break
        except (EOFError, OSError) as exc:
            reason = self._killed or f"the tool process {proc.pid} {_how_it_ended(proc, exc)}"
            _stop(proc)
            raise RuntimeError(reason) from None
        except BaseException:
            _stop(proc)
            raise
        _checkin(proc)
        if kind == "raised":
            raise ToolRaised(value)
        if kind == "error":
            raise RuntimeError(value)
        return value

    def kill(self, reason: str) -> None:
        """Kill the worker (the call's `run` raises `RuntimeError(reason)`); idempotent."""
        with self._lock:
            if self._killed is None:
                self._killed = reason
            proc = self._proc
        if proc is not None:  # the reading thread sees EOF, then reaps the process
            with contextlib.suppress(OSError):
                proc.kill()

    def _checkout(self) -> subprocess.Popen[bytes]:
        with _idle_lock:
            proc = _idle.pop() if _idle else None
        if proc is None:
            try:
                proc = _spawn()
            except OSError as exc:  # out of descriptors (EMFILE), processes, memory
                raise RuntimeError(
                    f"the tool process could not be started: {exc.strerror or exc}"
                ) from None
        with self._lock:
            self._proc = proc
            self.pid = proc.pid
            killed = self._killed
        if killed is not None:
            _stop(proc)
            raise RuntimeError(killed)
        return proc


def _how_it_ended(proc: subprocess.Popen[bytes], lost: BaseException) -> str:
    """What a call's error says of a worker whose pipe closed mid-call: its exit status or
    the signal that killed it (a crash in C code, the out-of-memory killer), once it has
    ended; one that closed the pipe and lives on for `_END_WAIT_S` is said so."""
    try:
        status = proc.wait(timeout=_END_WAIT_S)
    except subprocess.TimeoutExpired:
        return f"closed its pipe mid-call ({lost})"
    if status >= 0:
        return f"ended before it answered: it exited with status {status}"
    try:
        name = os_signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"ended before it answered: it was killed by {name}"


_END_WAIT_S = 2.0
"""Seconds a worker whose pipe closed is given to end, for its status."""


def _spawn() -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
    return subprocess.Popen(
        [sys.executable, "-c", _BOOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )


def _checkin(proc: subprocess.Popen[bytes]) -> None:
    with _idle_lock:
        if len(_idle) < IDLE_WORKERS and proc.poll() is None:
            _idle.append(proc)
            return
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=5)


# ── deadlines ────────────────────────────────────────────────────────────────


class Deadline:
    """Ends one piece of work at its timeout or `ABORT_GRACE_S` after the run's abort.

    `fired` is None while the work may go on, then "timeout" or "aborted" (whichever came
    first). Created in the task that awaits the work, on its event loop.
    """

    __slots__ = (
        "_abort_only",
        "_handle",
        "_loop",
        "_reason",
        "_task",
        "aborted_at",
        "fired",
        "grace_s",
        "signal",
        "timeout_s",
        "waiting_since",
    )

    def __init__(
        self,
        timeout_s: float | None,
        run: AbortSignal,
        *,
        armed: bool = True,
        reason: str | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        task: asyncio.Task[Any] | None = None,
    ) -> None:
        """Args:
        timeout_s: seconds of waiting allowed; None for no limit.
        run: the run's signal; its abort starts the grace. The work's own signal, a
            `child()` of it aborted when the deadline fires, is `self.signal`.
        armed: whether waiting starts now (a tool call) or at the first `arm()` (a model
            stream, whose context hooks run first).
        reason: the abort reason given to `signal` then (default: `fired`).
        loop, task: the running loop and the task awaiting the work, when the caller has
            them at hand (default: looked up).
        """
        self._loop = asyncio.get_running_loop() if loop is None else loop
        self._task = asyncio.current_task() if task is None else task
        self._reason = reason
        self.timeout_s = timeout_s
        self.grace_s = abort_grace_s()
        """The grace after an abort (s), read when the deadline is made (tests shorten it)."""
        self.fired: Literal["timeout", "aborted"] | None = None
        self.aborted_at: float | None = None
        self.waiting_since: float | None = None
        """When waiting began (loop time). Armed with no timeout it is "always" (-inf): only
        an abort's grace can end the work then, counted from the abort."""
        if armed:
            self.waiting_since = self._loop.time() if timeout_s is not None else -math.inf
        self._abort_only = False
        self._handle: asyncio.TimerHandle | None = None
        if timeout_s is not None:
            # A cancelled timer stays in the loop's heap until its time: it must not keep
            # a copy of the run's context (and what its variables hold) until then.
            self._handle = self._loop.call_later(
                timeout_s, self._check, context=contextvars.Context()
            )
        self.signal = run.child(on_parent_abort=self._on_run_abort)  # last: it may call it
        """The work's signal: aborted with the run, or alone when the deadline fires."""

    def arm(self) -> None:
        """Waiting on the work starts now (a model stream: before each event)."""
        self.waiting_since = self._loop.time()
        self._abort_only = False

    def arm_for_abort(self) -> None:
        """Waiting on code whose time the timeout does not count (a model call's context
        hooks): only an abort's grace can end it; `arm()` ends this."""
        self.waiting_since = -math.inf
        self._abort_only = True
        if self.aborted_at is not None:  # aborted already: the grace runs from the abort
            self._check()

    def disarm(self) -> None:
        """Not waiting on the work (a model stream: while the loop handles an event)."""
        self.waiting_since = None

    def set_timeout(self, timeout_s: float | None) -> None:
        """The timeout from now on, counted from when waiting began (a model stream: longer
        while the model reasons out of sight); None: no limit. Call on the deadline's event
        loop thread."""
        if timeout_s == self.timeout_s:
            return
        self.timeout_s = timeout_s
        if self.fired is None and self._task is not None:
            self._schedule(self._loop.time())  # `_check` finds the new due time

    def keep_alive(self) -> None:
        """The work says it is busy (a provider working without an event to send):
        if the loop is waiting on it, the timeout counts from now. Ignored once the run is
        aborted, so a provider that ignores an abort is still abandoned after the grace.
        Call on the deadline's event loop thread."""
        if self.waiting_since is None or self.timeout_s is None or self.aborted_at is not None:
            return
        self.waiting_since = self._loop.time()

    def _on_run_abort(self, _reason: str | None) -> None:
        """The run was aborted (on the aborting thread): the grace starts."""
        if self.fired is not None or self._task is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self._loop.call_soon_threadsafe(self._start_grace)

    def _start_grace(self) -> None:
        if self.fired is not None or self._task is None or self.aborted_at is not None:
            return
        self.aborted_at = self._loop.time()
        self._check()

    def _due(self) -> tuple[float, Literal["timeout", "aborted"]] | None:
        since = self.waiting_since
        if since is None:
            return None
        due: tuple[float, Literal["timeout", "aborted"]] | None = None
        if self.timeout_s is not None and not self._abort_only:
            due = (since + self.timeout_s, "timeout")
        if self.aborted_at is not None:
            grace = max(since, self.aborted_at) + self.grace_s
            if due is None or grace < due[0]:
                due = (grace, "aborted")
        return due

    def _check(self) -> None:
        if self.fired is not None or self._task is None:
            return
        now = self._loop.time()
        due = self._due()
        if due is None:  # not waiting now (or on hooks only): look again one limit later
            limits = [self.grace_s] if self.aborted_at is not None else []
            if self.timeout_s is not None:
                limits.append(self.timeout_s)
            if limits:
                self._schedule(now + min(limits))
            return
        when, why = due
        if now < when:
            self._schedule(when)
            return
        self._handle = None
        self.fired = why
        self.signal.abort(self._reason or why)
        self._task.cancel()

    def _schedule(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(when, self._check, context=contextvars.Context())

    def uncancel(self) -> int:
        """Withdraw the deadline's cancellation of the task; returns the cancellations still
        pending (more than 0: the caller was cancelled too)."""
        return self._task.uncancel() if self._task is not None else 0

    def close(self) -> None:
        """The work is over: no timer, the work's signal no longer follows the run's, and a
        late abort does nothing."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.signal.detach()
        self._task = None
