"""Helpers around the MCP SDK for the client side (DESIGN §12): the import check, error
texts, the watched read stream, paging `tools/list`, the progress adapter."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from yiemagent.errors import ConfigError, install_hint

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import Tool

__all__ = [
    "ProgressCallback",
    "WatchedStream",
    "describe",
    "leaf",
    "list_all_tools",
    "package_version",
    "progress_adapter",
    "require_sdk",
]

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
"""`(progress, total, message)` from `notifications/progress`; called on the connection's
thread, so it must be thread-safe (`on_update` is)."""


def require_sdk() -> None:
    """Import the MCP SDK, or explain how to install it.

    Raises:
        ConfigError: the `mcp` extra is not installed.
    """
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"MCP support needs the official MCP SDK: {install_hint('mcp')}") from exc
    # The client SDK logs what it cannot read with its traceback; with no logging set up,
    # Python's last-resort handler printed that into the terminal (a server's start-up
    # banner on stdout gave three screens). The connection reports it in one line; an
    # application that sets up logging still gets the SDK's records.
    client_logger = logging.getLogger("mcp.client")
    if not client_logger.handlers:
        client_logger.addHandler(logging.NullHandler())


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def unreadable_line(exc: BaseException) -> str:
    """What a server wrote that the SDK could not read as JSON-RPC, as one short line: the
    line (or the JSON value it held) when the SDK's error, a pydantic `ValidationError`,
    holds it, else `describe(exc)`."""
    errors = getattr(exc, "errors", None)
    try:
        line = errors()[0]["input"] if callable(errors) else None
    except Exception:  # no such error, or not shaped so
        line = None
    if line is None:
        return describe(exc)
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    text = line if isinstance(line, str) else repr(line)  # JSON, but no message (`1`)
    return repr(text if len(text) <= 120 else text[:117] + "...")


def describe(exc: BaseException) -> str:
    exc = leaf(exc)
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class WatchedStream:
    """The transport's read stream, reporting its end (EOF or closed) once to `on_end`.

    This is how a dead server process or a vanished HTTP server is noticed while no call
    is waiting (the next call reconnects instead of failing).
    """

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._on_end()
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def list_all_tools(session: ClientSession) -> list[Tool]:
    """Every page of `tools/list`."""
    from mcp.types import PaginatedRequestParams

    result = await session.list_tools()
    tools = list(result.tools)
    seen: set[str] = set()
    while result.next_cursor and result.next_cursor not in seen:
        seen.add(result.next_cursor)
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
    return tools


def progress_adapter(on_progress: ProgressCallback) -> ProgressFnT:
    """The SDK's async progress callback, calling the plain `on_progress`."""

    async def adapter(progress: float, total: float | None, message: str | None) -> None:
        on_progress(progress, total, message)

    return adapter


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("yiemagent")
    except PackageNotFoundError:
        return "0"
