"""`run_batch`: many tasks, each on its own fresh Agent, results appended to a JSONL file as
each task ends, a rerun skipping the ids already done (DESIGN §16, `docs/batch.md`).

The driver (this module) alone writes the results file, whatever the backend; backends run
tasks and hand results back to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import signal as os_signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeAlias

from yiemagent.batch._execute import (
    MakeAgent,
    TaskOptions,
    call_make_agent,
    check_new_agent,
    not_an_agent,
)
from yiemagent.batch._progress import BatchProgress, ProgressMode
from yiemagent.batch._results import ResultsFile, TaskResult
from yiemagent.batch._tasks import BatchTask, TaskSource, load_tasks
from yiemagent.errors import BatchError
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.tools import is_seconds, is_whole_number

__all__ = ["Backend", "BatchReport", "Workers", "run_batch", "run_batch_async"]

logger = logging.getLogger(__name__)

P = ParamSpec("P")

Backend: TypeAlias = Literal["local", "ray"]
describe_alias(
    __name__, "Backend", '`run_batch`\'s engine: "local" (this machine) or "ray" (a Ray cluster).'
)
Workers: TypeAlias = Literal["auto", "tasks", "pool"]
describe_alias(
    __name__,
    "Workers",
    """`tasks`: asyncio tasks in the driver (local) or Ray tasks (ray); `pool`: worker
processes (local) or Ray actors (ray), each loading the embedded model once; `auto`: `pool`
when the agents run the embedded model, else `tasks`.""",
)


@dataclass(slots=True, frozen=True)
class BatchReport:
    """What one `run_batch` call did."""

    results: Path
    """The results file."""
    total: int
    """Tasks in the batch."""
    skipped: int
    """Already done in the results file before this run."""
    skipped_failed: int
    """Of `skipped`, those recorded "error" or "timeout" (a rerun does not retry them)."""
    ok: int
    """Ended "ok" in this run."""
    failed: int
    """Ended "error" or "timeout" (after their retries)."""
    timed_out: int
    """Of `failed`, those whose last attempt timed out."""
    held: int
    """Stopped on tool calls held for approval, which did not run (without `approve`):
    recorded "held", not done, run again by a rerun."""
    interrupted: int
    """Stopped by Ctrl-C / `stop`: recorded as not done, run again by a rerun."""
    not_started: int
    """Left unstarted because the batch was stopped."""
    cost_usd: float
    """USD spent by this run."""
    duration_s: float
    """Wall-clock seconds of the call, the results file's opening and repair included."""
    backend: Backend
    workers: Literal["tasks", "pool"]
    """What ran the tasks ("auto" resolved: "pool" for the embedded model, else "tasks")."""

    @property
    def complete(self) -> bool:
        """Whether every task of the batch is now done."""
        return self.skipped + self.ok + self.failed == self.total


class _Driver:
    """The results file and the progress, fed by a backend (the `ResultSink`)."""

    def __init__(self, file: ResultsFile, progress: BatchProgress) -> None:
        self.file = file
        self.progress = progress

    def started(self, task: BatchTask) -> None:
        self.progress.started()

    def finished(self, result: TaskResult) -> None:
        if result.id in self.file.done:  # a late duplicate (e.g. a Ray retry): drop it
            logger.warning("task %s: a second result was dropped", result.id)
            return
        self.file.append(result)
        self.progress.finished(result)


async def _uses_embedded_model(make_agent: MakeAgent, task: BatchTask, *, choosing: bool) -> bool:
    """Whether `make_agent`'s agent for `task` runs on the embedded model (False when it
    raised: the task will report that; `choosing` the workers, a warning says so too).

    Raises:
        BatchError: it returned something that is not an Agent (`not_an_agent`).
    """
    from yiemagent.agent import Agent

    try:
        agent = await call_make_agent(make_agent, task)
    except Exception as exc:  # the tasks will report it; do not fail the batch here
        if choosing:
            logger.warning("make_agent failed while choosing workers: %r", exc)
        return False
    if not isinstance(agent, Agent):
        raise not_an_agent(make_agent, type(agent).__name__, f"for task {task.id!r}")
    with contextlib.suppress(TypeError):  # made before: each task says so
        check_new_agent(agent)
    model = agent.state.model
    with contextlib.suppress(Exception):  # its MCP servers, a session's lease
        await agent.close()
    return model is None or model.api == "local"


async def run_batch_async(
    tasks: TaskSource,
    make_agent: MakeAgent,
    *,
    results: str | PathLike[str],
    backend: Backend = "local",
    concurrency: int = 4,
    timeout_s: float | None = None,
    retries: int = 1,
    workers: Workers = "auto",
    processes: int | None = None,
    address: str | None = None,
    num_cpus: float = 1.0,
    progress: ProgressMode | None = None,
    progress_label: str = "batch",
    progress_outcomes: tuple[str, str] = ("ok", "failed"),
    fsync: bool = True,
    rerun_failed: bool = False,
    rerun: Callable[[TaskResult], bool] | None = None,
    approve: bool = False,
    keep_messages: bool = False,
    stop: asyncio.Event | None = None,
) -> BatchReport:
    """Run every task not yet done in `results`, each on a fresh Agent, in the
    running event loop; `run_batch` is the same call as a blocking function.

    Each task that ends appends one JSON line to `results` at once (id, status, final
    text, validated output, usage, cost, stop reason, error, attempts, duration; see
    `TaskResult`). A rerun with the same file skips the ids already done ("ok", "error",
    "timeout"); tasks recorded "held" or "interrupted" run again. Setting `stop` stops cleanly:
    running tasks are aborted and recorded "interrupted", no new task starts.

    Args:
        tasks: a JSONL path or an iterable of `{"id", "prompt", optional "output_schema",
            "session", "metadata"}` (or `BatchTask`s).
        make_agent: builds a fresh Agent: `make_agent()` or `make_agent(task)`; picklable
            for `workers="pool"` and Ray (a module-level function or class instance). It
            is also called once by the driver, before any task, to check that it makes an
            Agent (and, with `workers="auto"`, to see the model).
        results: the results JSONL file (created; its folder must exist).
        backend: "local" (this machine) or "ray" (the `ray` extra).
        concurrency: tasks running at once (local tasks; Ray tasks or actors in flight).
        timeout_s: wall-clock limit per attempt, seconds.
        retries: further attempts for a task that failed or timed out.
        workers: "auto", "tasks" or "pool" (see `Workers`).
        processes: local pool size (default: measured for this machine, `docs/batch.md`).
        address: Ray cluster address ("auto", "ray://host:10001", "host:6379"); None
            starts a local cluster on 127.0.0.1 for the batch. Ignored when `ray.init` was
            already called.
        num_cpus: CPUs Ray reserves per task or actor (an actor's model uses as many
            threads).
        progress: True: a live bar on stderr; "lines": a plain line on stderr now and
            then (each tenth of the batch, at least every 30 s); False: nothing (default:
            the bar when stderr is a terminal, else nothing).
        progress_label: what the bar and each progress line start with ("batch:
            2/2 done"); `run_eval` says "eval", so a user sees the command they ran.
        progress_outcomes: what the progress calls the tasks that ended "ok" and those that
            failed; `run_eval` says "answered" and "errors", since its cases pass or fail
            by their checks, after the runs.
        fsync: flush lines to disk from a background thread as they are written (group
            commit; off: a crash of the machine, not of the process, may lose the lines
            the OS had not written yet).
        rerun_failed: run again the tasks recorded "error" or "timeout" (their lines are
            removed from the file first, so each id still has one line).
        rerun: picks result lines to drop so their tasks run again whatever their
            recorded status (e.g. tasks edited since; the lines are removed first).
        approve: approve every tool call held for approval and resume the
            run (`yiem batch --yes`); False: a task whose run stops on held calls is
            recorded "held" (they did not run) and runs again on a rerun.
        keep_messages: write each task's messages in its result line (`messages`), and
            its sub-agents' runs' messages (`sub_agent_messages`) when it had any.
        stop: set it to stop the batch cleanly (what Ctrl-C does in `run_batch`).

    Returns:
        The run's `BatchReport`.

    Raises:
        BatchError: a malformed task or option, a results file in use or not a results
            file, a missing backend, a failed write (lines written stay whole), or a call
            made while a worker process imports the script (no `__main__` guard).
    """
    # A spawned worker imports the driver's script to find make_agent: a script calling
    # run_batch at module level would start the batch again in each worker (the stdlib's own
    # check of this case, multiprocessing.spawn, reads the same flag).
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise BatchError(
            "run_batch was called while a worker process imported your script to find "
            'make_agent: put the call under `if __name__ == "__main__":`'
        )
    _check_options(
        concurrency=concurrency,
        retries=retries,
        processes=processes,
        timeout_s=timeout_s,
        backend=backend,
        workers=workers,
    )
    task_list = load_tasks(tasks)
    if backend == "ray":
        from yiemagent.batch._ray_backend import require_ray

        require_ray()  # before the results file is made and the batch says what it runs
    stop = stop or asyncio.Event()
    options = TaskOptions(
        timeout_s=timeout_s, retries=retries, approve=approve, keep_messages=keep_messages
    )
    started = time.monotonic()
    with ResultsFile(results, fsync=fsync, rerun_failed=rerun_failed, rerun=rerun) as file:
        pending = [task for task in task_list if task.id not in file.done]
        skipped = len(task_list) - len(pending)
        ids = {task.id for task in task_list}
        skipped_failed = sum(r.status != "ok" for r in file.done.values() if r.id in ids)
        chosen: Literal["tasks", "pool"] = "tasks" if workers == "auto" else workers
        # Before any task, a factory making no Agent runs none: checked here when its
        # agents are made in this process anyway (`auto` makes one to see the model); pool
        # workers check it as they start, so a factory that crashes its process stays apart;
        # on Ray with a chosen `workers`, the cluster checks it (the factory may work there
        # only), before the tasks go out.
        in_driver = workers == "auto" or (workers == "tasks" and backend == "local")
        if pending and in_driver:
            embedded = await _uses_embedded_model(
                make_agent, pending[0], choosing=workers == "auto"
            )
            if workers == "auto":
                chosen = "pool" if embedded else "tasks"
        show = sys.stderr.isatty() if progress is None else progress
        with contextlib.ExitStack() as connected:
            if backend == "ray" and pending:
                from yiemagent.batch._ray_backend import ray_session

                connected.enter_context(ray_session(address, num_cpus))
            bar = connected.enter_context(
                BatchProgress(
                    len(task_list),
                    skipped,
                    show=show,
                    label=progress_label,
                    outcomes=progress_outcomes,
                )
            )
            driver = _Driver(file, bar)
            if pending:
                await _dispatch(
                    backend,
                    chosen,
                    pending,
                    make_agent,
                    options,
                    driver,
                    stop,
                    concurrency=concurrency,
                    processes=processes,
                    address=address,
                    num_cpus=num_cpus,
                    check_factory=not in_driver,
                )
        counts = bar.counts
    return BatchReport(
        results=Path(results),
        total=len(task_list),
        skipped=skipped,
        skipped_failed=skipped_failed,
        ok=counts.ok,
        failed=counts.failed,
        timed_out=counts.timed_out,
        held=counts.held,
        interrupted=counts.interrupted,
        not_started=len(pending) - counts.finished - counts.interrupted,
        cost_usd=counts.cost_usd,
        duration_s=time.monotonic() - started,
        backend=backend,
        workers=chosen,
    )


def _check_options(
    *,
    concurrency: int,
    retries: int,
    processes: int | None,
    timeout_s: float | None,
    backend: str,
    workers: str,
) -> None:
    """Refuse a bad option of `run_batch_async` before any file is opened.

    Raises:
        BatchError: `concurrency` or `processes` not a whole number >= 1, `retries` not
            one >= 0, `timeout_s` not positive seconds, or an unknown `backend` or
            `workers`.
    """
    whole = [("concurrency", concurrency, 1), ("retries", retries, 0)]
    if processes is not None:  # None: measured for this machine
        whole.append(("processes", processes, 1))
    for option, value, least in whole:
        if not is_whole_number(value, least):
            raise BatchError(f"{option} must be a whole number >= {least}, not {value!r}")
    if timeout_s is not None and not is_seconds(timeout_s):
        raise BatchError(f"timeout_s must be positive seconds, not {timeout_s!r}")
    if backend not in ("local", "ray"):
        raise BatchError(f"backend must be 'local' or 'ray', not {backend!r}")
    if workers not in ("auto", "tasks", "pool"):
        raise BatchError(f"workers must be 'auto', 'tasks' or 'pool', not {workers!r}")


async def _dispatch(
    backend: Backend,
    workers: Literal["tasks", "pool"],
    pending: list[BatchTask],
    make_agent: MakeAgent,
    options: TaskOptions,
    driver: _Driver,
    stop: asyncio.Event,
    *,
    concurrency: int,
    processes: int | None,
    address: str | None,
    num_cpus: float,
    check_factory: bool,
) -> None:
    """Run `pending` on `backend` with `workers` ("auto" resolved), each start and result
    handed to `driver`, until every task has ended or `stop` is set; `check_factory`: the
    backend checks first that `make_agent` makes an Agent (the driver did not)."""
    if backend == "ray":
        from yiemagent.batch._ray_backend import run_on_ray

        await run_on_ray(
            pending,
            make_agent,
            options,
            sink=driver,
            stop=stop,
            concurrency=concurrency,
            actors=workers == "pool",
            address=address,
            num_cpus=num_cpus,
            check_factory=check_factory,
        )
    elif workers == "pool":
        from yiemagent.batch._pool import default_processes, run_in_pool

        count = processes if processes is not None else default_processes()
        await run_in_pool(
            pending,
            make_agent,
            options,
            processes=max(1, min(count, concurrency, len(pending))),
            sink=driver,
            stop=stop,
        )
    else:
        from yiemagent.batch._local import run_in_process

        await run_in_process(
            pending, make_agent, options, concurrency=concurrency, sink=driver, stop=stop
        )


@contextlib.contextmanager
def _sigint_sets(stop: asyncio.Event, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """First Ctrl-C sets `stop`; the second raises KeyboardInterrupt as usual. Called for
    SIGTERM too (`yiem batch` passes it on with its number), the warning names that.

    A process started with SIGINT ignored (a shell without job control starts `yiem batch
    ... &` so, POSIX) keeps ignoring it, as Python does: a Ctrl-C meant for the script's
    foreground command does not stop the batch. SIGTERM passed on still does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = os_signal.getsignal(os_signal.SIGINT)

    def on_sigint(signum: int, frame: object) -> None:
        if signum == os_signal.SIGINT and previous is os_signal.SIG_IGN:
            return
        if stop.is_set():
            os_signal.signal(os_signal.SIGINT, previous)
            raise KeyboardInterrupt
        again = "Ctrl-C" if signum == os_signal.SIGINT else os_signal.Signals(signum).name
        logger.warning("stopping the batch: running tasks are aborted (%s again to quit)", again)
        loop.call_soon_threadsafe(stop.set)

    os_signal.signal(os_signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        os_signal.signal(os_signal.SIGINT, previous)


def _blocking(
    run_async: Callable[P, Coroutine[Any, Any, BatchReport]],
) -> Callable[P, BatchReport]:
    """`run_async` (with its arguments, `stop` included) run to the end in a new event loop,
    the first Ctrl-C setting its `stop` event (made when not given)."""

    @functools.wraps(run_async)
    def run(*args: P.args, **kwargs: P.kwargs) -> BatchReport:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("run_batch() cannot run inside an event loop; use run_batch_async()")
        given = kwargs.get("stop")
        stop = given if isinstance(given, asyncio.Event) else asyncio.Event()
        kwargs["stop"] = stop
        with asyncio.Runner() as runner, _sigint_sets(stop, runner.get_loop()):
            return runner.run(run_async(*args, **kwargs))

    return run


run_batch = _blocking(run_batch_async)
run_batch.__name__ = run_batch.__qualname__ = "run_batch"
run_batch.__doc__ = """`run_batch_async` (the same arguments) as a blocking function.

Run every task not yet done in `results`, each on a fresh Agent. Ctrl-C
stops cleanly: running tasks are aborted and recorded "interrupted", no new task starts
(it sets `stop`); a second Ctrl-C stops at once (every line already written stays whole).

Returns:
    The run's `BatchReport`.

Raises:
    BatchError: as `run_batch_async`.
    RuntimeError: called inside a running event loop (use `run_batch_async`).
"""
