"""The Ray backend (extra `ray`, imported only here; DESIGN §16): tasks run as Ray tasks,
or on a pool of Ray actors for the embedded model (one model load per actor); results stream
back to the driver, which alone writes the results file.

Failures are handled by the driver, so each id gets exactly one line and `attempts` counts
every try: a task's own failure (model error, timeout, invalid output) is retried inside
the worker (`run_task`); a worker process or node that dies mid-task (Ray's
`WorkerCrashedError`, `ActorDiedError`, ...) has its task submitted again, to whichever
worker Ray picks (the dead one is gone), up to `WORKER_DEATH_RETRIES` times. A dead actor
is restarted by Ray (it reloads its model). Ctrl-C cancels the tasks in flight and records
them "interrupted".
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

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
from yiemagent.errors import BatchError, install_hint

__all__ = ["require_ray", "run_on_ray"]

logger = logging.getLogger(__name__)

_LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0 before Ray is imported, Ray keeps 127.0.0.1 as this node's address instead of
rewriting it to the machine's public one: a cluster started for the batch binds to it, and a
driver reaches a head started with `--node-ip-address=127.0.0.1` (it hung, rewritten)."""
_BACKSTOP_SLACK_S = 10.0
"""Seconds past a task's own limits (`TaskOptions.backstop_s`) before a Ray task that sent
no result is cancelled."""


def _is_loopback(address: str) -> bool:
    """Whether a Ray address ("host:port", "ray://host:port") names this machine's
    loopback interface."""
    import ipaddress

    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _on_this_machine(address: str | None) -> bool:
    return address is None or address == "auto" or _is_loopback(address)


def _workers_path() -> str:
    """The folders this driver imports from that an installed package does not bring: its
    `PYTHONPATH`, its script's or working folder, `--agent`'s folder. Workers of a cluster
    on this machine get them as their `PYTHONPATH`, so they import the same yiemagent and
    the same `make_agent` module (they do not inherit the driver's environment)."""
    installed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    folders: list[str] = []
    for entry in sys.path:
        folder = os.path.realpath(entry or os.getcwd())
        if not os.path.isdir(folder) or folder in folders:
            continue
        if any(folder == root or folder.startswith(root + os.sep) for root in installed):
            continue
        folders.append(folder)
    return os.pathsep.join(folders)


def require_ray() -> None:
    """Raise `BatchError` now when Ray is not installed: a batch checks it before it opens
    its results file or says what it will run (`ray` is imported later, when connecting).
    """
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BatchError(f"the Ray backend needs the 'ray' extra: {install_hint('ray')}")


def _import_ray(address: str | None) -> Any:
    if "ray" not in sys.modules and (address is None or _is_loopback(address)):
        os.environ.setdefault(_LOCAL_ONLY_ENV, "0")
    try:
        import ray
    except ImportError:
        raise BatchError(f"the Ray backend needs the 'ray' extra: {install_hint('ray')}") from None
    return ray


def _connect(ray: Any, address: str | None, num_cpus: float) -> bool:
    """Connect (or start a local cluster); True when this call did, so it disconnects."""
    if ray.is_initialized():
        return False
    # Ray's INFO lines ("Connecting to existing Ray cluster at ...") would come before the
    # batch's own lines, and before its error when the address is wrong; warnings still show
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    path = _workers_path() if _on_this_machine(address) else ""
    if path:
        options["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
    try:
        with _program_sigterm_kept():
            if address is None:
                ray.init(include_dashboard=False, **options)
            else:
                ray.init(address=address, **options)
    except Exception as exc:
        where = "a local Ray cluster" if address is None else f"the Ray cluster at {address}"
        raise BatchError(f"cannot connect to {where}: {' '.join(str(exc).split())}") from None
    return True


@contextlib.contextmanager
def _program_sigterm_kept() -> Iterator[None]:
    """Within: whatever takes SIGTERM over (`ray.init` sets `sys.exit(15)`, and its core a
    handler that prints a stack dump) gives it back after, when the program had a SIGTERM
    handler of its own (`yiem batch` stops the batch on it as on Ctrl-C). Without one,
    Ray's stays: its exit still runs the `finally` that stops a local cluster."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    own = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if callable(own):
            signal.signal(signal.SIGTERM, own)


@contextlib.contextmanager
def ray_session(address: str | None, num_cpus: float) -> Iterator[None]:
    """Connected to Ray (or a local cluster started) for the block, disconnected after it
    unless the connection was there before: a batch connects before it says what it runs,
    so a cluster it cannot reach is its only output.

    Raises:
        BatchError: Ray is not installed or the cluster cannot be reached.
    """
    ray = _import_ray(address)
    connected_here = _connect(ray, address, num_cpus)
    try:
        yield
    finally:
        if connected_here:
            ray.shutdown()


# ── what runs on the cluster ─────────────────────────────────────────────────


def _ray_task(make_agent: MakeAgent, task: dict[str, Any], options: TaskOptions) -> dict[str, Any]:
    result = asyncio.run(run_task(BatchTask.from_json(task), make_agent, options))
    return result.to_json()


def _made_type(make_agent: MakeAgent, task: dict[str, Any]) -> str | None:
    """The type name of what `make_agent` returns for `task` when it is not an Agent; None
    when it is one, or when it raised (the task reports that)."""
    from yiemagent.agent import Agent

    async def made() -> str | None:
        try:
            agent = await call_make_agent(make_agent, BatchTask.from_json(task))
        except Exception:
            return None
        if not isinstance(agent, Agent):
            return type(agent).__name__
        with contextlib.suppress(Exception):  # its MCP servers, a session's lease
            await agent.close()
        return None

    return asyncio.run(made())


class _BatchActor:
    """Holds one embedded model (loaded in `__init__`) and runs one task at a time."""

    def __init__(self, make_agent: MakeAgent, threads: int) -> None:
        from yiemagent.ai.providers.local.runtime import THREADS_ENV
        from yiemagent.batch._pool import preload_model

        os.environ.setdefault(THREADS_ENV, str(threads))
        self.make_agent = make_agent
        self.refused: str | None = None
        """Why the actor takes no task: its `make_agent` made no Agent (not raised here:
        Ray would restart the actor for good)."""
        try:
            self.load_s = asyncio.run(preload_model(make_agent, refuse=True))
        except BatchError as exc:
            self.load_s, self.refused = None, str(exc)

    def ready(self) -> str | None:
        """None once the actor can take tasks, or why it cannot (`refused`)."""
        return self.refused

    def run(self, task: dict[str, Any], options: TaskOptions) -> dict[str, Any]:
        result = asyncio.run(run_task(BatchTask.from_json(task), self.make_agent, options))
        return result.to_json()


# ── the driver ───────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _InFlight:
    task: BatchTask
    ref: Any
    future: asyncio.Future[Any]
    submitted: float
    actor: Any = None


def _is_system_failure(ray: Any, exc: BaseException) -> bool:
    """A dead worker, actor or node: the task itself did not fail."""
    errors = ray.exceptions
    if isinstance(exc, (errors.RayTaskError, errors.TaskCancelledError)):
        return False
    return isinstance(exc, errors.RayError)


async def run_on_ray(
    pending: Sequence[BatchTask],
    make_agent: MakeAgent,
    options: TaskOptions,
    *,
    sink: ResultSink,
    stop: asyncio.Event,
    concurrency: int,
    actors: bool,
    address: str | None,
    num_cpus: float,
    check_factory: bool = False,
) -> None:
    """Run `pending` on Ray, at most `concurrency` at once (actors: `concurrency` actors, at
    most as many as the cluster's CPUs hold at `num_cpus` each), reporting each result to
    `sink` as it arrives. `check_factory`: first make sure, on the cluster, that
    `make_agent` makes an Agent (one Ray task, or the first actor's start).

    Raises:
        BatchError: Ray is not installed or the cluster cannot be reached; or
            `check_factory` and `make_agent` made no Agent there (no task was run).
    """
    ray = _import_ray(address)
    connected_here = _connect(ray, address, num_cpus)
    pool: list[Any] = []
    try:
        make_ref = ray.put(make_agent)
        if actors:
            actor_class = ray.remote(_BatchActor).options(
                num_cpus=num_cpus, max_restarts=-1, max_task_retries=0
            )
            threads = max(1, int(num_cpus))
            # more actors than the cluster has CPUs for would never start, and their tasks
            # would wait for them forever
            fits = int(ray.cluster_resources().get("CPU", 1) // num_cpus)
            count = max(1, min(concurrency, fits, len(pending)))
            # by value, not by reference: a restarted actor needs its arguments again
            pool = [actor_class.remote(make_agent, threads) for _ in range(count)]
            submit_task = None
            if check_factory:
                refused = await _checked(pool[0].ready.remote())
                if refused is not None:
                    raise BatchError(refused)
        else:
            submit_task = ray.remote(_ray_task).options(num_cpus=num_cpus, max_retries=0)
            if check_factory:
                probe = ray.remote(_made_type).options(num_cpus=num_cpus, max_retries=0)
                first = pending[0]
                made = await _checked(probe.remote(make_ref, first.to_json()))
                if made is not None:
                    raise not_an_agent(make_agent, made, f"for task {first.id!r} on the cluster")
        await _drive(ray, pending, make_ref, options, sink, stop, concurrency, submit_task, pool)
    finally:
        for actor in pool:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        if connected_here:
            ray.shutdown()


async def _checked(ref: Any) -> str | None:
    """What a factory check on the cluster found (`_made_type`, `_BatchActor.ready`); None
    when the check itself failed (a worker that died, a module the cluster lacks): the
    tasks then report that, as they did before the check."""
    try:
        found = await asyncio.wrap_future(ref.future())
    except Exception as exc:
        logger.warning("the check of make_agent on the cluster failed: %s", exc)
        return None
    return found if isinstance(found, str) else None


async def _drive(
    ray: Any,
    pending: Sequence[BatchTask],
    make_ref: Any,
    options: TaskOptions,
    sink: ResultSink,
    stop: asyncio.Event,
    concurrency: int,
    submit_task: Any,
    pool: list[Any],
) -> None:
    """Submit `pending` (each to an idle actor of `pool`, or as a Ray task, at most
    `concurrency` in flight) and settle each as it ends (`_settle`), until every task has
    ended or `stop` is set (`_interrupt`); a flight older than the options' backstop is
    cancelled (`_cancel_overdue`)."""
    queue = deque(pending)
    idle = deque(pool)
    deaths: Counter[str] = Counter()
    started: set[str] = set()
    flights: dict[asyncio.Future[Any], _InFlight] = {}
    stopped = asyncio.ensure_future(stop.wait())
    backstop = options.backstop_s(_BACKSTOP_SLACK_S)

    def submit(task: BatchTask) -> None:
        actor = idle.popleft() if pool else None
        if actor is not None:
            ref = actor.run.remote(task.to_json(), options)
        else:
            ref = submit_task.remote(make_ref, task.to_json(), options)
        future = asyncio.wrap_future(ref.future())
        flights[future] = _InFlight(task, ref, future, time.monotonic(), actor)
        if task.id not in started:
            started.add(task.id)
            sink.started(task)

    try:
        while queue or flights:
            while queue and not stop.is_set() and (idle if pool else len(flights) < concurrency):
                submit(queue.popleft())
            if not flights:
                break
            timeout = None
            if backstop is not None:
                oldest = min(f.submitted for f in flights.values())
                timeout = max(0.1, oldest + backstop - time.monotonic())
            done, _ = await asyncio.wait(
                {*flights, stopped}, timeout=timeout, return_when="FIRST_COMPLETED"
            )
            if stopped in done:
                await _interrupt(ray, flights, sink, deaths)
                return
            for future in done:
                flight = flights.pop(future)
                if flight.actor is not None:
                    idle.append(flight.actor)
                _settle(ray, flight, sink, queue, deaths)
            if backstop is not None:
                _cancel_overdue(ray, flights, backstop)
    finally:
        stopped.cancel()


def _settle(
    ray: Any, flight: _InFlight, sink: ResultSink, queue: deque[BatchTask], deaths: Counter[str]
) -> None:
    """Report a flight that ended to `sink`: its result; after its worker died, the task
    queued again (up to `WORKER_DEATH_RETRIES` deaths) or "worker_died"; after the
    backstop cancelled it, "timeout"; after the Ray task raised, "exception"."""
    task = flight.task
    try:
        raw = flight.future.result()
    except Exception as exc:
        if _is_system_failure(ray, exc):
            died = worker_died(task, type(exc).__name__, deaths)
            if died is None:
                queue.appendleft(task)
            else:
                sink.finished(died)
            return
        if isinstance(exc, ray.exceptions.TaskCancelledError):  # the backstop cancelled it
            error = "no result in time; the Ray task was cancelled"
            sink.finished(unfinished_result(task, "timeout", error, deaths[task.id] + 1))
            return
        text = " ".join(str(getattr(exc, "cause", None) or exc).split())[:500]
        sink.finished(unfinished_result(task, "exception", f"the Ray task raised: {text}", 1))
        return
    result = TaskResult.from_json(raw)
    result.attempts += deaths[task.id]
    sink.finished(result)


def _cancel_overdue(ray: Any, flights: dict[asyncio.Future[Any], _InFlight], limit: float) -> None:
    """Cancel each flight submitted more than `limit` seconds ago (forced for a Ray task,
    not for an actor's call); its cancellation then settles it as "timeout"."""
    now = time.monotonic()
    for flight in flights.values():
        if now - flight.submitted > limit:
            logger.warning("task %s: no result after %.0f s; cancelling it", flight.task.id, limit)
            with contextlib.suppress(Exception):
                ray.cancel(flight.ref, force=flight.actor is None)
            flight.submitted = now  # cancel once; the cancellation then settles it


async def _interrupt(
    ray: Any, flights: dict[asyncio.Future[Any], _InFlight], sink: ResultSink, deaths: Counter[str]
) -> None:
    """On `stop`: cancel every flight, give them `RUN_END_GRACE_S` seconds to end, and
    report each "interrupted" (not done: a rerun runs it)."""
    for flight in flights.values():
        with contextlib.suppress(Exception):
            ray.cancel(flight.ref)
    if flights:
        await asyncio.wait(set(flights), timeout=RUN_END_GRACE_S)
    for flight in flights.values():
        sink.finished(
            unfinished_result(flight.task, "interrupted", "interrupted", deaths[flight.task.id] + 1)
        )
    flights.clear()
