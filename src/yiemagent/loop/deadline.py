"""The one deadline helper of the loop: a tool call's timeout, a model stream's idle limit and
the grace after an abort (DESIGN R-4.5, R-5.7, R-5.8).

A `Deadline` belongs to one piece of work awaited by one task (a tool call, a model call). It
ends the work early by aborting the work's own signal and cancelling the task, which the
caller turns into an outcome with `uncancel()`:

- `timeout_s`: seconds the work may spend waiting (for a tool: since it started; for a model
  stream: since `arm()` or the provider's last `keep_alive()`, so time spent in the loop's
  own event handlers does not count, and a provider busy without output can say so);
- after the run is aborted, `ABORT_GRACE_S` more seconds to return on its own, so a tool or
  provider that ignores aborts never hangs a run. The deadline makes the work's signal, a
  `child()` of the run's whose `on_parent_abort` starts the grace: a run's abort starts it,
  the work aborting its own signal does not.

At most one timer per piece of work (none without a timeout), moved only when it fires, so
arming per stream event costs an attribute write; no listener of its own (DESIGN §9).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any, Literal

from yiemagent.types import AbortSignal

__all__ = ["ABORT_GRACE_S", "Deadline"]

ABORT_GRACE_S = 1.0
"""Seconds a running tool or model stream gets to end by itself after the run is aborted,
before the loop abandons it (a tool: "Operation aborted: ..."; a stream: stop reason
"aborted")."""


class Deadline:
    """Ends one piece of work at its timeout or `ABORT_GRACE_S` after the run's abort.

    `fired` is None while the work may go on, then "timeout" or "aborted" (whichever came
    first). Created in the task that awaits the work, on its event loop.
    """

    __slots__ = (
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
        self.grace_s = ABORT_GRACE_S
        """The grace after an abort, read when the deadline is made (tests shorten it)."""
        self.fired: Literal["timeout", "aborted"] | None = None
        self.aborted_at: float | None = None
        self.waiting_since: float | None = None
        """When waiting began (loop time). Armed with no timeout it is "always" (-inf): only
        an abort's grace can end the work then, counted from the abort."""
        if armed:
            self.waiting_since = self._loop.time() if timeout_s is not None else -math.inf
        self._handle: asyncio.TimerHandle | None = None
        if timeout_s is not None:
            self._handle = self._loop.call_later(timeout_s, self._check)
        self.signal = run.child(on_parent_abort=self._on_run_abort)  # last: it may call it
        """The work's signal: aborted with the run, or alone when the deadline fires."""

    def arm(self) -> None:
        """Waiting on the work starts now (a model stream: before each event)."""
        self.waiting_since = self._loop.time()

    def disarm(self) -> None:
        """Not waiting on the work (a model stream: while the loop handles an event)."""
        self.waiting_since = None

    def keep_alive(self) -> None:
        """The work says it is busy (a provider working without an event to send, R-5.8):
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
        if self.timeout_s is not None:
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
        if due is None:  # not waiting now: look again one limit later
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
        self._handle = self._loop.call_at(when, self._check)

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
