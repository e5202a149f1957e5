"""DESIGN §12, server side: a `ToolStore` served as an MCP server, used by the official
SDK's own client: `tools/list`, `tools/call` through the pipeline (validation error as a
tool error, R-4.4; hooks, R-4.4/R-4.6; timeouts), progress from `on_update`, and
cancellation aborting the tool's signal. `yiem mcp serve` runs as a real subprocess over
stdio and streamable HTTP; `serve()` also runs in-process with hooks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import SERVE_TOOLS, free_port, wait_for_file, wait_for_port
from yiemagent import AgentTool, AgentToolResult, BeforeToolCallResult, TextContent, tool
from yiemagent.mcp import MCPServerHTTP, add_server, serve
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)

YIEM_SERVE = [sys.executable, "-m", "yiemagent.cli.main", "mcp", "serve", "--tools", SERVE_TOOLS]


@contextlib.asynccontextmanager
async def _stdio_session(markers: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=YIEM_SERVE[0], args=YIEM_SERVE[1:], env={"MCP_TEST_MARKERS": str(markers)}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def _in_process_session(
    store: ToolStore, **options: Any
) -> AsyncIterator[tuple[str, ClientSession]]:
    """`serve(store, "http", **options)` in this process and the SDK's client on it: the
    server's URL and the initialized session; the server is cancelled after."""
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    server = asyncio.ensure_future(
        serve(store, "http", port=0, on_ready=ready.set_result, **options)
    )
    try:
        url = await asyncio.wait_for(ready, 30)
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield url, client
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server


@contextlib.asynccontextmanager
async def _http_session(markers: Path) -> AsyncIterator[ClientSession]:
    port = free_port()
    env = {**os.environ, "MCP_TEST_MARKERS": str(markers)}
    proc = await asyncio.to_thread(
        subprocess.Popen,
        [*YIEM_SERVE, "--http", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        await asyncio.to_thread(wait_for_port, port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    finally:
        proc.terminate()
        _, err = await asyncio.to_thread(proc.communicate, None, 15)
        assert f"serving 3 tools over MCP at http://127.0.0.1:{port}/mcp" in err


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _session(
    transport: str, markers: Path
) -> contextlib.AbstractAsyncContextManager[ClientSession]:
    # Opened inside each test: the SDK's cancel scopes must close in the task that opened
    # them, which an async fixture's teardown does not guarantee.
    return (_stdio_session if transport == "stdio" else _http_session)(markers)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_tools_list_offers_the_tool_files(transport: str, markers: Path) -> None:
    async with _session(transport, markers) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"add", "steps", "wait"}  # listTools is not served
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["a", "b"]


async def test_a_call_runs_the_pipeline(transport: str, markers: Path) -> None:
    async with _session(transport, markers) as session:
        result = await session.call_tool("add", {"a": 2, "b": "40"})  # repaired, R-4.4
        assert not result.is_error and _text(result) == "42"


async def test_a_validation_error_comes_back_as_a_tool_error(transport: str, markers: Path) -> None:
    async with _session(transport, markers) as session:
        result = await session.call_tool("add", {"a": "x"})
        assert result.is_error
        assert 'Invalid arguments for tool "add"' in _text(result)
        assert "'b' is a required property" in _text(result)
        unknown = await session.call_tool("nope", {})
        assert (
            unknown.is_error
            and _text(unknown) == 'Tool "nope" not found. Available tools: add, steps, wait'
        )


async def test_on_update_becomes_progress_and_details_go_in_meta(
    transport: str,
    markers: Path,
) -> None:
    async with _session(transport, markers) as session:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        result = await session.call_tool("steps", {"n": 3}, progress_callback=on_progress)
        assert _text(result) == "counted to 3"
        assert result.structured_content is None
        assert result.meta == {"yiemagent/details": {"counted": 3}}
        assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_cancelling_a_call_aborts_the_tools_signal(transport: str, markers: Path) -> None:
    async with _session(transport, markers) as session:
        call = asyncio.ensure_future(session.call_tool("wait", {"tag": "c1"}))
        await wait_for_file(markers / "c1.started")
        call.cancel()  # the SDK sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await wait_for_file(markers / "c1.aborted") == "cancelled by the MCP client"
        after = await session.call_tool("add", {"a": 1, "b": 1})
        assert _text(after) == "2"


async def test_serve_in_process_applies_hooks_and_timeouts() -> None:
    @tool
    async def slow() -> str:
        """Sleep a minute."""
        await asyncio.sleep(60)
        return "late"

    @tool
    def secret() -> str:
        """Never runs."""
        return "leaked"

    store = ToolStore("hooks")
    store.register(slow)
    store.register(secret)

    def before(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name == "secret":
            return BeforeToolCallResult(block=True, reason="secret is not for MCP clients")
        return None

    options = {"before_tool_call": before, "tool_timeout_s": 0.5}
    async with _in_process_session(store, **options) as (url, client):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        blocked = await client.call_tool("secret", {})
        assert blocked.is_error and _text(blocked) == "secret is not for MCP clients"
        timed_out = await client.call_tool("slow", {})
        assert timed_out.is_error and _text(timed_out) == "Tool slow timed out after 0.5 s"


async def test_a_tool_that_needs_approval_is_an_error_result_and_does_not_run() -> None:
    """A tool file with `requires_approval=True` (or a hook's `defer`) held the call, so
    the pipeline gave no result and the server failed with IndexError ("list index out
    of range", its traceback on stderr) instead of answering."""
    ran: list[str] = []

    @tool(requires_approval=True)
    def remove_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file.
        """
        ran.append(path)
        return f"deleted {path}"

    store = ToolStore("held")
    store.register(remove_file)
    async with _in_process_session(store) as (_, client):
        held = await client.call_tool("remove_file", {"path": "notes.txt"})
        assert held.is_error and _text(held) == (
            "Tool remove_file needs a person's approval, which this MCP server cannot "
            "ask for: it did not run"
        )
    assert ran == []


async def test_a_tool_mcp_cannot_carry_is_left_out_not_the_whole_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One tool whose input schema is not of type object made the SDK refuse the whole
    `tools/list` answer: no client could use any tool of the store."""

    @tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    async def run(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("ran")], {})

    store = ToolStore("odd")
    store.register(echo)
    store.register(AgentTool("anything", "anything", "No type.", {}, run))
    # A store refuses {"type": "string"} itself; a list of types holding "object" passes
    # it, but MCP carries only "object".
    store.register(AgentTool("word", "word", "Maybe null.", {"type": ["object", "null"]}, run))
    async with _in_process_session(store) as (_, client):
        for _ in range(2):
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["echo", "anything"]
        assert listed.tools[1].input_schema == {"type": "object"}
        assert _text(await client.call_tool("anything", {})) == "ran"
    [warning] = [r.getMessage() for r in caplog.records if "word" in r.getMessage()]
    assert warning == (
        "not serving tool 'word': its input_schema is of type ['object', 'null'], and an MCP "
        "tool's arguments are an object"
    )


async def test_a_tools_details_are_not_offered_as_its_structured_result() -> None:
    """agno-agi/agno #9765 (and pydantic-ai #2854, which hands the model a result's
    `structuredContent` in place of its text): an agent served with its run's metadata
    as structured content showed clients the metadata, not the answer. Here a tool's
    `details` (the application's, never the model's) went out as `structuredContent`:
    such a client's model read `{"agent": ...}` instead of the answer, and a yiemagent
    client added the details' JSON to the text its model reads."""

    async def ask(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> Any:
        return AgentToolResult.text("Paris", details={"agent": "geo", "agent_path": ["geo"]})

    store = ToolStore("served")
    store.register(AgentTool("ask", "ask", "Ask the geographer.", {"type": "object"}, ask))
    async with _in_process_session(store) as (url, client):
        served = await client.call_tool("ask", {})
        assert served.structured_content is None and _text(served) == "Paris"
        async with MCPServerHTTP(url, name="served") as server:
            mine = ToolStore("client")
            await add_server(mine, server)
            [result] = await run_calls(mine, ("ask", {}))
    assert text(result) == "Paris"
    assert result.details == {"agent": "geo", "agent_path": ["geo"]}
