"""DESIGN §8 and §12 against a server that breaks the protocol (`mcp_odd_server.py`, the
SDK's server with what it writes broken on the way out, run as a real subprocess): a tool
whose schema is unusable is left out with one warning and the server's other tools work."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)

ODD_SERVER = str(HERE / "mcp_odd_server.py")


def odd_server() -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [ODD_SERVER], name="odd")


async def test_a_tool_with_a_broken_schema_is_left_out_and_the_others_work(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with odd_server() as server:
        store = ToolStore("odd")
        assert await add_server(store, server) == ["echo"]
        [echoed] = await run_calls(store, ("echo", {"text": "still here"}))
        assert not echoed.is_error
        assert text(echoed) == "still here"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for tool, problem in [
        ("schema_string", "inputSchema: Input should be a valid dictionary"),
        ("schema_not_object", "inputSchema.type: Input should be 'object'"),
        ("schema_invalid", "inputSchema.properties: Input should be a valid dictionary"),
        ("schema_bad_property", "is not a valid JSON Schema: $.properties.text.type"),
        ("schema_missing", "inputSchema: Field required"),
        ("output_schema_invalid", "outputSchema.type: Input should be 'object'"),
    ]:
        [said] = [w for w in warnings if repr(tool) in w]
        assert said.startswith('MCP server "odd": leaving out its tool')
        assert problem in said
