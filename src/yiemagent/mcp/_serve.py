"""`serve`: a `ToolStore` as an MCP server, over stdio or streamable HTTP (DESIGN §12).

`tools/list` reads the store at each request, so tools added since (`writeTool`, a reload)
are listed. `tools/call` runs the same per-call pipeline as a run's tool call
(`execute_tool_calls_sequential` with one call): lookup, argument repair and JSON-Schema
validation, `before_tool_call`, the tool's timeout (or `tool_timeout_s`), `after_tool_call`
(to finalize). Every problem is an `isError` result, never a protocol error, so the
client's model can correct itself. `on_update` partials become `notifications/progress`
(when the client asked for progress). `notifications/cancelled` aborts the call's signal;
the tool gets the pipeline's abort grace, then is abandoned. A call held for approval (a
tool's `requires_approval`, a hook's `defer`) does not run: no one can approve it here, so
it is an `isError` result saying so. A tool whose input schema is
of a type other than object is not listed (MCP cannot carry it), with one warning; one that
names no type is listed as an object.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from yiemagent.errors import ConfigError
from yiemagent.mcp._convert import result_to_mcp
from yiemagent.mcp._sdk import ReadStream, package_version, require_sdk
from yiemagent.tools.store import ToolStore
from yiemagent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    Model,
    TextContent,
    ToolCall,
    ToolExecutionUpdateEvent,
)
from yiemagent.types.config import MaybeAwaitable
from yiemagent.types.signal import AbortSignal

if TYPE_CHECKING:
    from mcp.server import Server, ServerRequestContext
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult

__all__ = ["serve"]

logger = logging.getLogger(__name__)

BeforeHook = Callable[
    [BeforeToolCallContext, AbortSignal], MaybeAwaitable[BeforeToolCallResult | None]
]
AfterHook = Callable[
    [AfterToolCallContext, AbortSignal], MaybeAwaitable[AfterToolCallResult | None]
]

# The pipeline's config needs a model; serving never calls one.
_NO_MODEL = Model(id="none", provider="mcp-serve", api="none")


def _object_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """`schema` as MCP carries an input schema, whose type must be "object": one that
    names no type gets it (a tool's arguments are an object anyway); one of another type
    gives None. The SDK refused the whole `tools/list` answer for one such tool."""
    kind = schema.get("type", "object")
    if kind != "object":
        return None
    return {**schema, "type": "object"}


def _server(store: ToolStore, config: AgentLoopConfig, name: str) -> Server[Any]:
    """The SDK's low-level `Server` named `name` whose `tools/list` reads `store` at each
    request and whose `tools/call` runs `_run_call` with `config`'s hooks and timeout; a
    cancelled call aborts its tool's signal and leaves the pipeline to wind it down."""
    from mcp import types
    from mcp.server import Server

    left_out: set[str] = set()  # warned about once

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> ListToolsResult:
        listed = []
        for tool in store.tools.values():
            schema = _object_schema(tool.input_schema)
            if schema is None:
                if tool.name not in left_out:
                    left_out.add(tool.name)
                    logger.warning(
                        "not serving tool %r: its input_schema is of type %r, and an MCP "
                        "tool's arguments are an object",
                        tool.name,
                        tool.input_schema.get("type"),
                    )
                continue
            listed.append(
                types.Tool(
                    name=tool.name,
                    title=tool.label if tool.label != tool.name else None,
                    description=tool.description,
                    input_schema=schema,
                )
            )
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        signal = AbortSignal()
        run = asyncio.ensure_future(_run_call(store, config, ctx, params, signal))
        try:
            return await asyncio.shield(run)
        except asyncio.CancelledError:
            # notifications/cancelled (or the connection closed): the tool's signal is
            # aborted and the pipeline winds it down in the background.
            signal.abort("cancelled by the MCP client")
            raise

    return Server(name, version=package_version(), on_list_tools=list_tools, on_call_tool=call_tool)


async def _run_call(
    store: ToolStore,
    config: AgentLoopConfig,
    ctx: ServerRequestContext[Any],
    params: CallToolRequestParams,
    signal: AbortSignal,
) -> CallToolResult:
    """One `tools/call` through the per-call pipeline, as one call of a run (its id the
    request's id); the tool's updates are sent as progress. A problem, or a call held for
    approval, is an `isError` result, not a protocol error."""
    from yiemagent.loop import execute_tool_calls_sequential

    call = ToolCall(str(ctx.request_id or "mcp-call"), params.name, dict(params.arguments or {}))
    message = AssistantMessage(content=[call], stop_reason="toolUse")
    context = AgentContext(tools=list(store.tools.values()))
    steps = 0

    async def emit(event: AgentEvent) -> None:
        nonlocal steps
        if not isinstance(event, ToolExecutionUpdateEvent):
            return
        steps += 1
        partial = event.partial_result
        details = partial.details if isinstance(partial.details, dict) else {}
        progress = details.get("progress", steps)
        total = details.get("total")
        text = " ".join(b.text for b in partial.content if isinstance(b, TextContent)) or None
        try:
            await ctx.session.report_progress(
                float(progress) if isinstance(progress, int | float) else float(steps),
                float(total) if isinstance(total, int | float) else None,
                text,
            )
        except Exception:
            logger.debug("could not send progress for %s", call.name, exc_info=True)

    batch = await execute_tool_calls_sequential(context, message, [call], config, signal, emit)
    if not batch.messages:  # held for approval (requires_approval, a hook's defer): no result
        from mcp.types import CallToolResult, TextContent as McpText

        text = (
            f"Tool {call.name} needs a person's approval, which this MCP server cannot ask "
            "for: it did not run"
        )
        return CallToolResult(content=[McpText(type="text", text=text)], is_error=True)
    return result_to_mcp(batch.messages[0])


async def serve(
    store: ToolStore,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    name: str = "yiemagent",
    path: str = "/mcp",
    before_tool_call: BeforeHook | None = None,
    after_tool_call: AfterHook | None = None,
    tool_timeout_s: float | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve `store` as an MCP server until cancelled or, on stdio, until stdin closes.

    Args:
        store: the tools to offer; read at every request.
        transport: "stdio" (this process's stdin/stdout; stray prints of tools go to
            stderr) or "http" (streamable HTTP).
        host: the HTTP address; loopback unless told otherwise.
        port: the HTTP port; 0 picks a free one (passed to `on_ready`).
        name: the server name reported in `initialize`.
        path: the HTTP endpoint path.
        before_tool_call, after_tool_call: the pipeline's hooks.
        tool_timeout_s: seconds a call may take when its tool sets no `timeout_s`.
        on_ready: called with "stdio" or the endpoint URL once the server listens.

    Raises:
        ConfigError: the `mcp` extra is missing, or an unknown transport.
        OSError: the HTTP port cannot be bound.
    """
    require_sdk()
    if transport not in ("stdio", "http"):
        raise ConfigError(f"transport must be 'stdio' or 'http', not {transport!r}")
    config = AgentLoopConfig(
        model=_NO_MODEL,
        tool_execution="sequential",
        tool_timeout_s=tool_timeout_s,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
    )
    server = _server(store, config, name)
    if transport == "stdio":
        await _serve_stdio(server, on_ready)
    else:
        await _serve_http(server, host, port, path, on_ready)


async def _serve_stdio(server: Server[Any], on_ready: Callable[[str], None] | None) -> None:
    from mcp.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        if on_ready is not None:
            on_ready("stdio")
        await server.run(_AnsweredLines(read, write), write, options)


class _AnsweredLines(ReadStream):
    """The stdio read stream, answering each request line the SDK cannot read (it drops
    one with a debug log, and the client waits for ever) as its HTTP transport answers
    the same body: not JSON to the SDK, which includes a lone surrogate escape
    (`"\\ud800"`, as JavaScript's JSON.stringify writes one), is a parse error (-32700);
    JSON that is no JSON-RPC message is an invalid request (-32600). The answer carries
    the line's request id when Python's json finds one, else null; a broken notification
    or response is dropped, as JSON-RPC answers neither."""

    def __init__(self, inner: Any, write: Any) -> None:
        super().__init__(inner)
        self._write = write

    async def receive(self) -> Any:
        """The next message the SDK could read, having answered those it could not."""
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = _answer_to_unreadable(item)
            if answer is not None:
                await self._write.send(answer)


def _answer_to_unreadable(exc: Exception) -> Any:
    """The JSON-RPC error answering a line the SDK's reader refused with `exc` (its
    pydantic `ValidationError` holds the line or the value read), or None when the line
    is a notification or a response, or `exc` is no such error."""
    from mcp.shared.message import SessionMessage
    from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    from yiemagent.mcp._sdk import first_problem, refused_input

    refused = refused_input(exc)
    if refused is None:
        return None
    value, parse_error = refused
    request_id: int | str | None = None
    if isinstance(value, dict):
        if "method" not in value or "id" not in value:
            return None  # a notification or a response: JSON-RPC answers neither
        given = value["id"]
        if isinstance(given, int | str) and not isinstance(given, bool):
            request_id = given
    if parse_error is not None:
        error = ErrorData(code=PARSE_ERROR, message=f"Parse error: {parse_error}")
    else:
        problem = first_problem(exc, skip=1)  # past the union member's name
        error = ErrorData(code=INVALID_REQUEST, message=f"Invalid request: {problem}")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _serve_http(
    server: Server[Any],
    host: str,
    port: int,
    path: str,
    on_ready: Callable[[str], None] | None,
) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise _not_listening(exc, f"{shown}:{port}") from None
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    task = asyncio.ensure_future(web.serve(sockets=[sock]))
    try:
        while not web.started and not task.done():  # noqa: ASYNC110 - uvicorn has no event
            await asyncio.sleep(0.01)
        if web.started and on_ready is not None:
            on_ready(f"http://{shown}:{bound}{path}")
        # Shielded: `serve` is stopped by cancelling it, and a cancelled uvicorn server
        # logs its lifespan's CancelledError as an ERROR traceback; told to exit (below),
        # it shuts down as on a signal.
        await asyncio.shield(task)
    finally:
        if not task.done():
            web.should_exit = True
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 5.0)
        sock.close()


def _not_listening(exc: OSError, address: str) -> OSError:
    """The bind error as one sentence naming the address (the socket's own text,
    "[Errno 98] Address already in use", names none); `errno` kept."""
    if exc.errno == errno.EADDRINUSE:
        why = "the address is already in use (another program listens there)"
    else:
        why = (exc.strerror or str(exc)).lower()
    error = OSError(f"cannot serve on {address}: {why}")
    error.errno = exc.errno
    return error
