"""Calling user callbacks that may be plain or async, and the run's event sink (R-5.1b)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from yiemagent.types import AgentEvent

__all__ = ["Emit", "EventSink", "make_emit", "maybe_await"]

logger = logging.getLogger("yiemagent.loop")

T = TypeVar("T")

EventSink: TypeAlias = Callable[[AgentEvent], "Awaitable[None] | None"]
"""What users pass as `emit` (the seeds' agentEventSink): plain or async."""

Emit: TypeAlias = Callable[[AgentEvent], Awaitable[None]]
"""The loop's internal sink: always async, never raises."""


async def maybe_await(value: T | Awaitable[T]) -> T:
    """`value` itself, or what it resolves to when it is awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


def make_emit(sink: EventSink | None) -> Emit:
    """Wrap a user sink so that it is awaited when async and its exceptions are logged with
    the event type and otherwise ignored (DESIGN R-5.1b)."""

    async def emit(event: AgentEvent) -> None:
        if sink is None:
            return
        try:
            result: Any = sink(event)
            if result is not None and inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("event sink raised on %s; the run goes on", event.type)

    return emit
