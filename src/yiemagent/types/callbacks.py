"""Calling user callbacks that may be plain or async, and the guarded event sink (DESIGN §3).

Every hook, listener and `emit` the user passes may be a plain or an async function. This
module is the one place that decides how such a callback is called: `maybe_await` for a value
that may be awaitable, `is_async_callable` for a function that must be awaited, and
`guarded_sink` for an event sink whose exceptions must not change the run,
`signal_optional` for a hook or listener that may leave out the run's signal, and
`run_tasks` / `adopt_task` / `in_run_tasks` for the tasks in which a run calls such code (so
an Agent can tell that `wait_for_idle()` there would wait for itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from yiemagent.errors import ConfigError
from yiemagent.types.tools import binds

if TYPE_CHECKING:
    from yiemagent.types.events import AgentEvent

__all__ = [
    "Emit",
    "EventSink",
    "GuardedSink",
    "adopt_task",
    "guarded_sink",
    "in_run_tasks",
    "is_async_callable",
    "maybe_await",
    "run_tasks",
    "signal_optional",
    "task_is_cancelled",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

EventSink: TypeAlias = "Callable[[AgentEvent], Awaitable[None] | None]"
"""What users pass as `emit` (the seeds' agentEventSink): plain or async."""

Emit: TypeAlias = "Callable[[AgentEvent], Awaitable[None]]"
"""An event sink that is always async and never raises (a `GuardedSink`)."""

_CO_COROUTINE = inspect.CO_COROUTINE


async def maybe_await(value: T | Awaitable[T]) -> T:
    """`value` itself, or what it resolves to when it is awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


def is_async_callable(fn: object) -> bool:
    """Whether calling `fn` returns a coroutine: an `async def` function or bound method, or an
    object whose `__call__` is one (checked on the code flags first: the per-call fast path)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        return bool(code.co_flags & _CO_COROUTINE)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


_TWO_SHAPES: weakref.WeakKeyDictionary[Callable[..., Any], Callable[..., Any]] = (
    weakref.WeakKeyDictionary()
)


def signal_optional(hook: Callable[..., Any], what: str, first: str) -> Callable[..., Any]:
    """`hook`, which the loop calls as `hook(value, signal)`, as a function of both: itself
    when it takes both, a wrapper when it takes the value alone (a JavaScript callback
    ignores the signal it does not ask for; pydantic-ai's history processors may take the
    messages alone). A callable without a readable signature is taken as it is.

    Args:
        hook: the user's function.
        what: its name in the error ("before_tool_call").
        first: what its first argument is ("context").

    Raises:
        ConfigError: it takes neither `(value)` nor `(value, signal)`.
    """
    try:
        return _TWO_SHAPES[hook]
    except (KeyError, TypeError):  # not seen yet, or not weakly referable
        pass
    try:
        signature = inspect.signature(hook)
    except (TypeError, ValueError):
        return hook
    adapted: Callable[..., Any] = hook
    if not binds(signature, 2):
        if not binds(signature, 1):
            raise ConfigError(
                f"{what} must take ({first}) or ({first}, signal); {hook!r} takes {signature}"
            )

        def adapted(value: Any, signal: Any) -> Any:
            return hook(value)

        # the hook as given, for its other methods (`__wrapped__` would make
        # `inspect.signature` report the one-argument signature and wrap it again)
        adapted.__yiemagent_hook__ = hook  # type: ignore[attr-defined]

    with contextlib.suppress(TypeError):  # not weakly referable: no cache
        _TWO_SHAPES[hook] = adapted
    return adapted


def task_is_cancelled() -> bool:
    """Whether the running task has been asked to cancel. A `CancelledError` caught while
    it has not is some callback's own (it awaited work that was cancelled elsewhere): that
    callback failed, the run was not cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class GuardedSink:
    """An event sink that awaits `sink(event, *extra)` when it is async and logs, with the
    event type, what it raises instead of letting it change the run. The
    loop's `emit`, the Agent's `on_event` and each `subscribe` listener (which also gets the
    run's signal) are GuardedSinks."""

    __slots__ = ("_sink", "_what")

    def __init__(self, sink: Callable[..., Any] | None, what: str) -> None:
        self._sink = sink
        self._what = what

    async def __call__(self, event: AgentEvent, *extra: Any) -> None:
        sink = self._sink
        if sink is None:
            return
        try:
            result = sink(event, *extra)
            if result is not None and inspect.isawaitable(result):
                await result
        except (asyncio.CancelledError, Exception) as exc:
            if isinstance(exc, asyncio.CancelledError) and task_is_cancelled():
                raise
            logger.exception("%s raised on %s; the run goes on", self._what, event.type)

    def now(self, event: AgentEvent, *extra: Any) -> Awaitable[None] | None:
        """Call the sink at once, as `__call__` does in its first step; returns what is left
        to await (the sink's awaitable, guarded the same way), or None when the sink is
        done. For a plain sink no coroutine is made: the loop's per-call path (4 events a
        tool call) writes `if (w := emit.now(event)) is not None: await w`."""
        sink = self._sink
        if sink is None:
            return None
        try:
            result = sink(event, *extra)
        except (asyncio.CancelledError, Exception) as exc:
            if isinstance(exc, asyncio.CancelledError) and task_is_cancelled():
                raise
            logger.exception("%s raised on %s; the run goes on", self._what, event.type)
            return None
        if result is not None and inspect.isawaitable(result):
            return self._finish(result, event)
        return None

    async def _finish(self, pending: Awaitable[Any], event: AgentEvent) -> None:
        try:
            await pending
        except (asyncio.CancelledError, Exception) as exc:
            if isinstance(exc, asyncio.CancelledError) and task_is_cancelled():
                raise
            logger.exception("%s raised on %s; the run goes on", self._what, event.type)


def guarded_sink(sink: Callable[..., Any] | None, what: str = "event sink") -> GuardedSink:
    """`sink` as a `GuardedSink` (the same object when it already is one; `None`: no events).

    Args:
        sink: a plain or async function of an event (and of `extra`), or None.
        what: how the log names it ("event sink", "on_event", "agent listener").
    """
    if isinstance(sink, GuardedSink):
        return sink
    return GuardedSink(sink, what)


# ── the tasks of a run ───────────────────────────────────────────────────────

RunTasks: TypeAlias = "set[asyncio.Future[Any]]"

_RUN_TASKS: ContextVar[tuple[RunTasks, ...]] = ContextVar("yiemagent_run_tasks", default=())
"""The task sets of the runs the current code is part of, outermost first (a sub-agent's
run inside a parent's tool adds its own)."""


@contextlib.contextmanager
def run_tasks(family: RunTasks) -> Iterator[None]:
    """Count the current task, and each task the run makes with `adopt_task` while this is
    entered, in `family` (the current task leaves it on exit; an adopted one when it ends).

    Why: a listener, hook or tool that awaits the run's own end (`Agent.wait_for_idle()`)
    would wait for itself. The run's code runs in the run's task and in tasks the loop makes
    (a parallel call, an async tool past its first wait, an update's listeners); a task the
    user's code starts is not in the family, so it may wait for the end.
    """
    task = asyncio.current_task()
    added = task is not None and task not in family
    if task is not None and added:
        family.add(task)
    token = _RUN_TASKS.set((*_RUN_TASKS.get(), family))
    try:
        yield
    finally:
        _RUN_TASKS.reset(token)
        if task is not None and added:
            family.discard(task)


def adopt_task(task: asyncio.Future[Any]) -> None:
    """Count `task`, which the run made to call user code, in every run the caller is
    part of (see `run_tasks`); no cost but a look-up outside a run."""
    for family in _RUN_TASKS.get():
        family.add(task)
        task.add_done_callback(family.discard)


def in_run_tasks(family: RunTasks) -> bool:
    """Whether the current task is one of `family`'s (the run's own or one it made)."""
    task = asyncio.current_task()
    return task is not None and task in family
