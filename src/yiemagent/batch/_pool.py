"""The local backend's process pool, for the embedded model (DESIGN §16): each worker process
loads its own llama.cpp instance, so a batch's tasks do not share one process's model. Each
worker process loads the model once (before its first task) and runs one
task at a time; the driver hands out tasks and alone writes the results file.

Protocol over one pipe per worker: the worker sends ("ready", load_s) once, then
("result", result_json) per task; the driver sends ("task", task_json, options),
("abort",) to stop the running task, ("quit",). Workers ignore SIGINT (a Ctrl-C in the
terminal reaches the whole process group): the driver tells them to abort instead. A worker
that dies mid-task (killed, crashed) has its task run again on a fresh worker, up to
`WORKER_DEATH_RETRIES` times, then the task is recorded with error kind "worker_died".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import threading
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any

from yiemagent.ai.providers.local.runtime import THREADS_ENV, usable_cpus
from yiemagent.batch._execute import (
    RUN_END_GRACE_S,
    MakeAgent,
    TaskOptions,
    call_make_agent,
    not_an_agent,
    run_task,
    unfinished_result,
    worker_died,
)
from yiemagent.batch._local import ResultSink
from yiemagent.batch._results import TaskResult
from yiemagent.batch._tasks import BatchTask
from yiemagent.errors import BatchError

__all__ = ["WORKER_THREADS", "default_processes", "preload_model", "run_in_pool"]

logger = logging.getLogger(__name__)

_START_TIMEOUT_S = 300.0
"""Seconds a worker may take to start and load its model."""
_START_RETRIES = 1
"""Times a slot starts a worker again after one died or timed out while starting (killed
by the OOM killer while loading the model, say): once covers a passing failure, and a
factory that always fails costs one more start, not a loop."""
_BACKSTOP_SLACK_S = 5.0
"""Seconds past a task's own limits (`TaskOptions.backstop_s`) before a silent worker is
killed."""


WORKER_THREADS = 1
"""llama.cpp threads per worker process, unless `$YIEMAGENT_LOCAL_THREADS` says otherwise:
a multi-threaded llama.cpp waits on its descheduled threads when other work shares the
cores (measurements in `docs/batch.md`)."""


def default_processes() -> int:
    """Worker processes for the embedded model: one per two CPU cores this process may use
    (its affinity, capped by a cgroup quota: `usable_cpus`, as the model's threads count
    them; not `os.cpu_count()`, every core of the host): on shared cores a second process
    only competes with the first (measurements in `docs/batch.md`). On a machine of your
    own with many idle cores, one process per core may do better."""
    return max(1, usable_cpus() // 2)


# ── the worker process ───────────────────────────────────────────────────────


def _worker_main(conn: Connection, make_agent: MakeAgent, threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault(THREADS_ENV, str(threads))
    try:
        asyncio.run(_serve(conn, make_agent))
    finally:
        conn.close()


async def preload_model(make_agent: MakeAgent, *, refuse: bool = False) -> float | None:
    """Load the embedded model that `make_agent`'s agents use, once per process, before
    the first task; returns its load time (s), or None (not the embedded model, or the load
    failed: each task then reports the error).

    Raises:
        BatchError: `refuse` is set and `make_agent` returned something that is not an
            Agent (`not_an_agent`).
    """
    from yiemagent.agent import Agent
    from yiemagent.ai.providers.local.runtime import get_runtime
    from yiemagent.ai.providers.local.weights import DEFAULT_LOCAL_MODEL, local_spec

    try:
        agent = await call_make_agent(make_agent, BatchTask("__preload__", "preload"))
    except Exception as exc:  # each task reports it as its error
        logger.warning("worker %d: preload failed: %r", os.getpid(), exc)
        return None
    if not isinstance(agent, Agent):
        if refuse:
            raise not_an_agent(make_agent, type(agent).__name__, "in a batch worker process")
        return None  # each task reports it as its error
    try:
        model = agent.state.model
        with contextlib.suppress(Exception):  # its MCP servers, a session's lease
            await agent.close()
        if model is not None and model.api != "local":
            return None
        runtime = await get_runtime(local_spec(model.id if model else DEFAULT_LOCAL_MODEL))
    except Exception as exc:  # each task reports it as its error
        logger.warning("worker %d: preload failed: %r", os.getpid(), exc)
        return None
    return runtime.load_s


async def _serve(conn: Connection, make_agent: MakeAgent) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = ("quit",)
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message[0] == "quit":
                return

    threading.Thread(target=read, name="yiem-batch-inbox", daemon=True).start()
    try:
        conn.send(("ready", await preload_model(make_agent, refuse=True)))
    except BatchError as exc:  # the factory's mistake: the driver stops the batch on it
        conn.send(("refused", str(exc)))
        return
    stop = asyncio.Event()
    running: set[asyncio.Task[None]] = set()

    async def run(task: BatchTask, options: TaskOptions, stop: asyncio.Event) -> None:
        try:
            result = await run_task(task, make_agent, options, stop)
        except Exception as exc:  # run_task does not raise; keep the protocol whole anyway
            result = TaskResult(task.id, "error", error=repr(exc), error_kind="exception")
        with contextlib.suppress(OSError):  # the driver is gone: nobody to tell, nothing to say
            conn.send(("result", result.to_json()))

    while True:
        message = await inbox.get()
        if message[0] == "task":
            stop = asyncio.Event()
            job = asyncio.ensure_future(run(BatchTask.from_json(message[1]), message[2], stop))
            running.add(job)
            job.add_done_callback(running.discard)
        elif message[0] == "abort":
            stop.set()
        else:
            stop.set()
            break
    if running:
        await asyncio.wait(running, timeout=RUN_END_GRACE_S)


# ── the driver side ──────────────────────────────────────────────────────────


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Start children with SIGINT ignored (kept across exec), so a Ctrl-C cannot kill a
    worker before it has set up; the driver tells it to abort instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _Worker:
    """One worker process, seen from the driver."""

    def __init__(self, make_agent: MakeAgent, threads: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, make_agent, threads), daemon=True
        )
        try:
            with _sigint_ignored():
                self.process.start()
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise BatchError(
                "make_agent cannot be sent to a worker process; it must be picklable (a "
                f"module-level function or an instance of a module-level class): {exc}"
            ) from None
        finally:
            child.close()

    async def receive(self) -> tuple[Any, ...] | None:
        """The next message, or None when the worker died."""
        try:
            message: tuple[Any, ...] = await asyncio.to_thread(self.conn.recv)
        except (EOFError, OSError):
            return None
        return message

    async def ready(self) -> bool:
        """Wait for the worker to load; False when it died meanwhile.

        Raises:
            BatchError: the worker refused to start: `make_agent` made no Agent there.
        """
        try:
            message = await asyncio.wait_for(self.receive(), _START_TIMEOUT_S)
        except TimeoutError:
            return False
        if message is not None and message[0] == "refused":
            raise BatchError(message[1])
        return message is not None and message[0] == "ready"

    def send(self, *message: Any) -> bool:
        try:
            self.conn.send(message)
        except (OSError, ValueError):
            return False
        return True

    async def close(self) -> None:
        self.send("quit")
        await asyncio.to_thread(self.process.join, RUN_END_GRACE_S + 1.0)
        if self.process.is_alive():
            self.process.kill()
            await asyncio.to_thread(self.process.join, 5.0)
        self.conn.close()

    def kill(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()


async def _start(make_agent: MakeAgent, threads: int) -> _Worker:
    worker = _Worker(make_agent, threads)
    try:
        started = await worker.ready()
    except BatchError:
        await worker.close()
        raise
    if not started:
        await worker.close()
        code = worker.process.exitcode  # known once `close` has joined the process
        raise _StartFailed(f"a batch worker process failed to start (exit code {code})")
    return worker


class _StartFailed(BatchError):
    """A worker process died, or did not say it was ready, while it started."""


async def _start_again(make_agent: MakeAgent, threads: int) -> _Worker:
    """`_start`, tried `_START_RETRIES` more times when the worker fails to start.

    Raises:
        _StartFailed: the last start failed too.
        BatchError: `make_agent` made no Agent (not retried: it would again).
    """
    for _ in range(_START_RETRIES):
        try:
            return await _start(make_agent, threads)
        except _StartFailed as exc:
            logger.warning("%s; starting another", exc)
    return await _start(make_agent, threads)


async def _run_one(
    worker: _Worker, task: BatchTask, options: TaskOptions, stop: asyncio.Event
) -> TaskResult | None:
    """Run `task` on `worker`; None when the worker died (or was killed) first."""
    if not worker.send("task", task.to_json(), options):
        return None
    reply = asyncio.ensure_future(worker.receive())
    stopped = asyncio.ensure_future(stop.wait())
    backstop = options.backstop_s(_BACKSTOP_SLACK_S)
    try:
        done, _ = await asyncio.wait(
            {reply, stopped}, timeout=backstop, return_when="FIRST_COMPLETED"
        )
        if reply not in done:
            if stopped in done:
                worker.send("abort")
                done, _ = await asyncio.wait({reply}, timeout=RUN_END_GRACE_S + 5.0)
            if reply not in done:
                logger.warning("task %s: worker %s does not answer; killing it", task.id, worker)
                worker.kill()
        message = await reply
    finally:
        stopped.cancel()
    if message is None or message[0] != "result":
        return None
    return TaskResult.from_json(message[1])


async def run_in_pool(
    pending: Sequence[BatchTask],
    make_agent: MakeAgent,
    options: TaskOptions,
    *,
    processes: int,
    sink: ResultSink,
    stop: asyncio.Event,
) -> None:
    """Run `pending` on `processes` worker processes, one task at a time each, reporting
    each result to `sink`. The embedded model gets `WORKER_THREADS` threads per worker
    (`$YIEMAGENT_LOCAL_THREADS` overrides). When `stop` is set, running tasks are aborted
    (reported "interrupted").

    A worker that fails to start (it dies, or is not ready within `_START_TIMEOUT_S`) is
    started again once; when that fails too its slot ends and the other workers take its
    share of the tasks.

    Raises:
        BatchError: `make_agent` is not picklable or made no Agent in a worker; or no
            worker is left while tasks are (the results written stay; a rerun runs the rest).
    """
    threads = WORKER_THREADS
    queue = deque(pending)
    deaths: Counter[str] = Counter()
    started: set[str] = set()
    failed: list[_StartFailed] = []

    async def slot() -> None:
        try:
            worker = await _start_again(make_agent, threads)
        except _StartFailed as exc:  # the other slots take its share of the queue
            failed.append(exc)
            return
        try:
            while queue and not stop.is_set():
                task = queue.popleft()
                if task.id not in started:
                    started.add(task.id)
                    sink.started(task)
                result = await _run_one(worker, task, options, stop)
                if result is not None:
                    result.attempts += deaths[task.id]
                    if queue and not stop.is_set() and queue[0].id not in started:
                        # this worker takes it at once: the line `finished` writes counts
                        # it running, not queued
                        started.add(queue[0].id)
                        sink.started(queue[0])
                    sink.finished(result)
                    continue
                await worker.close()
                code = worker.process.exitcode  # known once `close` has joined the process
                if stop.is_set():
                    attempts = deaths[task.id] + 1
                    sink.finished(unfinished_result(task, "interrupted", "interrupted", attempts))
                    return
                died = worker_died(task, f"exit code {code}", deaths)
                if died is None:
                    queue.appendleft(task)
                else:
                    sink.finished(died)
                try:
                    worker = await _start_again(make_agent, threads)
                except _StartFailed as exc:
                    failed.append(exc)
                    return
        finally:
            await worker.close()

    slots = [asyncio.ensure_future(slot()) for _ in range(processes)]
    try:
        await asyncio.gather(*slots)
    finally:
        for job in slots:
            job.cancel()
        await asyncio.gather(*slots, return_exceptions=True)
    if queue and failed and not stop.is_set():  # every slot is gone, tasks are left
        raise BatchError(
            f"{failed[-1]}, and no other worker is left; {len(queue)} task(s) not run "
            "(a rerun with the same results file runs them)"
        )
