"""What an `Agent` owns and closes when it closes (DESIGN §12: MCP servers).

`Agent.own(resource)` adds to the agent's `OwnedResources`; `Agent.close()` closes them
after the queued work, last owned first. A resource whose `close()` raises is logged and
the others are still closed. Used on the agent's event loop thread.
"""

from __future__ import annotations

import logging
from typing import Protocol

from yiemagent.errors import ConfigError

__all__ = ["Closeable", "OwnedResources"]

logger = logging.getLogger(__name__)


class Closeable(Protocol):
    """What an `Agent` can own: anything with an async `close()` (an MCP server)."""

    async def close(self) -> None:
        """Release the resource (awaited once, when the owning agent closes)."""
        ...


class OwnedResources:
    """The resources an agent owns, in the order it took them (each once)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Closeable] = []

    def add(self, resource: Closeable) -> None:
        """Own `resource` (a second `add` of the same one is a no-op).

        Raises:
            ConfigError: `resource` has no `close()`.
        """
        if not callable(getattr(resource, "close", None)):
            raise ConfigError(f"own() needs an object with an async close(), not {resource!r}")
        if resource not in self._items:
            self._items.append(resource)

    async def close_all(self) -> None:
        """Close every resource, last owned first; a failing `close()` is logged."""
        while self._items:
            resource = self._items.pop()
            try:
                await resource.close()
            except Exception:
                logger.exception("closing %r failed; the agent is closed anyway", resource)
