"""DESIGN §8 and §12 against a server that breaks the protocol (`mcp_odd_server.py`, the
SDK's server with what it writes broken on the way out, run as a real subprocess): a tool
whose schema is unusable is left out with one warning and the server's other tools work;
an answer the client cannot match to its request ends the call with a clear error instead
of leaving it waiting forever."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import sys
import time

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from yiemagent.errors import MCPConnectionError
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AbortSignal

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
        ("output_schema_bad_property", "its output schema is not a valid JSON Schema: $.prop"),
    ]:
        [said] = [w for w in warnings if repr(tool) in w]
        assert said.startswith('MCP server "odd": leaving out its tool')
        assert problem in said


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("stray", r"answered with id '\d+-stray', which matches no request it was sent; "),
        ("no_id", r"sent an error without a request id \(lost track of the request\); "),
        ("garbled", r'answered the call to "echo" with a message that is not JSON-RPC: '),
        # the first problem pydantic reports is the field's, whose input is "1.0", not the
        # message: the message's id was not found and the call waited forever
        ("old_version", r'answered the call to "echo" with a message that is not JSON-RPC: '),
        ("bad_result", r'answered "echo" with a result that is no CallToolResult: content: '),
    ],
)
async def test_an_answer_that_matches_no_request_ends_the_call(answer: str, error: str) -> None:
    """The SDK drops an answer whose id matches no request, and only logs one it cannot
    read: the call waited forever. It ends at once, and the connection serves on."""
    async with odd_server() as server:
        store = ToolStore("odd")
        await add_server(store, server)
        [broken] = await asyncio.wait_for(run_calls(store, ("echo", {"text": answer})), 30)
        assert broken.is_error
        assert re.search('MCP server "odd" ' + error, text(broken)), text(broken)
        [echoed] = await run_calls(store, ("echo", {"text": "still here"}))
        assert text(echoed) == "still here"


async def test_a_log_line_that_is_not_utf8_on_stdout_is_skipped_and_the_call_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that writes a byte that is not UTF-8 to stdout (a binary log line) ended
    the SDK's reader in a UnicodeDecodeError: the call in flight, and every later one,
    waited forever. Now the line is one warning and the answer after it arrives."""
    caplog.set_level(logging.WARNING)
    server = MCPServerStdio(sys.executable, [str(HERE / "mcp_binary_log_server.py")], name="b")
    async with server:
        store = ToolStore("b")
        await add_server(store, server)
        for said in ("first", "second"):
            [echoed] = await asyncio.wait_for(run_calls(store, ("echo", {"text": said})), 30)
            assert not echoed.is_error and text(echoed) == said
    warnings = [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(warnings) == 2 and "log: " in warnings[0] and "not UTF-8" in warnings[0]


async def test_a_call_aborted_then_failed_by_close_leaves_no_unread_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call aborted on a server that neither answers it nor heeds the cancellation runs
    on until `close` fails it: nobody read that failure, so asyncio logged "Task exception
    was never retrieved" with a traceback (on stderr, in a chat's screen)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    mute = [str(HERE / "mcp_binary_log_server.py"), "mute"]
    async with MCPServerStdio(sys.executable, mute, name="mute") as server:
        store = ToolStore("mute")
        await add_server(store, server)
        signal = AbortSignal()
        asyncio.get_running_loop().call_later(0.5, signal.abort, "stop")
        [aborted] = await asyncio.wait_for(
            run_calls(store, ("echo", {"text": "hi"}), signal=signal), 30
        )
        assert aborted.is_error and "was cancelled" in text(aborted)
    gc.collect()  # a task's unread exception is logged when the task is collected
    assert "never retrieved" not in caplog.text, caplog.text


async def test_listing_the_tools_again_ends_when_the_server_does_not_answer() -> None:
    # 8 s: starting a Python server took over 2 s on a loaded 2-core machine (CI failed)
    server = MCPServerStdio(sys.executable, [ODD_SERVER], name="odd", connect_timeout_s=8)
    async with server:
        store = ToolStore("odd")
        await add_server(store, server)
        await run_calls(store, ("echo", {"text": "mute_lists"}))
        started = time.monotonic()
        with pytest.raises(MCPConnectionError, match=r"did not answer tools/list within 8 s"):
            await asyncio.wait_for(server.refresh_tools(), 60)
        assert time.monotonic() - started < 30
        assert list(store.tools) == ["echo"]
