"""An HTTP server restarted between two calls (a deploy) knows no session of before: it
answers the old `Mcp-Session-Id` with 404, and the MCP transport rules say the client then
starts a new session. The next call, which the server never ran, is sent again on a new
session and answered by the restarted server, as docs/mcp.md ("Failures never hang") says;
so are the calls after it."""

from __future__ import annotations

import asyncio

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HttpTestServer, wait_for_file
from yiemagent.mcp import add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(180)


async def test_a_server_restarted_while_idle_gets_a_new_session_and_the_call(
    http_server: HttpTestServer,
) -> None:
    server = http_server.client(connect_timeout_s=15)
    async with server:
        store = ToolStore("restarted")
        await add_server(store, server)
        [before] = await run_calls(store, ("echo", {"text": "before"}))
        assert text(before) == "before"

        await asyncio.to_thread(http_server.kill)
        await asyncio.to_thread(http_server.start)  # same port, no sessions

        [first] = await asyncio.wait_for(
            run_calls(store, ("sleep", {"seconds": 0, "tag": "after"})), 60
        )
        assert not first.is_error, text(first)
        assert text(first) == "slept 0.0 s"
        await wait_for_file(http_server.markers / "after.started")
        [second] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "again"})), 60)
        assert not second.is_error and text(second) == "again"


async def test_listing_the_tools_of_a_restarted_server_opens_a_new_session(
    http_server: HttpTestServer,
) -> None:
    server = http_server.client(connect_timeout_s=15)
    async with server:
        before = {tool.name for tool in await server.refresh_tools()}

        await asyncio.to_thread(http_server.kill)
        await asyncio.to_thread(http_server.start)

        after = await asyncio.wait_for(server.refresh_tools(), 60)
        assert {tool.name for tool in after} == before
