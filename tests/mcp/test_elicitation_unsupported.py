"""A server that asks for input in the middle of a call (`elicitation/create`), in the
cases the MCP SDK's tests/interaction/lowlevel/test_elicitation.py checks, against a real
server process (`mcp_elicit_server.py`, over stdio). yiemagent answers no elicitation
(docs/mcp.md, "Using an MCP server's tools"): the client says it is not supported, and the
call is answered at once, never left waiting for an answer that cannot come."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)

SERVER = str(Path(__file__).parent / "mcp_elicit_server.py")


async def test_a_question_in_a_call_is_declined_and_the_call_answered() -> None:
    async with MCPServerStdio(sys.executable, [SERVER], name="elicit") as server:
        store = ToolStore("elicit")
        await add_server(store, server)
        failed, went_on = await run_calls(store, ("ask_then_fail", {}), ("ask_or_default", {}))
        [again] = await run_calls(store, ("ask_or_default", {}))  # the connection goes on

    assert failed.is_error
    assert text(failed) == 'MCP server "elicit" refused the call: Elicitation not supported'
    assert not went_on.is_error
    assert text(went_on) == "went on with the default (Elicitation not supported)"
    assert text(again) == text(went_on)
