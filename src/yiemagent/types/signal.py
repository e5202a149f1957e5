"""`AbortSignal`: cancellation shared by a run, its model calls and its tool calls."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

__all__ = ["AbortSignal"]

logger = logging.getLogger(__name__)


class AbortSignal:
    """A one-way abort flag that can be raised from any thread and awaited from any event loop.

    A run owns one signal; each tool call gets a `child()`: aborting the
    parent aborts every child, aborting a child touches nothing else. Listeners run on the
    thread that calls `abort`, once; they must not block. A listener that raises is logged.
    """

    __slots__ = (
        "_children",
        "_listeners",
        "_lock",
        "_on_parent_abort",
        "_parent",
        "aborted",
        "reason",
    )

    def __init__(self) -> None:
        self.aborted: bool = False
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str | None], None]] = []
        self._children: dict[int, AbortSignal] = {}
        """Attached children by `id()`. A child is told of this signal's abort by whoever
        pops it: the abort, or the child itself when it saw the abort while attaching;
        `detach()` pops it too. One atomic `dict.pop` decides, so no lock is needed and a
        tool call attaches and detaches its signal for two dict operations."""
        self._parent: AbortSignal | None = None
        self._on_parent_abort: Callable[[str | None], None] | None = None

    def abort(self, reason: str | None = None) -> None:
        """Raise the flag (idempotent: a second call changes nothing) and notify the children,
        then the listeners."""
        with self._lock:
            if self.aborted:
                return
            self.reason = reason  # before the flag: a child that sees the flag reads it
            self.aborted = True
            listeners, self._listeners = self._listeners, []
        if self._on_parent_abort is None:  # else it still follows the parent, for the hook
            self.detach()
        children = self._children
        for key in list(children):
            child = children.pop(key, None)
            if child is not None:
                self._notify(child._parent_aborted, reason)
        for listener in listeners:
            self._notify(listener, reason)

    @staticmethod
    def _notify(listener: Callable[[str | None], None], reason: str | None) -> None:
        try:  # one that raises must not keep the others from running
            listener(reason)
        except Exception:
            logger.exception("an abort listener raised; the other listeners still run")

    def add_listener(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """Call `listener(reason)` on abort (at once if already aborted); returns a remover."""
        with self._lock:
            if not self.aborted:
                self._listeners.append(listener)
                return lambda: self._remove(listener)
        listener(self.reason)
        return lambda: None

    def _remove(self, listener: Callable[[str | None], None]) -> None:
        with self._lock:
            if listener in self._listeners:  # else already called (aborted) or removed
                self._listeners.remove(listener)

    def child(self, on_parent_abort: Callable[[str | None], None] | None = None) -> AbortSignal:
        """A signal aborted when this one is; aborting it leaves this one alone.

        Args:
            on_parent_abort: called with the reason, on the aborting thread, right after the
                child was aborted because this signal was (also when the child had already
                aborted itself; never for the child's own abort). A tool call's deadline
                starts the abort grace there, without a listener of its own.

        Call `detach()` on the child when its work is over, so a long-lived parent (a run's
        signal, across many tool calls) does not keep every child attached.
        """
        child = AbortSignal()
        child._on_parent_abort = on_parent_abort
        child._parent = self
        key = id(child)
        children = self._children
        children[key] = child
        if self.aborted and children.pop(key, None) is not None:  # the abort missed it
            child._parent_aborted(self.reason)
        return child

    def _parent_aborted(self, reason: str | None) -> None:
        self._parent = None  # the parent has let go of it
        self.abort(reason)
        hook = self._on_parent_abort
        if hook is not None:
            hook(reason)

    def detach(self) -> None:
        """Stop following the parent signal (see `child`); a no-op on a signal with none."""
        parent, self._parent = self._parent, None
        if parent is not None:
            parent._children.pop(id(self), None)

    async def wait(self) -> str | None:
        """Wait until aborted; returns the reason."""
        if self.aborted:
            return self.reason
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()

        def wake(reason: str | None) -> None:
            def settle() -> None:
                if not future.done():
                    future.set_result(reason)

            if loop.is_closed():
                return
            loop.call_soon_threadsafe(settle)

        remove = self.add_listener(wake)
        try:
            return await future
        finally:
            remove()

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self.aborted}, reason={self.reason!r})"
