"""Helpers around the MCP SDK for the client side (DESIGN §12): the import check, error
texts, the watched streams between the session and its transport, paging `tools/list`,
the progress adapter."""

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
    "Ledger",
    "ProgressCallback",
    "RecordingStream",
    "WatchedStream",
    "describe",
    "first_problem",
    "leaf",
    "list_all_tools",
    "package_version",
    "progress_adapter",
    "require_sdk",
]

logger = logging.getLogger(__name__)

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


def _request_key(request_id: int | str) -> int | str:
    """The id as the SDK correlates it: "7" and 7 are one request."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


class Ledger:
    """The requests a session sent that still wait for an answer, by id.

    Written by `RecordingStream` and read by `WatchedStream`, both on the connection's
    event loop.
    """

    def __init__(self) -> None:
        self.pending: dict[int | str, str] = {}
        """id -> what the request is, for error texts ('the call to "x"')."""

    def sent(self, request_id: int | str, method: str, params: object) -> None:
        name = params.get("name") if isinstance(params, dict) else None
        what = f'the call to "{name}"' if method == "tools/call" else f"the {method} request"
        self.pending[_request_key(request_id)] = what

    def settle(self, request_id: int | str) -> str | None:
        """Forget a request that was answered or cancelled; returns what it was (None:
        not pending)."""
        return self.pending.pop(_request_key(request_id), None)


class RecordingStream:
    """The transport's write stream, noting in a `Ledger` each request sent and each
    `notifications/cancelled`."""

    def __init__(self, inner: Any, ledger: Ledger) -> None:
        self._inner = inner
        self._ledger = ledger

    async def send(self, item: Any) -> None:
        from mcp_types import JSONRPCNotification, JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self._ledger.sent(message.id, message.method, message.params)
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, int | str):
                self._ledger.settle(request_id)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> RecordingStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class WatchedStream:
    """The transport's read stream, reporting its end (EOF or closed) once to `on_end`,
    and standing between a broken server and the session: a `tools/list` answer loses the
    tools the SDK would refuse (an input schema that is no object schema, say), each named
    in a warning, instead of the whole answer being refused and the server lost.

    The end report is how a dead server process or a vanished HTTP server is noticed while
    no call is waiting (the next call reconnects instead of failing).
    """

    def __init__(
        self,
        inner: Any,
        on_end: Callable[[], None],
        *,
        ledger: Ledger,
        label: str,
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._ledger = ledger
        self._label = label
        self.protocol_version: Callable[[], str | None] = lambda: None
        """The session's negotiated version, set once the session exists."""

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return self._check(item)

    def _check(self, item: Any) -> Any:
        from mcp_types import JSONRPCResponse

        message = getattr(item, "message", None)
        if (
            isinstance(message, JSONRPCResponse)
            and self._ledger.settle(message.id) == "the tools/list request"
        ):
            message.result = self._usable_tools(message.result)
        return item

    def _usable_tools(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` without the tools the SDK would refuse, each left out with a warning."""
        from mcp_types import methods
        from pydantic import ValidationError

        tools = result.get("tools")
        if not isinstance(tools, list):
            return result  # not a listing at all: the SDK says so
        version = self.protocol_version() or "2025-11-25"  # the SDK's own fallback
        kept: list[Any] = []
        for tool in tools:
            try:
                methods.validate_server_result("tools/list", version, {"tools": [tool]})
            except ValidationError as exc:
                name = tool.get("name") if isinstance(tool, dict) else None
                logger.warning(
                    "%s: leaving out its tool %s: %s",
                    self._label,
                    repr(name) if isinstance(name, str) else "without a name",
                    first_problem(exc, skip=2),  # past ("tools", 0)
                )
                continue
            except (KeyError, ValueError):
                pass  # a version or method the SDK does not check: nor do we
            kept.append(tool)
        return {**result, "tools": kept}

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


def first_problem(exc: Any, *, skip: int = 0) -> str:
    """`field: problem` of a pydantic `ValidationError`'s first error, and how many more;
    `skip` leaves out the first parts of the field's path."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"][skip:])
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}" if where else f"{first['msg']}{more}"


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
