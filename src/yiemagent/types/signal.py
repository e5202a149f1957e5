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

    A run owns one signal; each tool call gets a `child()` (DESIGN R-4.5): aborting the
    parent aborts every child, aborting a child touches nothing else. Listeners run on the
    thread that calls `abort`, once; they must not block. A listener that raises is logged.
    """

    __slots__ = (
        "_follow",
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
        self._parent: AbortSignal | None = None
        self._follow: Callable[[str | None], None] | None = None
        self._on_parent_abort: Callable[[str | None], None] | None = None

    def abort(self, reason: str | None = None) -> None:
        """Raise the flag (idempotent: a second call changes nothing) and notify listeners."""
        with self._lock:
            if self.aborted:
                return
            self.aborted = True
            self.reason = reason
            listeners, self._listeners = self._listeners, []
        if self._on_parent_abort is None:  # else it still follows the parent, for the hook
            self.detach()
        for listener in listeners:  # one that raises must not keep the others from running
            try:
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
                starts the abort grace there (DESIGN R-4.5), without a listener of its own.

        Call `detach()` on the child when its work is over, so a long-lived parent (a run's
        signal, across many tool calls) does not keep every child listening.
        """
        child = AbortSignal()
        child._on_parent_abort = on_parent_abort
        follow = child._parent_aborted
        with self._lock:
            if not self.aborted:
                self._listeners.append(follow)
                child._parent = self
                child._follow = follow
                return child
        follow(self.reason)
        return child

    def _parent_aborted(self, reason: str | None) -> None:
        self._parent = self._follow = None  # the parent has dropped its listeners
        self.abort(reason)
        hook = self._on_parent_abort
        if hook is not None:
            hook(reason)

    def detach(self) -> None:
        """Stop following the parent signal (see `child`); a no-op on a signal with none."""
        parent, self._parent = self._parent, None
        follow, self._follow = self._follow, None
        if parent is not None and follow is not None:
            parent._remove(follow)

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
