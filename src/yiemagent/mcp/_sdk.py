"""Helpers around the MCP SDK for the client side (DESIGN §12): the import check, error
texts, the watched streams between the session and its transport, paging `tools/list`,
the progress adapter."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from yiemagent.errors import (
    ConfigError,
    exception_summary,
    install_hint,
    refused_here,
    refused_text,
)
from yiemagent.mcp._stdio import LineTooLong

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import Tool

__all__ = [
    "PROTOCOL_ERROR",
    "Ledger",
    "ProgressCallback",
    "RecordingStream",
    "WatchedStream",
    "describe",
    "first_problem",
    "leaf",
    "lenient_session",
    "list_all_tools",
    "one_line",
    "package_version",
    "progress_adapter",
    "refused_input",
    "request_id_in",
    "require_sdk",
]

logger = logging.getLogger(__name__)

PROTOCOL_ERROR = "yiemagent: protocol"
"""The `data` of the JSON-RPC errors `WatchedStream` makes up for a request whose answer a
server broke; their message is the whole text for the caller."""

_DONE_KEPT = 4096  # ids of settled requests remembered, so a late answer is not a stray one

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
    """The first exception in an exception group (nested groups opened), else `exc`: the
    SDK's task groups wrap the one error that ended a connection."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def refused_input(exc: BaseException) -> tuple[object, str | None] | None:
    """What a line held that the SDK's reader refused with `exc`, its pydantic
    `ValidationError`: `(value, parse_error)`. A line that is not JSON gives the JSON value
    Python's json still reads in it (a lone surrogate escape, `"\\ud800"`, which pydantic
    refuses), else the line itself, and the parser's problem; JSON that is no JSON-RPC
    message gives the message and None. None when `exc` is no such error.

    Each member of the JSON-RPC union reports its own problems, and a problem's input is
    the value it is about: the message for a missing field or a value that is no object,
    only the field's value for a field's problem (`"jsonrpc": "1.0"`), so the message is
    the input of the first problem that is about a whole message."""
    errors = getattr(exc, "errors", None)
    try:
        found = errors() if callable(errors) else []
    except Exception:  # not a pydantic error
        found = []
    if not found:
        return None
    first = found[0]
    if first.get("type") == "json_invalid":
        line = first.get("input")
        try:
            return json.loads(line), str(first.get("msg"))
        except (TypeError, ValueError, RecursionError):
            return line, str(first.get("msg"))
    whole = [e["input"] for e in found if len(e["loc"]) == 1 or e["type"] == "missing"]
    objects = [value for value in whole if isinstance(value, dict)]
    return (objects or whole or [first.get("input")])[0], None


_ERROR_AT = re.compile(r"at line (\d+) column (\d+)$")
"""Where jiter's error says the JSON broke: the line (from 1) and the byte in it (from 1)."""


def request_id_in(line: str) -> int | str | None:
    """The id of the request a line that is not JSON answers: its top-level `id`, or None
    when that cannot be told.

    The members read before the break (`_readable_start`) hold it, so
    `{"id":3,"result":{broken` and a line cut anywhere after `"id":3,` give 3, and an `id`
    inside `result` is never taken for it. A number that ends where the JSON does may be
    cut short itself (`{"id":12` of `{"id":123,...`) and is not taken; nor is an id that is
    no integer or string, nor that of a request (a top-level `method` before the break):
    its id is the server's own.
    """
    import jiter

    start = _readable_start(line)
    if start is None or "method" in start[0]:
        return None
    members, data = start
    request_id = members.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if isinstance(request_id, int) and list(members)[-1] == "id":
        # the digits may go on past the cut: one more digit would change the id
        try:
            longer = jiter.from_json(data + b"0", partial_mode=True)
        except ValueError:
            return request_id  # no digit can follow: the number had ended
        if not isinstance(longer, dict) or repr(longer.get("id")) != repr(request_id):
            return None
    return request_id


def _readable_start(line: str) -> tuple[dict[str, Any], bytes] | None:
    """The top-level members of a JSON object that breaks or is cut short, as far as they
    can be read, and the bytes they were read from; None when the line is no object.

    The JSON before the first error is read as a document cut short there (jiter's partial
    mode, which leaves an unfinished value out). Partial mode alone stops quietly at junk
    after a value (`{"id": 1x}` reads as 1), so the error is found strictly first.
    """
    import jiter

    data = line.encode("utf-8", "surrogatepass")
    try:
        value = jiter.from_json(data)
    except ValueError as exc:
        problem = str(exc)
        where = _ERROR_AT.search(problem)
        if where is None:
            return None
        if not problem.startswith("EOF while parsing"):  # else the line is only cut short
            row, column = int(where[1]), int(where[2])
            start = sum(len(text) + 1 for text in data.split(b"\n")[: row - 1])
            data = data[: start + column - 1]
        try:
            value = jiter.from_json(data, partial_mode=True)
        except ValueError:
            return None
    return (value, data) if isinstance(value, dict) else None


def unreadable_line(exc: BaseException) -> str:
    """What a server wrote that the SDK could not read as JSON-RPC, as one short line: the
    line (or the JSON value it held, `refused_input`, as JSON), else `describe(exc)`."""
    refused = refused_input(exc)
    if refused is None or refused[0] is None:
        return describe(exc)
    line = refused[0]
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    if not isinstance(line, str):  # JSON, but no message (`1`, `{"level": "info"}`)
        line = json.dumps(line, ensure_ascii=False, default=str)
    return repr(line if len(line) <= 120 else line[:117] + "...")


def describe(exc: BaseException) -> str:
    """`exception_summary` of the error that ended a connection (its `leaf`), on one line,
    or, for a connection this machine refused (`refused_here`), that nothing listens
    there, as a provider says it; never raises."""
    failure = leaf(exc)
    if (address := refused_here(failure)) is not None:
        return refused_text(address)
    return " ".join(exception_summary(failure).split())


def _request_key(request_id: int | str) -> int | str:
    """The id as the SDK correlates it: "7" and 7 are one request."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


class Ledger:
    """The requests a session sent that still wait for an answer, by id, and the ids of
    the last ones answered or given up (a late answer to those is no stray one).

    Written by `RecordingStream` and read by `WatchedStream`, both on the connection's
    event loop.
    """

    def __init__(self) -> None:
        self.pending: dict[int | str, str] = {}
        """id -> what the request is, for error texts ('the call to "x"')."""
        self._done: OrderedDict[int | str, None] = OrderedDict()

    def sent(self, request_id: int | str, method: str, params: object) -> None:
        """Note request `request_id` (its JSON-RPC `method` and `params`) as pending."""
        name = params.get("name") if isinstance(params, dict) else None
        what = f'the call to "{name}"' if method == "tools/call" else f"the {method} request"
        self.pending[_request_key(request_id)] = what

    def settle(self, request_id: int | str) -> str | None:
        """Forget a request that was answered or cancelled; returns what it was (None:
        not pending)."""
        key = _request_key(request_id)
        what = self.pending.pop(key, None)
        self._done[key] = None
        while len(self._done) > _DONE_KEPT:
            self._done.popitem(last=False)
        return what

    def pending_now(self, request_id: int | str) -> bool:
        """Whether `request_id` was sent and is not answered or cancelled yet."""
        return _request_key(request_id) in self.pending

    def known(self, request_id: int | str) -> bool:
        """Whether `request_id` was ever sent: pending, or among the last settled ones."""
        key = _request_key(request_id)
        return key in self.pending or key in self._done


class _TransportStream:
    """A wrapper of one of a transport's streams: closing it (`aclose`, `async with`)
    closes the transport's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        """Close the transport's stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class RecordingStream(_TransportStream):
    """The transport's write stream, noting in a `Ledger` each request sent and each
    `notifications/cancelled`."""

    def __init__(self, inner: Any, ledger: Ledger) -> None:
        super().__init__(inner)
        self._ledger = ledger

    async def send(self, item: Any) -> None:
        """Note a request (or a cancellation) in the ledger, then send `item`."""
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


class ReadStream(_TransportStream):
    """A wrapper of a transport's read stream, as the SDK's session reads one: `receive`
    (the subclass's: what it hands on), iteration, `last_context`, `aclose` and `async
    with`."""

    @property
    def last_context(self) -> Any:
        """The inner stream's `last_context` (None when it has none), as the SDK reads it."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message for the session (each subclass says which)."""
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class WatchedStream(ReadStream):
    """The transport's read stream, reporting its end (EOF or closed) once to `on_end`,
    and standing between a broken server and the session:

    - a `tools/list` answer loses the tools the SDK would refuse (an input schema that is
      no object schema, say), each named in a warning, instead of the whole answer being
      refused and the server lost;
    - an answer whose id matches no request sent (or an error with a null id), and an
      answer to a pending request that is not JSON-RPC, end the requests they may have
      been meant for with a JSON-RPC error (`data` `PROTOCOL_ERROR`) saying so: the SDK
      drops the first and logs the second, and those requests would wait forever. A late
      answer, to a request answered or given up, goes through (the SDK drops it).

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
        super().__init__(inner)
        self._on_end = on_end
        self._ledger = ledger
        self._label = label
        self._made_up: list[Any] = []
        self.protocol_version: Callable[[], str | None] = lambda: None
        """The session's negotiated version, set once the session exists."""

    async def receive(self) -> Any:
        """The next message for the session, checked as the class says.

        Raises:
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError: the
                stream ended (reported to `on_end` first).
        """
        import anyio

        if self._made_up:
            return self._made_up.pop(0)
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return self._check(item)

    def _check(self, item: Any) -> Any:
        from mcp_types import JSONRPCError, JSONRPCResponse

        if isinstance(item, Exception):
            return self._unreadable(item)
        message = getattr(item, "message", None)
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return item
        if message.id is not None and self._ledger.known(message.id):
            what = self._ledger.settle(message.id)
            if what == "the tools/list request" and isinstance(message, JSONRPCResponse):
                message.result = self._usable_tools(message.result)
            return item
        if isinstance(message, JSONRPCError):
            problem = f"sent an error without a request id ({message.error.message})"
        else:
            problem = f"answered with id {message.id!r}, which matches no request it was sent"
        return self._end_pending(problem, item)

    def _end_pending(self, problem: str, item: Any) -> Any:
        """Log `problem` (an answer that may have been meant for any request) and end every
        pending request with it; returns the first error made up, else `item`."""
        logger.warning("%s %s", self._label, problem)
        self._made_up = [
            self._error(request_id, f"{problem}; {what} may never get its answer, so it ended")
            for request_id, what in list(self._ledger.pending.items())
        ]
        for request_id in list(self._ledger.pending):
            self._ledger.settle(request_id)
        return self._made_up.pop(0) if self._made_up else item

    def _too_long(self, exc: LineTooLong) -> Any:
        """A line past `max_message_bytes` ends the request it answers, or, when its id is
        not in its first bytes, every pending one; a request or notification of the
        server's, or a line with none pending, goes on to the session (a warning)."""
        head = exc.head.decode("utf-8", "replace")
        start = _readable_start(head)
        if start is not None and "method" in start[0]:
            return exc  # a request or notification of the server's: no call waits for it
        problem = f"a message longer than its max_message_bytes ({exc.limit} bytes)"
        shown = repr(head[:100]) + "..."
        request_id = request_id_in(head)
        if request_id is not None and self._ledger.pending_now(request_id):
            what = self._ledger.settle(request_id)
            return self._error(request_id, f"answered {what} with {problem}, skipped: {shown}")
        if request_id is None and self._ledger.pending:
            return self._end_pending(f"wrote {problem}, skipped, with no id in {shown}", exc)
        return exc

    def _unreadable(self, exc: Exception) -> Any:
        """A line the SDK could not read: an answer to a pending request ends it, found by
        its id (`request_id_in` for a line that is not JSON)."""
        if isinstance(exc, LineTooLong):
            return self._too_long(exc)
        refused = refused_input(exc)
        value, parse_error = refused if refused is not None else (None, None)
        if isinstance(value, dict):
            request_id = value.get("id") if "method" not in value else None  # a request's
            text = json.dumps(value, ensure_ascii=False, default=str)
            kind = "a message that is not JSON-RPC"
        elif isinstance(value, str) and parse_error is not None:
            request_id = request_id_in(value)
            text = repr(value[:120])
            kind = f"a line that is not JSON ({parse_error})"
        else:
            return exc
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return exc
        if not self._ledger.pending_now(request_id):
            return exc
        what = self._ledger.settle(request_id)
        text = text if len(text) <= 120 else text[:117] + "..."
        return self._error(request_id, f"answered {what} with {kind}: {text}")

    def _error(self, request_id: int | str, problem: str) -> Any:
        from mcp.shared.message import SessionMessage
        from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError

        error = ErrorData(
            code=INTERNAL_ERROR, message=f"{self._label} {problem}", data=PROTOCOL_ERROR
        )
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

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

    async def aclose(self) -> None:
        """Report the end to `on_end`, then close the transport's read stream."""
        self._on_end()
        await super().aclose()


def first_problem(exc: Any, *, skip: int = 0) -> str:
    """`field: problem` of a pydantic `ValidationError`'s first error, and how many more;
    `skip` leaves out the first parts of the field's path."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"][skip:])
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}" if where else f"{first['msg']}{more}"


def one_line(error: str) -> str:
    """An SDK error text on one line. One that embeds a pydantic report ("Failed to parse
    JSON response: 1 validation error for union[...]" then the problem, the input echoed
    and a link) becomes its lead and the problem: "Failed to parse JSON response: Invalid
    JSON: key must be a string at line 1 column 2"."""
    lines = error.splitlines()
    if len(lines) > 1 and "validation error" in lines[0]:
        lead = lines[0].split(": ", 1)[0]
        problems = [line.strip() for line in lines[1:] if line.startswith("  ")]
        problem = re.sub(r"\s*\[type=.*$", "", problems[0]) if problems else ""
        return f"{lead}: {problem}" if problem else lead
    return " ".join(error.split())


async def list_all_tools(session: ClientSession) -> list[Tool]:
    """Every page of `tools/list`: a cursor is followed until a page has none (an empty
    one is a cursor too: the spec makes it opaque) or one comes back already followed.
    A server whose capabilities name no tools (one of resources or prompts only) has
    none, and is not asked: it answers `tools/list` "Method not found"."""
    from mcp.types import PaginatedRequestParams

    capabilities = session.server_capabilities
    if capabilities is not None and capabilities.tools is None:
        return []
    result = await session.list_tools()
    tools = list(result.tools)
    seen: set[str] = set()
    while result.next_cursor is not None and result.next_cursor not in seen:
        seen.add(result.next_cursor)
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
    return tools


def progress_adapter(on_progress: ProgressCallback) -> ProgressFnT:
    """The SDK's async progress callback, calling the plain `on_progress`."""

    async def adapter(progress: float, total: float | None, message: str | None) -> None:
        on_progress(progress, total, message)

    return adapter


@functools.cache
def lenient_session() -> type[ClientSession]:
    """The SDK's `ClientSession`, but a tool's result is taken as the server sent it: the SDK
    fails a call whose structured content is missing or off the tool's declared output
    schema, though the content is there for the model to read (a server's schema that is
    out of date, or a text answer)."""
    from mcp import ClientSession

    class LenientSession(ClientSession):
        async def validate_tool_result(self, name: str, result: Any) -> None:
            return None

    return LenientSession


def package_version() -> str:
    """yiemagent's installed version, as its MCP client and server announce it ("0" when
    unknown)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("yiemagent")
    except PackageNotFoundError:
        return "0"
