"""The connection to an MCP server: `MCPServer`, the base of `MCPServerStdio` and
`MCPServerHTTP` (DESIGN §12).

Each server object owns at most one connection, which lives on its own event loop thread
(`LoopThread`), so it survives the caller's loop: `asyncio.run(add_server(...))` followed by
`agent.prompt_sync(...)` works. Callers on any loop or thread reach it through
`call_tool`, `refresh_tools` and `close`. A connection still open when the interpreter
exits (a program ended by Ctrl-C mid-run) is closed then, its stdio server stopped.

Failures never hang:
- the server process dies or the HTTP server goes away: the transport's end is noticed at
  once, every call in flight gets `MCPCallError` ("closed the connection while ... was
  running"), and the server is marked down;
- the next call reconnects once (shared by the calls that arrive together); if that fails,
  the call fails with the reason;
- `initialize` and the first `tools/list` must finish within `connect_timeout_s`, and
  `close` stops a connect still waiting for them at once;
- a server that goes silent mid-call (frozen, or a tool stuck for good) fails the call once
  it has sent nothing about it for the server's `timeout_s`, saying it went silent: the
  HTTP transport bounds each read of a reply, and over stdio, whose one stream carries
  every call, `_call_once` bounds the wait for the call's result or progress;
- an answer that matches no pending request (or an error with a null id), or one that is
  not JSON-RPC, ends the requests it may have been meant for, saying so (`WatchedStream`);
- listing the tools again must finish within `connect_timeout_s`.

What a server logs through MCP (`notifications/message`) goes to this module's logger at
the nearest Python level, named by the server, so it is never dropped unseen.

The SDK (`mcp`, the `mcp` extra) is imported only when a connection opens.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from yiemagent.ai import sanitize_surrogates
from yiemagent.errors import ConfigError, MCPConnectionError
from yiemagent.mcp._errors import MCPCallAborted, MCPCallError, UndeliveredCall
from yiemagent.mcp._loop_thread import LoopThread
from yiemagent.mcp._sdk import (
    PROTOCOL_ERROR,
    Ledger,
    ProgressCallback,
    RecordingStream,
    WatchedStream,
    describe,
    first_problem,
    leaf,
    lenient_session,
    list_all_tools,
    one_line,
    package_version,
    progress_adapter,
    require_sdk,
    unreadable_line,
)
from yiemagent.mcp._stdio import LineTooLong
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import is_seconds

if TYPE_CHECKING:
    from mcp import ClientSession, MCPError
    from mcp.types import CallToolResult, Tool

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "MCPServer",
    "ProgressCallback",
]

logger = logging.getLogger(__name__)

# MCP's log levels (RFC 5424's) as Python's: notice is between info and warning,
# alert and emergency are above critical.
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

DEFAULT_CONNECT_TIMEOUT_S = 30.0
"""Seconds `initialize` plus the first `tools/list` may take before connecting fails."""

_EVENT_TOO_LONG = re.compile(r"SSE stream failed: .*exceeded the (\d+) byte limit")
"""The SDK's made-up CONNECTION_CLOSED error for a request whose answer, an SSE event, was
longer than the HTTP server's `max_message_bytes` (`max_sse_event_size`)."""

_REFRESH_WAIT_S = 5.0  # how long a call waits for a tools/list it triggered (list_changed)

ToolsListener = Callable[[Sequence["Tool"]], None]


class MCPServer:
    """One MCP server and the lifetime of the connection to it.

    Use `async with server:` (or `await server.connect()` ... `await server.close()`), or
    hand it to `add_server(agent, server)` so that `Agent.close()` closes it. `connect` and
    `close` may be awaited from any event loop; the connection itself runs on a thread of
    its own. Subclasses say how to open the transport.

    Attributes:
        name: names the server in tool sources, logs and error texts.
        connect_timeout_s: seconds `initialize` and the first `tools/list` may take.
        timeout_option: the option that set the server's `timeout_s` where it is not
            `timeout_s` itself (the CLI's `--mcp-timeout`), so that the error of a call the
            server went silent about names the setting its user can change; None for
            `timeout_s`.
    """

    def __init__(self, *, name: str, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
        if not is_seconds(connect_timeout_s):
            raise ConfigError(f"connect_timeout_s must be > 0 seconds, not {connect_timeout_s!r}")
        self.name = name
        self.connect_timeout_s = connect_timeout_s
        self.timeout_option: str | None = None
        self._thread: LoopThread | None = None
        self._thread_lock = threading.Lock()
        self._state: Literal["closed", "up", "down"] = "closed"
        self._down_reason = ""
        self._session: ClientSession | None = None
        self._wake: asyncio.Event | None = None
        self._main: asyncio.Task[None] | None = None
        self._reconnect: asyncio.Lock | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self._stale = False
        """A `tools/list_changed` came while a refresh was under way."""
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._undelivered = False
        self._silences = 0
        """Reads the transport gave up on because the server sent nothing for
        `_silence_s` (counted by a transport that watches for it)."""
        self._refusal: str | None = None
        """The HTTP status (and challenge) of the last request the server refused, which
        the SDK reports only as "Server returned an error response" (set by the HTTP
        transport; taken by `_why`)."""
        self._session_gone = False
        """The last request the HTTP server refused carried a session id it did not know
        (404): it restarted or ended the session (set by the HTTP transport)."""
        self._tools: list[Tool] = []
        self._listeners: list[ToolsListener] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, state={self._state!r})"

    @property
    def label(self) -> str:
        """`MCP server "name"`, as error texts name it."""
        return f'MCP server "{self.name}"'

    # ── what subclasses provide ────────────────────────────────────────────

    def _transport(self) -> contextlib.AbstractAsyncContextManager[tuple[Any, Any]]:
        """The SDK transport: an async context manager yielding (read, write) streams."""
        raise NotImplementedError

    @property
    def _silence_s(self) -> float | None:
        """Seconds of silence after which a reply is given up (None: it is awaited as long
        as the connection lives)."""
        return None

    @property
    def _silence_in_transport(self) -> bool:
        """Whether the transport itself gives up a reply after `_silence_s` (HTTP: a read
        timeout); else each call watches its own reply."""
        return False

    # ── public lifetime ────────────────────────────────────────────────────

    @property
    def connected(self) -> bool:
        """Whether the connection is open and the server has not gone away."""
        return self._state == "up"

    @property
    def tools(self) -> list[Tool]:
        """The server's tools (`mcp.types.Tool`) from its last `tools/list`."""
        return list(self._tools)

    async def connect(self) -> None:
        """Start the server (stdio) or reach it (HTTP), `initialize`, and list its tools.
        Does nothing when already connected.

        Raises:
            ConfigError: the `mcp` extra is missing.
            MCPConnectionError: the process could not start, the server refused or did not
                answer `initialize` within `connect_timeout_s`, or `tools/list` failed.
        """
        require_sdk()
        with self._thread_lock:  # two loops connecting at once share one thread
            thread = self._thread
            if thread is None or not thread.running:
                try:
                    thread = self._thread = LoopThread(f"yiem-mcp-{self.name}"[:60])
                except (OSError, RuntimeError) as exc:  # out of descriptors or threads
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    raise MCPConnectionError(
                        f"{self.label}: cannot start: no thread for its connection: {why}"
                    ) from None
        _close_at_exit(self)
        try:
            await asyncio.wrap_future(thread.submit(self._ensure_up()))
        except MCPConnectionError:
            if self._state == "closed":  # never up: its thread's descriptors go back
                await self.close()
            raise

    async def close(self) -> None:
        """Close the connection (a stdio server's process is stopped) and its thread.
        Calls still in flight get an error result. Idempotent; a later `connect` reopens."""
        thread, self._thread = self._thread, None
        with _OPEN_LOCK:
            _OPEN.discard(self)
        if thread is None or not thread.running:
            return
        with contextlib.suppress(RuntimeError):
            await asyncio.wrap_future(thread.submit(self._shutdown()))
        await asyncio.to_thread(thread.stop)

    async def __aenter__(self) -> MCPServer:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def add_tools_listener(self, listener: ToolsListener) -> Callable[[], None]:
        """Call `listener(tools)` on the connection's thread after every `tools/list` that
        followed a `notifications/tools/list_changed` or a reconnect. Returns a remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def refresh_tools(self) -> list[Tool]:
        """List the server's tools again (all pages) and tell the listeners.

        Raises:
            MCPConnectionError: not connected and reconnecting failed, or the server did
                not answer within `connect_timeout_s`.
        """
        thread = self._connected_thread()
        await asyncio.wrap_future(thread.submit(self._refresh()))
        return self.tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        signal: AbortSignal | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Send `tools/call` and wait for the server's `CallToolResult` (from any loop).

        When the server has gone away since the last call, one reconnect is tried first.
        Aborting `signal` sends `notifications/cancelled` for the request and raises.

        Args:
            name: the tool's name on the server (not prefixed).
            arguments: the JSON arguments object; each lone surrogate in it is sent as
                U+FFFD.
            signal: aborts the call.
            on_progress: receives `notifications/progress` (on the connection's thread).

        Raises:
            MCPCallAborted: `signal` was aborted.
            MCPCallError: the connection closed during the call, reconnecting failed, the
                server was closed, answered with a JSON-RPC error, or broke the protocol
                (an answer that matches no request, is not JSON-RPC, or is no
                `CallToolResult`).
        """
        try:
            thread = self._connected_thread()
        except MCPConnectionError as exc:
            raise MCPCallError(str(exc)) from None
        # A lone surrogate goes as U+FFFD: UTF-8 cannot carry it, and a request the SDK
        # cannot write loses the connection (and a stdio server's process with it).
        sent = sanitize_surrogates(dict(arguments))
        future = thread.submit(self._call(name, sent, on_progress))
        remove = signal.add_listener(lambda _r: _cancel(future)) if signal is not None else None
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if signal is not None and signal.aborted and future.cancelled():
                raise MCPCallAborted(
                    f'Operation aborted: the call to "{name}" was cancelled '
                    f"(notifications/cancelled sent to {self.label})"
                ) from None
            raise
        finally:
            if remove is not None:
                remove()
            if not future.done():  # the caller was cancelled: cancel the request too
                future.cancel()

    def _connected_thread(self) -> LoopThread:
        thread = self._thread
        if thread is None or not thread.running:
            raise MCPConnectionError(
                f"{self.label} is not connected: use `async with server:` or "
                "`await add_server(...)` first"
            )
        return thread

    # ── on the connection's thread ─────────────────────────────────────────

    async def _ensure_up(self) -> None:
        if self._reconnect is None:
            self._reconnect = asyncio.Lock()
        async with self._reconnect:
            if self._state == "up":
                return
            was_down = self._state == "down"
            reason = self._down_reason
            try:
                await self._open()
            except MCPConnectionError as exc:
                if was_down:
                    raise MCPCallError(
                        f"{self.label} is unavailable: it closed the connection "
                        f"({reason}) and reconnecting failed: {exc}"
                    ) from None
                raise
            if was_down:
                logger.info("MCP server %s: reconnected", self.name)
                self._tell_listeners()

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._wake = asyncio.Event()
        self._undelivered = False
        self._main = asyncio.ensure_future(self._run(ready, self._wake))
        await ready

    async def _run(self, ready: asyncio.Future[None], wake: asyncio.Event) -> None:
        """Hold one session open until `wake` (closed by us, or the transport ended)."""
        import anyio
        from mcp.types import Implementation

        reason = "the connection closed"
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    read, write = await stack.enter_async_context(self._transport())
                except Exception as exc:
                    raise MCPConnectionError(
                        f"{self.label}: cannot start: {describe(exc)}"
                    ) from exc
                ledger = Ledger()
                watched = WatchedStream(read, wake.set, ledger=ledger, label=self.label)
                session = await stack.enter_async_context(
                    lenient_session()(
                        watched,
                        RecordingStream(write, ledger),
                        message_handler=self._on_message,
                        logging_callback=self._on_log,
                        client_info=Implementation(name="yiemagent", version=package_version()),
                    )
                )
                watched.protocol_version = lambda: session.protocol_version
                try:
                    with anyio.fail_after(self.connect_timeout_s):
                        await session.initialize()
                        tools = await list_all_tools(session)
                except TimeoutError:
                    raise MCPConnectionError(
                        f"{self.label} did not answer initialize and tools/list "
                        f"within {self.connect_timeout_s:g} s"
                    ) from None
                self._session = session
                self._tools = tools
                self._state = "up"
                ready.set_result(None)
                await wake.wait()
                reason = self._end_reason
        except BaseException as exc:
            if not ready.done():
                error = exc if isinstance(exc, MCPConnectionError) else None
                if isinstance(exc, asyncio.CancelledError):  # `close` stopped the connect
                    error = MCPConnectionError(f"{self.label} was closed while connecting")
                why = self._why(describe(exc))
                if _closed(leaf(exc)):  # "MCPError: Connection closed" said nothing of whom
                    why += f" ({self._end_reason} before it answered initialize)"
                error = error or MCPConnectionError(f"{self.label}: {why}")
                said = self._last_said()
                if said and not isinstance(exc, asyncio.CancelledError):
                    # The server's own reason ("missing config") is on its stderr; the SDK
                    # saw only the closed pipe.
                    error = MCPConnectionError(f"{error}; its stderr said: {said}")
                ready.set_exception(error)
            elif not isinstance(exc, asyncio.CancelledError):
                reason = describe(exc)
                # A refused connection (the HTTP server is gone) delivered nothing, so the
                # call that met it may be sent again after a reconnect.
                self._undelivered = isinstance(leaf(exc), ConnectionError) or (
                    type(leaf(exc)).__name__ in ("ConnectError", "ConnectTimeout")
                )
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            self._session = None
            if self._state == "up":
                self._state = "down"
                self._down_reason = reason
                logger.warning("MCP server %s: %s", self.name, reason)
            self._fail_in_flight()

    @property
    def _end_reason(self) -> str:
        return "the transport closed"

    def _last_said(self) -> str | None:
        """The last line the server wrote to its stderr, when the transport keeps one."""
        return None

    def _fail_in_flight(self) -> None:
        for task in list(self._in_flight):
            task.cancel()

    async def _shutdown(self) -> None:
        self._state = "closed"
        self._down_reason = "the connection was closed"
        if self._wake is not None:
            self._wake.set()
        if self._main is not None:
            if self._session is None:  # still connecting: `wake` cannot stop initialize
                self._main.cancel()
            with contextlib.suppress(BaseException):
                await self._main
        self._fail_in_flight()

    async def _call(
        self, name: str, arguments: dict[str, Any], on_progress: ProgressCallback | None
    ) -> CallToolResult:
        """One `tools/call`; sent again once after a reconnect only when the server provably
        never got it (connection refused, or an HTTP session the server no longer knows)."""
        task = asyncio.current_task()
        if task is not None:  # see `_read_end`
            task.add_done_callback(_read_end)
        for attempt in (1, 2):
            if self._state == "closed":
                raise MCPCallError(f"{self.label} was closed")
            if self._state == "down":
                await self._ensure_up()
            try:
                result = await self._call_once(name, arguments, on_progress)
            except UndeliveredCall as exc:
                if attempt == 2:
                    raise MCPCallError(str(exc)) from None
                await self._wound_down()  # sent again on a new session, not the one closing
                continue
            await asyncio.sleep(0)  # let a list_changed sent with the result start its refresh
            refreshing = self._refreshing
            if refreshing is not None and not refreshing.done():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(refreshing), _REFRESH_WAIT_S)
            return result
        raise AssertionError("unreachable")

    async def _call_once(
        self, name: str, arguments: dict[str, Any], on_progress: ProgressCallback | None
    ) -> CallToolResult:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED
        from pydantic import ValidationError

        session = self._session
        assert session is not None
        task = asyncio.current_task()
        assert task is not None
        self._in_flight.add(task)
        silences = self._silences
        closed = False
        try:
            bound = None if self._silence_in_transport else self._silence_s
            if bound is None:
                progress = progress_adapter(on_progress) if on_progress is not None else None
                return await session.call_tool(name, arguments, progress_callback=progress)
            return await _call_bounded(session, name, arguments, on_progress, bound)
        except TimeoutError:  # `_call_bounded` cancelled it, sending notifications/cancelled
            raise MCPCallError(self._silent(name)) from None
        except asyncio.CancelledError:
            if self._state == "up" or task.cancelling() > 1:
                raise  # the caller cancelled (abort, timeout)
            task.uncancel()  # we cancelled it because the connection ended
            closed = True
        except MCPError as exc:
            if self._knows_no_session(exc):  # the HTTP server restarted: open a new session
                if self._wake is not None:
                    self._wake.set()
                raise UndeliveredCall(self._lost(name)) from None
            if exc.data == PROTOCOL_ERROR:  # the server broke the protocol (`WatchedStream`)
                raise MCPCallError(exc.message) from None
            too_long = _EVENT_TOO_LONG.match(exc.message) if exc.code == CONNECTION_CLOSED else None
            if too_long is not None:  # the answer, not the connection, was lost: say which
                raise MCPCallError(
                    f'{self.label} answered the call to "{name}" with a message longer than '
                    f"its max_message_bytes ({too_long[1]} bytes), skipped"
                ) from None
            if exc.code != CONNECTION_CLOSED:
                raise MCPCallError(
                    f"{self.label} refused the call: {self._why(exc.message)}"
                ) from None
            closed = True
        except ValidationError as exc:
            raise MCPCallError(
                f'{self.label} answered "{name}" with a result that is no CallToolResult: '
                f"{first_problem(exc)}"
            ) from None
        finally:
            self._in_flight.discard(task)
        assert closed
        raise await self._settle_lost(name, silent=self._silences != silences)

    def _why(self, error: str) -> str:
        """`error` followed by the HTTP status of the request the server refused, when the
        transport saw one (the SDK's own text does not say it: a 401 read as "Server
        returned an error response")."""
        refusal, self._refusal = self._refusal, None
        error = one_line(error)
        return f"{error} ({refusal})" if refusal else error

    def _knows_no_session(self, exc: MCPError) -> bool:
        """Whether `exc` says the HTTP server knows no such session (404: it restarted or
        ended it), so the request never ran and a new session may send it again."""
        from mcp.types import INVALID_REQUEST

        return exc.code == INVALID_REQUEST and (
            exc.message == "Session terminated" or self._session_gone
        )

    async def _wound_down(self) -> None:
        """Wait until the session that is ending has closed (state "down")."""
        main = self._main
        if main is not None and not main.done():
            await asyncio.wait({main}, timeout=self.connect_timeout_s)

    async def _settle_lost(self, tool: str, *, silent: bool) -> MCPCallError:
        """After CONNECTION_CLOSED: give the session a moment to wind down, so the error can
        say why and whether the request was delivered. `silent`: the transport gave up
        because the server sent nothing for `_silence_s` (it got the request)."""
        main = self._main
        if main is not None and not main.done():
            await asyncio.wait({main}, timeout=1.0)
        if silent and self._state != "closed":
            return MCPCallError(self._silent(tool))
        if self._undelivered and self._state == "down":
            return UndeliveredCall(self._lost(tool))
        return self._lost(tool)

    def _silent(self, tool: str) -> str:
        bound = self.timeout_option or "its timeout_s"
        return (
            f'{self.label} went silent while "{tool}" was running: nothing came for '
            f"{self._silence_s:g} s ({bound}); it neither answered nor closed the connection"
        )

    def _lost(self, tool: str) -> MCPCallError:
        if self._state == "closed":
            return MCPCallError(f'{self.label} was closed while "{tool}" was running')
        why = self._down_reason or "the connection closed"
        return MCPCallError(
            f'{self.label} closed the connection while "{tool}" was running ({why})'
        )

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            if self._refreshing is not None and not self._refreshing.done():
                self._stale = True  # the refresh under way lists once more when it is done
            else:
                self._refreshing = asyncio.ensure_future(self._refresh_after_change())
        elif isinstance(message, LineTooLong):
            logger.warning(
                "MCP server %s wrote a line longer than its max_message_bytes (%d bytes), "
                "skipped: %s",
                self.name,
                message.limit,
                repr(message.head.decode("utf-8", "replace")[:100]) + "...",
            )
        elif isinstance(message, Exception):
            logger.warning(
                "MCP server %s wrote a line that is not JSON-RPC (%s); a server writes its "
                "logs to stderr, not stdout",
                self.name,
                unreadable_line(message),
            )

    async def _on_log(self, params: Any) -> None:
        """A server's log message (`LoggingMessageNotificationParams`: level, optional
        logger name, data of any JSON type) to this module's logger."""
        level = _LOG_LEVELS.get(str(params.level), logging.WARNING)
        source = f"{self.label} [{params.logger}]" if params.logger else self.label
        logger.log(level, "%s logged: %s", source, params.data)

    async def _refresh_after_change(self) -> None:
        """List the tools after `tools/list_changed`; the changes announced meanwhile are
        covered by one more listing, not one each (a server may announce many at once)."""
        self._stale = True
        while self._stale:
            self._stale = False
            try:
                await self._refresh()
            except Exception as exc:  # the store keeps the last listing; the next change retries
                logger.warning("%s: refreshing the tools failed: %s", self.label, describe(exc))
                return

    async def _refresh(self) -> None:
        import anyio
        from mcp import MCPError

        for attempt in (1, 2):
            if self._state == "down":
                await self._ensure_up()
            session = self._session
            if session is None:
                raise MCPConnectionError(f"{self.label} is not connected")
            try:
                with anyio.fail_after(self.connect_timeout_s):
                    tools = await list_all_tools(session)
            except TimeoutError:  # else a refresh waited forever, and so did the ones after it
                raise MCPConnectionError(
                    f"{self.label} did not answer tools/list within {self.connect_timeout_s:g} s"
                ) from None
            except MCPError as exc:
                if attempt == 2 or not self._knows_no_session(exc):
                    raise
                if self._wake is not None:  # the HTTP server restarted: open a new session
                    self._wake.set()
                await self._wound_down()
                continue
            self._tools = tools
            self._tell_listeners()
            return

    def _tell_listeners(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self.tools)
            except Exception:
                logger.exception("MCP server %s: a tools listener raised", self.name)


async def _call_bounded(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    on_progress: ProgressCallback | None,
    silence_s: float,
) -> CallToolResult:
    """`tools/call` that may wait at most `silence_s` (s) for its result, counted again from
    each of its progress notifications. Raises `TimeoutError` once that passes (the request
    cancelled: the SDK sends `notifications/cancelled`)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(silence_s) as silence:

        def heard(progress: float, total: float | None, message: str | None) -> None:
            silence.reschedule(loop.time() + silence_s)
            if on_progress is not None:
                on_progress(progress, total, message)

        return await session.call_tool(name, arguments, progress_callback=progress_adapter(heard))


def _read_end(task: asyncio.Task[Any]) -> None:
    """Read how a call's task ended. A caller that stopped waiting (an abort, a timeout)
    cancelled its future, which then no longer reads the task: a server that went on with
    the call until `close` failed it left "Task exception was never retrieved" and a
    traceback on stderr."""
    if not task.cancelled():
        task.exception()


_OPEN: set[MCPServer] = set()
"""Servers connected and not closed yet, closed at the interpreter's exit."""
_OPEN_LOCK = threading.Lock()
_exit_hook = False
_EXIT_CLOSE_S = 10.0
"""How long the exit waits for the open servers to close, all at once (s): the SDK closes
a stdio server's input, then sends SIGTERM, then SIGKILL, waiting 2 s before each."""


def _close_at_exit(server: MCPServer) -> None:
    """Close `server` when the interpreter exits, if nobody closed it before. A program
    ended by Ctrl-C (or `sys.exit`, or its last line) mid-run never reaches `close`; a
    stdio server then outlived it whenever it was busy with a call (it runs in a session
    of its own, so Ctrl-C at a terminal does not reach it, and it reads the end of its
    input only once the call is done)."""
    global _exit_hook
    with _OPEN_LOCK:
        if not _exit_hook:
            _exit_hook = True
            atexit.register(_close_open_servers)
        _OPEN.add(server)


def _close_open_servers() -> None:
    with _OPEN_LOCK:
        servers = list(_OPEN)
        _OPEN.clear()
    closing: list[tuple[LoopThread, concurrent.futures.Future[None]]] = []
    for server in servers:
        thread, server._thread = server._thread, None
        if thread is None or not thread.running:
            continue
        with contextlib.suppress(RuntimeError):
            closing.append((thread, thread.submit(server._shutdown())))
    concurrent.futures.wait([future for _, future in closing], timeout=_EXIT_CLOSE_S)
    for thread, _ in closing:
        thread.stop(timeout_s=1.0)


def _cancel(future: concurrent.futures.Future[Any]) -> None:
    future.cancel()


def _closed(exc: BaseException) -> bool:
    """Whether `exc` is the SDK's CONNECTION_CLOSED error (the other end went away)."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED
