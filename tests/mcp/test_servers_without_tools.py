"""DESIGN §12: a server that offers no tools (resources or prompts only) is added with none.

The spec makes every capability optional, and a server that declares no `tools` answers
`tools/list` with "Method not found". The client asked anyway, so adding such a server
failed with `MCPConnectionError` ("Method not found"), and with it `yiem run --mcp ...`
for all its servers (anomalyco/opencode#11841, nicobailon/pi-mcp-adapter#220: resource-only
servers failed to connect). It now lists no tools for it, as the SDK's own clients do,
beside the tools of the other servers."""

from __future__ import annotations

import sys

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE, stdio_server
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("offers", ["resources", "prompts"])
async def test_a_server_without_tools_adds_none_beside_the_others(offers: str) -> None:
    store = ToolStore("mixed")
    quiet = MCPServerStdio(sys.executable, [str(HERE / "mcp_no_tools_server.py"), offers])
    async with quiet, stdio_server() as tools:
        assert await add_server(store, quiet) == []
        assert quiet.connected and quiet.tools == []
        names = await add_server(store, tools)
        assert "echo" in names and set(store.tools) == set(names)
        [result] = await run_calls(store, ("echo", {"text": "still here"}))
        assert not result.is_error and "still here" in text(result)
