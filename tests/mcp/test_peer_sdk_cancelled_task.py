"""The MCP SDK's cancellation cases (tests/client: a request whose caller gives up sends
`notifications/cancelled`) for a run whose task is cancelled rather than aborted
(`asyncio.wait_for` or `asyncio.timeout` around the run, Ctrl-C under `asyncio.run`): the
server is told to stop the call, as for an abort (DESIGN §12), and the connection serves
the next call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import wait_for_file
from yiemagent.mcp import MCPServer, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)


async def test_a_cancelled_runs_call_is_cancelled_on_the_server(
    server: MCPServer, markers: Path
) -> None:
    store = ToolStore("cancelled")
    await add_server(store, server)
    batch = asyncio.ensure_future(run_calls(store, ("sleep", {"tag": "gone"})))
    await wait_for_file(markers / "gone.started")
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(batch, 10)

    await wait_for_file(markers / "gone.cancelled")  # the server saw the cancellation
    [after] = await run_calls(store, ("echo", {"text": "still fine"}))
    assert text(after) == "still fine"
