"""`add_server` lists every page of `tools/list` (DESIGN §12), against a real MCP server
(`mcp_paginated_server.py`, over stdio); openai-agents'
`tests/mcp/test_mcp_pagination_integration.py` checks the same."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.mcp._kit import run_calls, text
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

SERVER = str(Path(__file__).parent / "mcp_paginated_server.py")


async def test_every_page_is_listed_also_after_an_empty_cursor() -> None:
    """The first page's cursor is `""`: a cursor all the same (only a missing one ends the
    list). The third page's cursor is one already followed: the listing ends there."""
    async with MCPServerStdio(sys.executable, [SERVER], name="paged") as server:
        store = ToolStore("paged")
        await add_server(store, server)
        assert list(store.tools) == ["first_page_tool", "second_page_tool", "third_page_tool"]
        (second,) = await run_calls(store, ("second_page_tool", {}))
    assert not second.is_error and text(second) == "called:second_page_tool"
