"""The seeds' channels of an `Agent` (R-6.4): the prompt channel (`send` /
`take_response`: sent prompts run one after another, their answers taken in order), the
steering and follow-up queues a run polls, and their bounds (prompts 16, responses 16,
follow-ups 32; a full queue raises `AgentBusyError`).

Nothing here is bound to an event loop. Queues are plain deques (appending from any thread
is safe), and `Notifier` creates a future on the running loop only while someone waits, so
an idle `Agent` can be used from one `asyncio.run` and then from the next.
`PromptChannel` is the seeds' input and output channels; `TurnQueues` the steering and
follow-up queues a run polls, which give back what a run took but never delivered.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Generic, Literal, TypeAlias, TypeVar

from yiemagent.errors import AgentBusyError

__all__ = ["Notifier", "PromptChannel", "QueueMode", "TurnQueues"]

logger = logging.getLogger(__name__)


T = TypeVar("T")


R = TypeVar("R")


PROMPT_QUEUE_SIZE = 16


FOLLOW_UP_QUEUE_SIZE = 32
"""Input and output channels 16, follow-up channel 32."""


QueueMode: TypeAlias = Literal["one-at-a-time", "all"]
"""How many queued messages one poll takes: the oldest one, or every one."""


class BoundedQueue(Generic[T]):
    """A FIFO with an optional bound; `put` on a full queue raises `AgentBusyError`.

    Messages a run took but never delivered go back with `restore_front`, ahead of anything
    queued since, and may exceed the bound for that moment (nothing is ever dropped).
    """

    __slots__ = ("_hint", "_items", "maxsize", "name")

    def __init__(self, name: str, maxsize: int | None = None, *, hint: str = "") -> None:
        self.name = name
        self.maxsize = maxsize
        self._hint = hint
        self._items: deque[T] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @property
    def full(self) -> bool:
        """Whether `put` would raise."""
        return self.maxsize is not None and len(self._items) >= self.maxsize

    def put(self, item: T) -> None:
        """Append `item`.

        Raises:
            AgentBusyError: the queue holds `maxsize` items already.
        """
        self.put_all([item])

    def put_all(self, items: Sequence[T]) -> None:
        """Append `items`, all of them or none: a caller retrying after the error must not
        queue the first ones twice.

        Raises:
            AgentBusyError: the queue has room for fewer than `len(items)`.
        """
        waiting = len(self._items)
        if self.maxsize is not None and waiting + len(items) > self.maxsize:
            if waiting >= self.maxsize:
                said = f"the {self.name} queue is full ({waiting} waiting)"
            else:
                room, given = self.maxsize - waiting, len(items)
                said = f"the {self.name} queue has room for {room} ({waiting} waiting), not {given}"
            raise AgentBusyError(f"{said}; {self._hint}".rstrip("; "))
        self._items.extend(items)

    def take(self, mode: QueueMode) -> list[T]:
        """Remove and return the oldest item ("one-at-a-time") or all of them ("all")."""
        if not self._items:
            return []
        if mode == "all":
            items = list(self._items)
            self._items.clear()
            return items
        return [self._items.popleft()]

    def pop(self) -> T:
        """Remove and return the oldest item (the queue must not be empty)."""
        return self._items.popleft()

    def restore_front(self, items: Iterable[T]) -> None:
        """Put `items` back at the front, in their order."""
        self._items.extendleft(reversed(list(items)))

    def clear(self) -> None:
        """Drop every item."""
        self._items.clear()


class Notifier:
    """Wake every waiter when something changed; waiters re-check their own condition.

    `wait()` creates its future on the loop that awaits it, so the notifier belongs to no loop.
    `notify()` must be called on the thread of the waiting loop (the Agent's run code does).
    """

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    async def wait(self) -> None:
        """Wait until the next `notify()`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        finally:
            if future in self._waiters:
                self._waiters.remove(future)

    def notify(self) -> None:
        """Wake all current waiters (waiters of a closed loop are dropped)."""
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done() and not future.get_loop().is_closed():
                future.set_result(None)


class PromptChannel(Generic[T, R]):
    """The seeds' input and output channels.

    Sent prompts (`inbox`, bound 16) run one at a time, in order, through `run_one` in a
    worker task that exists only while prompts wait; each run's answer goes to `outbox`
    (bound 16), read in order by `take`. With 16 answers untaken the next run waits. The
    worker starts when `can_start()` allows it (no other run active) and a loop is running.
    """

    __slots__ = ("_can_start", "_changed", "_run_one", "_worker", "closed", "inbox", "outbox")

    def __init__(
        self,
        run_one: Callable[[T], Awaitable[R]],
        can_start: Callable[[], bool],
        changed: Notifier,
        *,
        size: int = PROMPT_QUEUE_SIZE,
    ) -> None:
        self._run_one = run_one
        self._can_start = can_start
        self._changed = changed
        self._worker: asyncio.Task[None] | None = None
        self.closed = False
        self.inbox: BoundedQueue[T] = BoundedQueue(
            "prompt", size, hint="take responses or await wait_for_idle() first"
        )
        self.outbox: BoundedQueue[R] = BoundedQueue("response", size)

    @property
    def busy(self) -> bool:
        """Whether the worker is alive (running a prompt or waiting to)."""
        worker = self._worker
        if worker is None:
            return False
        if worker.done() or worker.get_loop().is_closed():
            self._worker = None  # its loop went away with the task unfinished
            return False
        return True

    def put(self, item: T) -> None:
        """Queue a prompt and start the worker when possible.

        Raises:
            AgentBusyError: closed, or `size` prompts are waiting.
        """
        if self.closed:
            raise AgentBusyError("the agent is closed; create a new Agent")
        self.inbox.put(item)
        self.start()

    def start(self) -> None:
        """Start the worker if prompts wait, no run is active, and a loop is running."""
        if not self.inbox or self.busy or not self._can_start():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: the next take/wait starts it
        self._worker = loop.create_task(self._drain())

    async def take(self) -> R:
        """The oldest answer; waits for it.

        Raises:
            AgentBusyError: closed with nothing left to answer.
        """
        while not self.outbox:
            self.start()
            if self.closed and not self.inbox and not self.busy:
                raise AgentBusyError("the agent is closed and no response is left")
            await self._changed.wait()
        answer = self.outbox.pop()
        self._changed.notify()
        return answer

    async def _drain(self) -> None:
        try:
            while self.inbox:
                while self.outbox.full:
                    await self._changed.wait()
                answer = await self._run_one(self.inbox.pop())
                self.outbox.put(answer)
                self._changed.notify()
        finally:
            self._worker = None
            self._changed.notify()


class TurnQueues(Generic[T]):
    """The steering queue (unbounded) and the follow-up queue (bound 32) a run polls.


    Each poll takes one message ("one-at-a-time") or all of them ("all") and remembers them
    until `delivered(message)` (the run emitted its `message_start`); `restore()` at the end
    of the run puts the ones never delivered back at the front of their queue, in order, so
    each is delivered exactly once. Appending is safe from any thread.
    """

    __slots__ = (
        "_resumed_by_steering",
        "_taken",
        "follow_up_mode",
        "follow_ups",
        "steering",
        "steering_mode",
    )

    def __init__(
        self,
        steering_mode: QueueMode,
        follow_up_mode: QueueMode,
        *,
        follow_up_size: int = FOLLOW_UP_QUEUE_SIZE,
    ) -> None:
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode
        self.steering: BoundedQueue[T] = BoundedQueue("steering")
        self.follow_ups: BoundedQueue[T] = BoundedQueue(
            "follow-up", follow_up_size, hint="wait for the run to take some first"
        )
        self._taken: list[tuple[BoundedQueue[T], T]] = []
        self._resumed_by_steering = False
        """A resume took its prompts from the steering queue: the run's first poll (the
        loop's, at its start) hands over nothing, so "one-at-a-time" stays one a turn."""

    def __bool__(self) -> bool:
        return bool(self.steering or self.follow_ups)

    def poll_steering(self) -> list[T]:
        """The loop's `get_steering_messages`."""
        if self._resumed_by_steering:
            self._resumed_by_steering = False
            return []
        return self._take(self.steering, self.steering_mode)

    def poll_follow_ups(self) -> list[T]:
        """The loop's `get_follow_up_messages`."""
        return self._take(self.follow_ups, self.follow_up_mode)

    def poll_to_resume(self) -> list[T]:
        """What starts a resume from a transcript that ends with an assistant message: the
        steering messages when any wait, else the follow-ups (polled, so a run that never
        starts gives them back); empty when both queues are. Steering messages taken here
        open the run as pi's `continue()` has them, without the loop's first poll, so in
        "one-at-a-time" mode a second one waits for the next turn."""
        if not self.steering:
            return self.poll_follow_ups()
        taken = self.poll_steering()
        self._resumed_by_steering = True
        return taken

    def _take(self, queue: BoundedQueue[T], mode: QueueMode) -> list[T]:
        taken = queue.take(mode)
        self._taken.extend((queue, item) for item in taken)
        return taken

    def delivered(self, item: object) -> None:
        """`item` reached the transcript (its `message_start`)."""
        if self._taken:
            self._taken = [pair for pair in self._taken if pair[1] is not item]

    def restore(self) -> None:
        """Put what was taken but never delivered back at the front of its queue."""
        left, self._taken = self._taken, []
        self._resumed_by_steering = False
        for queue in (self.steering, self.follow_ups):
            mine = [item for owner, item in left if owner is queue]
            if mine:
                logger.info("returning %d undelivered %s message(s)", len(mine), queue.name)
                queue.restore_front(mine)

    def clear(self) -> None:
        """Drop every queued message."""
        self.steering.clear()
        self.follow_ups.clear()
