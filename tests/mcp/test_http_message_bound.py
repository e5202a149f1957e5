"""A streamable-HTTP server's answer longer than `max_message_bytes` (docs/mcp.md): the call
fails saying so, as over stdio, and the next call is answered. The SDK ends such a stream
with a made-up "connection closed" error, which read as `closed the connection while "echo"
was running (the connection closed)`, sending a user after a network fault rather than to
the bound. The server is a real subprocess on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HttpTestServer
from yiemagent.mcp import add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)


async def test_an_answer_past_the_bound_fails_its_call_naming_the_bound(
    http_server: HttpTestServer,
) -> None:
    async with http_server.client(max_message_bytes=50_000) as server:
        store = ToolStore("http")
        await add_server(store, server)
        [long] = await run_calls(store, ("echo", {"text": "x" * 100_000}))
        [short] = await run_calls(store, ("echo", {"text": "again"}))
    assert long.is_error
    assert text(long) == (
        'MCP server "test-http" answered the call to "echo" with a message longer than its '
        "max_message_bytes (50000 bytes), skipped"
    ), text(long)
    assert (short.is_error, text(short)) == (False, "again")
