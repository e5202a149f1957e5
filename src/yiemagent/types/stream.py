"""`EventStream`: the single-consumer async stream of events that always ends (DESIGN §3)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

__all__ = ["EventStream"]

E = TypeVar("E")
R = TypeVar("R")


class EventStream(Generic[E, R]):
    """An async-iterable of events with a final result.

    One producer pushes events with `push` and finishes with `end(result)`; the stream is
    also finished by pushing an event for which `is_final(event)` is true, whose result is
    `extract(event)`. One consumer iterates it (iteration stops after the final event) and/or
    awaits `result()`. Events are buffered, never dropped; iterating after the end replays
    nothing. It is bound to the event loop of its first waiter and must be pushed to from
    that loop's thread. Invariant: whatever happens inside the producer, the stream ends;
    producers guarantee it with `try/finally`. A wait for the next event that is cancelled
    (`asyncio.wait_for(it.__anext__(), timeout)` running out) loses nothing: the same
    iterator goes on with the next event.
    """

    __slots__ = ("_buffer", "_done", "_extract", "_is_final", "_result", "_result_value", "_waiter")

    def __init__(
        self,
        is_final: Callable[[E], bool] | None = None,
        extract: Callable[[E], R] | None = None,
    ) -> None:
        self._buffer: deque[E] = deque()
        self._done = False
        self._result: asyncio.Future[R] | None = None
        self._result_value: tuple[R] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._is_final = is_final
        self._extract = extract

    @property
    def done(self) -> bool:
        """Whether the stream has ended."""
        return self._done

    def push(self, event: E) -> None:
        """Append an event; ignored once the stream has ended."""
        if self._done:
            return
        self._buffer.append(event)
        if self._is_final is not None and self._is_final(event):
            assert self._extract is not None
            self._finish(self._extract(event))
        self._wake()

    def end(self, result: R) -> None:
        """End the stream with `result` (ignored when it has already ended)."""
        if not self._done:
            self._finish(result)
            self._wake()

    def _finish(self, result: R) -> None:
        self._done = True
        self._result_value = (result,)
        if self._result is not None and not self._result.done():
            self._result.set_result(result)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> AsyncIterator[E]:
        return _Events(self)

    async def result(self) -> R:
        """The final result, once the stream has ended (does not consume events)."""
        if self._result_value is not None:
            return self._result_value[0]
        if self._result is None:
            self._result = asyncio.get_running_loop().create_future()
        return await self._result


class _Events(AsyncIterator[E]):
    """An iterator over an `EventStream`'s events. Not an async generator: a cancelled
    `__anext__` would close a generator, and the consumer would take the next call's
    `StopAsyncIteration` for the end of a stream that is still running."""

    __slots__ = ("_stream",)

    def __init__(self, stream: EventStream[E, Any]) -> None:
        self._stream = stream

    async def __anext__(self) -> E:
        stream = self._stream
        buffer = stream._buffer
        while not buffer:
            if stream._done:
                raise StopAsyncIteration
            waiter = stream._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if stream._waiter is waiter:
                    stream._waiter = None
        return buffer.popleft()
