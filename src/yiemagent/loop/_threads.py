"""Daemon worker threads for plain-function tools (DESIGN R-4.2, R-4.5, §9).

A plain tool runs on a worker thread so it blocks neither the event loop nor another tool.
The handoff is the per-call cost of such a tool, so each way is one `write()` of an eventfd
(a pipe where there is none), which releases the GIL, so the woken side can start at once:

- each worker is a daemon thread blocked on its own wake-up descriptor: handing it a call is
  one attribute write and one `write()` (a lock or a `queue` wakes the worker while the
  caller still holds the GIL: measured ~1.4 × slower here);
- each event loop that submits calls has an inbox: a deque of outcomes and a descriptor
  the loop watches (`add_reader`). A worker appends the outcome and writes the descriptor
  only if the loop has not been woken already, so outcomes that arrive together (a parallel
  batch) cost the loop one wake-up; the loop reads the descriptor once, then settles every
  outcome. `call_soon_threadsafe` (a `Handle`, a socket `send`, two `recv`s on the loop) is
  kept for loops without `add_reader`. Loop → worker → loop for a no-op, one call at a
  time, `bench/handoff.py` measured 19 µs against 29 µs by `call_soon_threadsafe` and
  77–100 µs by `run_in_executor` on a warm thread (2-core VM, load 3);
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
  (its callbacks, the task's wake-up) besides the two cross-CPU wake-ups. Instead the loop's
  thread may block at once for at most `wait_s` on the inbox's `ready` lock (the GIL
  released); the worker, done, releases it and the loop settles the future before `submit`
  returns (a no-op on an idle 2-core VM: ~20 µs against ~27 µs). One lock per loop, held
  between waits, not one per call; the worker releases it only when the loop has said it
  waits, after the wake-up, so a worker that finishes while the loop's `write()` is in the
  kernel costs no system call. (`select` on an eventfd the worker writes, which lets go of
  the GIL in the kernel, measured ~2 µs slower a call.) A call that outlasts the wait goes
  on as above, and the loop waits no more (`_Inbox.patient`) until an outcome has come
  back, so in a burst of slow calls only the first one holds the loop.

Workers are created on demand, up to `max_workers` running at once; an idle worker is reused
(the most recently idle first, whose stack is warm); calls beyond `max_workers` wait in a
backlog for the next worker to finish. They are daemon threads: a tool that never returns
(abandoned after its timeout or an abort) does not keep the interpreter from exiting.
The future of an abandoned call may be cancelled: its late outcome is dropped, as is one for
a loop that was closed meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["ToolThreads"]

_ONE = b"\1\0\0\0\0\0\0\0"  # eventfd: add 1; pipe: 8 bytes


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
            loop.add_reader(self._read, self._drain)
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
        whatever it is, is its outcome: R-4.1)."""
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
            try:  # (not contextlib.suppress: ~0.4 µs more on the way back)
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
            OSError, RuntimeError: no worker thread could be started (descriptors or threads
            exhausted).
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
                elif len(self._workers) < self._max_workers:
                    # under the lock, so the count never passes max_workers
                    name = f"{self._prefix}_{len(self._workers) + 1}"
                    self._workers.append(_Worker(self, name, job))
                else:
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
