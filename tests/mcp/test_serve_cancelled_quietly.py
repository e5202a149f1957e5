"""`serve(store, "http")` runs until cancelled (DESIGN §12): cancelling it, the way an
application stops it, shuts the web server down as a signal would, with no ERROR traceback
of its lifespan on stderr (it came when the event loop closed, with the cancelled server's
lifespan still waiting). A program of its own, run with `asyncio.run` in a subprocess,
serves, lets a client of the official SDK call a tool, then cancels the server."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)

PROGRAM = textwrap.dedent(
    """
    import asyncio, contextlib
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from yiemagent import tool
    from yiemagent.mcp import serve
    from yiemagent.tools import ToolStore

    @tool
    def echo(text: str) -> str:
        "Say `text` back."
        return text

    async def main() -> None:
        store = ToolStore("quiet")
        store.register(echo)
        ready = asyncio.get_running_loop().create_future()
        server = asyncio.ensure_future(serve(store, "http", port=0, on_ready=ready.set_result))
        url = await asyncio.wait_for(ready, 30)
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                answer = await client.call_tool("echo", {"text": "hi"})
        print("answered", answer.content[0].text, flush=True)
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
        print("stopped", flush=True)

    asyncio.run(main())
    """
)


def test_a_cancelled_http_server_stops_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["answered", "hi", "stopped"]
    assert "Traceback" not in done.stderr and "CancelledError" not in done.stderr, done.stderr
