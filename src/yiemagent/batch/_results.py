"""The results file of a batch: one JSON line per finished task, appended at once (DESIGN §16).

Invariants (what "exactly once" means here, `docs/batch.md`):
- one writer: the driver holds an exclusive lock (`flock`) on the file while a batch runs,
  so a second batch on the same file stops with a clear error instead of interleaving; a
  lock is kept only once the locked file is the one at the path (a repair renames a new
  file over it), so a rename cannot split the lock between two drivers;
- each line is written by one `write` of the whole line and its newline on a descriptor
  opened with `O_APPEND` before the driver goes on: a crash of the driver at any moment
  leaves every finished line intact (the kernel has it) and at most a torn last line;
- lines reach the disk (`fsync`) from a background thread that syncs whenever lines were
  written since its last sync (group commit: one `fsync` covers every line written while
  the previous one ran), and once more on close; so the event loop never waits on the disk
  and a machine crash loses at most the lines of the last few milliseconds;
- on open, a torn last line is dropped (its task runs again) and the lines of tasks
  recorded `held` or `interrupted` (not done; with `rerun_failed` also "error" and "timeout";
  any the caller's `rerun` picks) are
  removed, by writing the repaired file beside the old one and renaming it over it (old or
  new, never half); so each id has at most one line, and an "ok" line is never rewritten
  or repeated; a last line that does not start with `{` cannot be a cut result line, so
  such a file is refused, not "repaired" away.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeAlias

from yiemagent.errors import BatchError
from yiemagent.files import write_atomically
from yiemagent.types.alias_doc import describe_alias

__all__ = [
    "DONE_STATUSES",
    "ResultsFile",
    "TaskResult",
    "TaskStatus",
    "read_results",
]

logger = logging.getLogger(__name__)

TaskStatus: TypeAlias = Literal["ok", "error", "timeout", "held", "interrupted"]
describe_alias(
    __name__,
    "TaskStatus",
    """`ok`: answered (and the output matched its schema); `error`: failed after every attempt;
`timeout`: the last attempt hit `timeout_s`; `held`: the run stopped on tool calls held for
approval, which did not run: not done; `interrupted`: stopped by Ctrl-C, not
done.""",
)

DONE_STATUSES: frozenset[str] = frozenset({"ok", "error", "timeout"})
"""Statuses a rerun skips. `held` and `interrupted` tasks run again."""

_USAGE_KEYS = ("input", "output", "cache_read", "cache_write", "total_tokens", "reasoning")


def _usage(raw: Any) -> dict[str, int]:
    raw = raw if isinstance(raw, Mapping) else {}
    return {key: int(raw.get(key) or 0) for key in _USAGE_KEYS}


@dataclass(slots=True)
class TaskResult:
    """The result line of one task (its JSON form is `to_json()`)."""

    id: str
    status: TaskStatus
    text: str | None = None
    """The final answer's text (the partial text for a timed-out or interrupted run)."""
    output: Any = None
    """The answer parsed as JSON and validated against the task's `output_schema`."""
    usage: dict[str, int] = field(default_factory=lambda: _usage(None))
    """Tokens over every model call of every attempt: input, output, cache_read,
    cache_write, total_tokens, and reasoning (the part of output a reasoning model spent
    thinking)."""
    cost_usd: float = 0.0
    """USD over every model call of every attempt (the model's prices)."""
    stop_reason: str | None = None
    """The final assistant message's stop reason."""
    end_reason: str | None = None
    """The run's `agent_end` reason, e.g. "stop", "max_turns", "aborted"."""
    error: str | None = None
    """What went wrong, one line; None when `status == "ok"`."""
    error_kind: str | None = None
    """A short reason for grouping: "timeout", "model_error", "output_invalid",
    "max_turns", "exception", "worker_died", "awaiting_approval", "interrupted"."""
    attempts: int = 1
    """Attempts made: 1, plus the retries used after an error or a timeout."""
    duration_s: float = 0.0
    """Seconds from the first attempt's start to the last attempt's end."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The task's metadata, copied."""
    finished_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    """When the result was made, ms since the epoch (UTC)."""
    messages: list[dict[str, Any]] | None = None
    """The last attempt's messages (`message_to_dict` each), prompt first, when the batch
    keeps them (`keep_messages=True`); None otherwise, and then left out of the line."""
    sub_agent_messages: list[dict[str, Any]] | None = None
    """With `messages`, the messages of its sub-agents' runs (agents called as tools, at any
    depth) in the order they ended, each `{"agent_path", "tool_call_id", "tool_call_path",
    "message"}`: the agents' names from the outermost down, the id of the call (one level
    up) that ran the sub-agent, the ids of the calls that ran each agent of the path after
    the first (`NestedAgentEvent.tool_call_path`: which invocation ran it, when two of one
    sub-agent each made a call `call_0`; not in a line written before), and the message
    (`message_to_dict`); None when there were none, and then left out of the line."""

    @property
    def done(self) -> bool:
        """Whether a rerun skips this task."""
        return self.status in DONE_STATUSES

    def to_json(self) -> dict[str, Any]:
        """The result line as a JSON object."""
        data: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "text": self.text,
            "output": self.output,
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "stop_reason": self.stop_reason,
            "end_reason": self.end_reason,
            "error": self.error,
            "error_kind": self.error_kind,
            "attempts": self.attempts,
            "duration_s": round(self.duration_s, 6),
            "metadata": self.metadata,
            "finished_at_ms": self.finished_at_ms,
        }
        if self.messages is not None:
            data["messages"] = self.messages
        if self.sub_agent_messages:
            data["sub_agent_messages"] = self.sub_agent_messages
        return data

    @classmethod
    def from_json(cls, raw: Any) -> TaskResult:
        """Read a result line's object.

        Raises:
            ValueError: not a result object.
        """
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
            raise ValueError("not a result object (no string 'id')")
        status = raw.get("status")
        if status not in ("ok", "error", "timeout", "held", "interrupted"):
            raise ValueError(f"unknown status {status!r}")
        return cls(
            id=raw["id"],
            status=status,
            text=raw.get("text"),
            output=raw.get("output"),
            usage=_usage(raw.get("usage")),
            cost_usd=float(raw.get("cost_usd") or 0.0),
            stop_reason=raw.get("stop_reason"),
            end_reason=raw.get("end_reason"),
            error=raw.get("error"),
            error_kind=raw.get("error_kind"),
            attempts=int(raw.get("attempts") or 1),
            duration_s=float(raw.get("duration_s") or 0.0),
            metadata=dict(raw.get("metadata") or {}),
            finished_at_ms=int(raw.get("finished_at_ms") or 0),
            messages=list(raw["messages"]) if isinstance(raw.get("messages"), list) else None,
            sub_agent_messages=(
                list(raw["sub_agent_messages"])
                if isinstance(raw.get("sub_agent_messages"), list)
                else None
            ),
        )

    def encode(self) -> bytes:
        """The whole line, newline included, as written to the file: UTF-8, each lone
        surrogate (which UTF-8 cannot hold; a model server may stream one as a `\\ud800`
        escape) made U+FFFD, so that no text of a run keeps its line from being written."""
        from yiemagent.ai import sanitize_surrogates

        data = sanitize_surrogates(self.to_json())
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")


@dataclass(slots=True)
class _Parsed:
    results: list[TaskResult]
    """The done results, first line of each id, in file order."""
    lines: list[bytes]
    """Their lines as they are in the file (a rewrite keeps them byte for byte)."""
    repaired: bool
    """Whether the file on disk differs from `lines` (torn tail, duplicates, interrupted)."""


def _parse(
    data: bytes,
    path: Path,
    *,
    keep_failed: bool = True,
    drop: Callable[[TaskResult], bool] | None = None,
) -> _Parsed:
    lines = data.split(b"\n")
    torn_tail = lines.pop() if lines else b""  # after the last newline: b"" when not torn
    found: list[tuple[TaskResult, bytes]] = []
    repaired = False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found.append((TaskResult.from_json(json.loads(line)), line + b"\n"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise BatchError(
                f"{path} line {number} is not a result line ({exc}); is it the results "
                "file of a batch?",
                results_file=str(path),
            ) from None
    if torn_tail.strip():
        try:
            found.append((TaskResult.from_json(json.loads(torn_tail)), torn_tail + b"\n"))
        except (ValueError, UnicodeDecodeError):
            if not torn_tail.startswith(b"{"):
                # a cut result line still opens its object: this is some other file
                raise BatchError(
                    f"{path} line {len(lines) + 1} is not a result line (it does not start "
                    "with '{'); is it the results file of a batch?",
                    results_file=str(path),
                ) from None
            logger.warning("%s: dropping a torn last line (%d bytes)", path, len(torn_tail))
        repaired = True
    kept: dict[str, tuple[TaskResult, bytes]] = {}
    for result, line in found:
        if (
            not result.done
            or result.id in kept
            or (drop is not None and drop(result))
            or (not keep_failed and result.status != "ok")
        ):
            repaired = True
            continue
        kept[result.id] = (result, line)
    return _Parsed(
        [result for result, _ in kept.values()], [line for _, line in kept.values()], repaired
    )


def _check_regular(fd: int, path: Path) -> None:
    """Refuse a results file that is no regular file: it is read back to its end, which a
    named pipe opened for reading and writing never reaches, and appended to.

    Raises:
        BatchError: naming what the file is.
    """
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISFIFO(mode):
        what = "a named pipe"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device"
    else:
        what = "a special file"
    raise BatchError(
        f"results file {path} is {what}, not a file: its results are read back and added to",
        results_file=str(path),
    )


def read_results(path: str | PathLike[str]) -> list[TaskResult]:
    """Read a results file without changing it: every whole line, a torn last line skipped;
    for an id with several lines (only when an interrupted run left one) the done one.

    Raises:
        BatchError: the file is missing, unreadable, or holds a line that is not a result.
    """
    target = Path(path)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        raise BatchError(
            f"results file {target} does not exist", results_file=str(target)
        ) from None
    except OSError as exc:
        raise BatchError(
            f"results file {target} cannot be read: {exc}", results_file=str(target)
        ) from None
    parsed = _parse(data, target)
    done = {r.id for r in parsed.results}
    interrupted: dict[str, TaskResult] = {}
    for line in data.split(b"\n"):
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            result = TaskResult.from_json(json.loads(line))
            if not result.done and result.id not in done:
                interrupted[result.id] = result
    return [*parsed.results, *interrupted.values()]


FileLike: TypeAlias = "str | PathLike[str]"


class ResultsFile:
    """The one writer of a results file (see the module docstring for the invariants).

    `with ResultsFile(path) as results:` locks and repairs the file; `results.done` maps
    each id already done to its result; `results.append(result)` writes one line at once.
    Only the thread that opened it writes.

    Raises:
        BatchError: another process holds the file, its folder does not exist, or a line
            in the middle is not a result line.
    """

    def __init__(
        self,
        path: FileLike,
        *,
        fsync: bool = True,
        rerun_failed: bool = False,
        rerun: Callable[[TaskResult], bool] | None = None,
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.rerun_failed = rerun_failed
        """Drop "error" and "timeout" lines on open, so those tasks run again."""
        self.rerun = rerun
        """Whether a result line is dropped on open, whatever its status, so its task runs
        again (e.g. the task was edited since)."""
        self.done: dict[str, TaskResult] = {}
        """Results already in the file, by id (only done ones: `TaskResult.done`)."""
        self._fd: int | None = None
        self._syncer: _Syncer | None = None

    def __enter__(self) -> ResultsFile:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> None:
        """Lock the file (creating it), drop a torn last line and interrupted lines, and
        load `done`."""
        if not self.path.parent.is_dir():
            raise BatchError(
                f"results file {self.path}: folder {self.path.parent} does not exist",
                results_file=str(self.path),
            )
        fd = self._open_locked()
        try:
            _check_regular(fd, self.path)
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read()
            parsed = _parse(data, self.path, keep_failed=not self.rerun_failed, drop=self.rerun)
            if parsed.repaired:
                write_atomically(self.path, b"".join(parsed.lines))
                os.close(fd)  # the lock was on the replaced file; lock the new one
                fd = self._open_locked()
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.done = {r.id: r for r in parsed.results}
        if self.fsync:
            self._syncer = _Syncer(fd)

    def _open_locked(self) -> int:
        """Open and lock the file at `self.path`. A repair renames a new file over the
        path, so a lock taken on a file that is no longer at the path (another driver
        repaired it between our open and our lock) is dropped and taken again on the file
        now there: the lock is always on the results file itself."""
        while True:
            fd = self._open_lock_once()
            if fd is None:
                continue
            return fd

    def _open_lock_once(self) -> int | None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise BatchError(
                f"results file {self.path} cannot be opened: {exc}", results_file=str(self.path)
            ) from None
        try:
            import fcntl
        except ImportError:  # no flock (Windows): one writer is then the user's promise
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise BatchError(
                f"results file {self.path} is in use by another running batch; wait for it "
                "or use another results file",
                results_file=str(self.path),
            ) from None
        held = os.fstat(fd)
        try:
            current = os.stat(self.path)
        except FileNotFoundError:  # renamed away and not yet replaced: open it again
            os.close(fd)
            return None
        if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
            os.close(fd)
            return None
        return fd

    def append(self, result: TaskResult) -> None:
        """Write `result` as one line, at once (one `write`; the background thread then
        `fsync`s it).

        Raises:
            ValueError: a done line for this id is already in the file (a driver bug).
            BatchError: the write failed (disk full, ...); the line is not in the file.
        """
        if self._fd is None:
            raise RuntimeError("ResultsFile is not open")
        if result.id in self.done:
            raise ValueError(f"task {result.id!r} already has a result line")
        data = result.encode()
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # only on a signal mid-write; the tail follows
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            with contextlib.suppress(OSError):  # no torn line before the next append
                os.ftruncate(self._fd, size)
            raise BatchError(f"results file {self.path} cannot be written: {exc}") from None
        if self._syncer is not None:
            self._syncer.dirty()
        if result.done:
            self.done[result.id] = result

    def close(self) -> None:
        """Flush every line to disk and release the lock."""
        if self._syncer is not None:
            self._syncer.stop()
            self._syncer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Syncer:
    """`fsync`s a file descriptor on a daemon thread whenever lines were written since the
    last sync (group commit); `stop()` syncs one last time and joins."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._wake = threading.Condition()
        self._pending = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="yiem-batch-fsync", daemon=True)
        self._thread.start()

    def dirty(self) -> None:
        with self._wake:
            self._pending = True
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                if not self._pending and self._stopping:
                    return
                self._pending = False
            try:
                os.fsync(self._fd)
            except OSError as exc:  # the lines are written; only their durability is late
                logger.warning("results file fsync failed: %s", exc)

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()
        with contextlib.suppress(OSError):
            os.fsync(self._fd)
