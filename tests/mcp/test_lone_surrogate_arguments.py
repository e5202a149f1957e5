"""A tool call whose arguments hold a lone surrogate (a model's `\\ud800` escape with no
pair, a file name read with `surrogateescape`), sent to an MCP server (DESIGN §8, §12).
UTF-8 cannot carry one: the SDK failed to write the request, the connection was lost
("closed the connection while ... was running") and a stdio server's process was started
again, losing what it held. The argument goes as U+FFFD, as in a provider's request, and
the server is the same one before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from yiemagent.mcp import MCPServer, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)


async def test_a_lone_surrogate_in_arguments_goes_as_a_replacement_character(
    server: MCPServer, markers: Path
) -> None:
    store = ToolStore("surrogates")
    await add_server(store, server)
    pid = (markers / "pid").read_text()
    [echoed] = await run_calls(store, ("echo", {"text": "a\ud800b \udcff \ud83d\ude00"}))
    assert not echoed.is_error, text(echoed)
    assert text(echoed) == "a\ufffdb \ufffd \U0001f600"
    [after] = await run_calls(store, ("echo", {"text": "still the same server"}))
    assert text(after) == "still the same server"
    assert (markers / "pid").read_text() == pid  # not started again
