"""Progress of a batch on stderr: done, failed, running, rate, ETA, cost so far (DESIGN
§16); a live bar (rich) on a terminal, plain lines now and then otherwise (`yiem batch`).
The counts are kept either way and make the batch's `BatchReport`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from yiemagent.batch._results import TaskResult

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["BatchCounts", "BatchProgress", "ProgressMode"]


@dataclass(slots=True)
class BatchCounts:
    """Counts of one batch run."""

    total: int = 0
    """Tasks in the batch (done before included)."""
    skipped: int = 0
    """Already done in the results file when the run started."""
    ok: int = 0
    """Ended "ok" in this run."""
    failed: int = 0
    """Ended with status "error" or "timeout"."""
    timed_out: int = 0
    """Of `failed`, those whose last attempt timed out."""
    held: int = 0
    """Stopped on tool calls held for approval: not done, run again by a rerun."""
    interrupted: int = 0
    """Stopped by Ctrl-C / `stop`: not done, run again by a rerun."""
    running: int = 0
    """Started and not finished yet."""
    cost_usd: float = 0.0
    """USD spent by this run."""
    started: float = field(default_factory=time.monotonic)
    """`time.monotonic()` seconds when counting began: where `rate` starts."""

    @property
    def finished(self) -> int:
        """Tasks this run finished (ok, failed or held)."""
        return self.ok + self.failed + self.held

    @property
    def queued(self) -> int:
        """Tasks of this run not started yet: waiting for a free place under the
        concurrency limit (a worker process still starting included), or, once the batch
        has stopped, never started (a rerun runs them)."""
        left = self.total - self.skipped - self.finished - self.interrupted - self.running
        return max(0, left)

    @property
    def rate(self) -> float:
        """Tasks finished per second in this run."""
        elapsed = time.monotonic() - self.started
        return self.finished / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, or None before the first result."""
        left = self.total - self.skipped - self.finished - self.interrupted
        return left / self.rate if self.rate > 0 else None


ProgressMode: TypeAlias = "bool | Literal['lines']"
"""True: a live bar (a terminal); "lines": a plain line on stderr now and then (a log file,
a CI job); False: nothing."""

_LINE_EVERY_S = 30.0
"""Seconds after which "lines" mode writes a line even when no tenth of the batch ended."""


class BatchProgress:
    """Counts results as they come and shows them (a context manager; every method runs on
    the driver's thread): a live bar when `show` is True; with `show="lines"` one plain
    line on stderr each time another tenth of the batch ends (each task for a batch under
    ten), at least every 30 s while tasks end, and at the end."""

    def __init__(
        self,
        total: int,
        skipped: int,
        *,
        show: ProgressMode,
        label: str = "batch",
        outcomes: tuple[str, str] = ("ok", "failed"),
    ) -> None:
        self.counts = BatchCounts(total=total, skipped=skipped)
        self._label = label
        """What the bar and each line start with: the command that runs the batch."""
        self._ok, self._failed = outcomes
        """What the lines and the bar call the tasks that ended "ok" and those that failed."""
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._show = show
        self._lines = show == "lines"
        self._last_line = time.monotonic()
        self._last_step = -1
        self._said: tuple[int, ...] = ()
        self._ended = False
        """The batch is over: tasks not started will not start in this run."""

    def __enter__(self) -> BatchProgress:
        if self._lines:
            pending = self.counts.total - self.counts.skipped
            self._line(f"{pending} to run ({self.counts.skipped} done before)")
        elif self._show:
            from rich.console import Console
            from rich.markup import escape
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn(f"[bold]{escape(self._label)}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[line]}"),
                console=Console(stderr=True, emoji=False),
                transient=False,
                refresh_per_second=4,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self._label, total=self.counts.total, completed=self.counts.skipped, line=""
            )
            self._draw()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._ended = True
        if self._lines and self._said != self._counted():
            self._line(self._status())
        if self._progress is not None:
            self._draw()
            self._progress.stop()
            self._progress = None

    def started(self) -> None:
        """A task started running."""
        self.counts.running += 1
        self._draw()

    def finished(self, result: TaskResult) -> None:
        """A task ended (a result was written)."""
        counts = self.counts
        counts.running = max(0, counts.running - 1)
        counts.cost_usd += result.cost_usd
        if result.status == "ok":
            counts.ok += 1
        elif result.status == "interrupted":
            counts.interrupted += 1
        elif result.status == "held":
            counts.held += 1
        else:
            counts.failed += 1
            counts.timed_out += result.status == "timeout"
        if self._lines:
            self._maybe_line()
        self._draw()

    def _line(self, text: str) -> None:
        import sys

        print(f"{self._label}: {text}", file=sys.stderr, flush=True)
        self._last_line = time.monotonic()
        self._said = self._counted()

    def _counted(self) -> tuple[int, ...]:
        counts = self.counts
        return (counts.ok, counts.failed, counts.held, counts.interrupted, counts.running)

    def _status(self) -> str:
        counts = self.counts
        done = counts.skipped + counts.finished
        held = f", {counts.held} held" if counts.held else ""
        stopped = f", {counts.interrupted} interrupted" if counts.interrupted else ""
        # a resumed batch's tasks done before are in `done`: say them, or "4/4 done (3 ok,
        # 0 failed)" left one unaccounted for
        before = f"{counts.skipped} before, " if counts.skipped else ""
        return (
            f"{done}/{counts.total} done ({before}{counts.ok} {self._ok}, "
            f"{counts.failed} {self._failed}{held}"
            f"{stopped}), {counts.running} running{self._waiting(bar=False)}, {counts.rate:.2f}/s, "
            f"ETA {_duration(counts.eta_s)}, ${counts.cost_usd:.4f}"
        )

    def _maybe_line(self) -> None:
        counts = self.counts
        pending = max(1, counts.total - counts.skipped)
        step = (counts.finished + counts.interrupted) * min(10, pending) // pending
        if step > self._last_step or time.monotonic() - self._last_line >= _LINE_EVERY_S:
            self._last_step = step
            self._line(self._status())

    def _draw(self) -> None:
        if self._lines:
            return
        if self._progress is None or self._task is None:
            return
        counts = self.counts
        eta = counts.eta_s
        if self._ended:
            # The bar counts interrupted tasks as done ("5/20" after a Ctrl-C that stopped
            # one): name them, as the lines do. Nothing runs any more and no ETA holds, which
            # also keeps the line within 80 columns (rich squeezes the count out first).
            stopped = f"  interrupted {counts.interrupted}" if counts.interrupted else ""
            line = (
                f"{self._failed} {counts.failed}{stopped}{self._waiting(bar=True)}  "
                f"{counts.rate:.2f}/s  ${counts.cost_usd:.4f}"
            )
        else:
            line = (
                f"{self._failed} {counts.failed}  running {counts.running}"
                f"{self._waiting(bar=True)}  "
                f"{counts.rate:.2f}/s  "
                f"ETA {_duration(eta)}  ${counts.cost_usd:.4f}"
            )
        self._progress.update(
            self._task, completed=counts.skipped + counts.finished + counts.interrupted, line=line
        )

    def _waiting(self, *, bar: bool) -> str:
        """The tasks not running yet, to follow the running count (", 2 queued" in a line,
        "  queued 2" on the bar; "not started" once the batch is over), or "" when there
        are none: "0 running" alone read as if nothing were left while tasks waited behind
        the concurrency limit or for a worker process to start."""
        queued = self.counts.queued
        if not queued:
            return ""
        what = "not started" if self._ended else "queued"
        return f"  {what} {queued}" if bar else f", {queued} {what}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
