"""The MCP python-sdk's tests/client/test_notification_response.py cases
(test_http_error_status_sends_jsonrpc_error, test_unexpected_content_type_sends_jsonrpc_error,
test_invalid_json_response_sends_jsonrpc_error) through `add_server` (DESIGN §12, §8): a
streamable-HTTP server, or a gateway in front of it, that answers one `tools/call` with
an HTTP 500, a body that is not JSON, or a content type that is neither JSON nor an event
stream. That call gets an error result at once, one line saying why (pydantic's report
of the bad JSON was three, with the body echoed and a link), never a hang, and the
connection serves the next call. The real test server runs behind a proxy on 127.0.0.1
that spoils the answers to calls of `echo` with a marked text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2 as httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HttpTestServer
from tests.serve._kit import serving
from yiemagent.mcp import MCPServerHTTP, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)

SPOILED: dict[str, Response] = {
    "http500": Response("upstream exploded", status_code=500, media_type="text/plain"),
    "notjson": Response("{not json", status_code=200, media_type="application/json"),
    "html": Response("<html>maintenance</html>", status_code=200, media_type="text/html"),
}


def spoiling_proxy(upstream: str) -> Starlette:
    """Forwards every request to `upstream`, streaming the answer back, except a
    `tools/call` of `echo` whose text names one of `SPOILED`: that gets the spoiled answer."""
    client = httpx.AsyncClient(timeout=None)

    async def forward(request: Request) -> Response:
        body = await request.body()
        if request.method == "POST":
            try:
                message: Any = json.loads(body)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("method") == "tools/call":
                said = message.get("params", {}).get("arguments", {}).get("text")
                if said in SPOILED:
                    return SPOILED[said]
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        upstream_request = client.build_request(
            request.method, upstream, headers=headers, content=body
        )
        answer = await client.send(upstream_request, stream=True)
        kept = {k: v for k, v in answer.headers.items()
                if k.lower() not in ("content-length", "transfer-encoding")}  # fmt: skip
        return StreamingResponse(answer.aiter_raw(), status_code=answer.status_code,
                                 headers=kept, background=None)  # fmt: skip

    return Starlette(routes=[Route("/mcp", forward, methods=["GET", "POST", "DELETE"])])


@pytest.fixture
def proxy_url(http_server: HttpTestServer) -> Iterator[str]:
    with serving(spoiling_proxy(http_server.url)) as url:
        yield f"{url}/mcp"


@pytest.fixture
async def store(proxy_url: str) -> AsyncIterator[ToolStore]:
    server = MCPServerHTTP(proxy_url, name="behind-a-proxy", timeout_s=30.0)
    async with server:
        tools = ToolStore("proxied")
        await add_server(tools, server)
        yield tools


REFUSED = 'MCP server "behind-a-proxy" refused the call: '
SAID = {
    "http500": "Server returned an error response (HTTP 500 Internal Server Error)",
    "html": "Unexpected content type: text/html; charset=utf-8",
    # one line, not pydantic's three-line report with its input and a link
    "notjson": "Failed to parse JSON response: Invalid JSON: key must be a string at line 1 "
    "column 2",
}


@pytest.mark.parametrize("spoil", sorted(SPOILED))
async def test_a_spoiled_answer_fails_that_call_and_the_next_one_works(
    store: ToolStore, spoil: str
) -> None:
    [before] = await run_calls(store, ("echo", {"text": "fine"}))
    assert text(before) == "fine"
    [spoiled] = await asyncio.wait_for(run_calls(store, ("echo", {"text": spoil})), 25)
    assert spoiled.is_error and text(spoiled) == f"{REFUSED}{SAID[spoil]}"
    [after] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "still fine"})), 60)
    assert text(after) == "still fine"
