"""The stdio transport reads a server's output in time linear in a line's length
(`yiemagent.mcp._stdio`, docs/mcp.md "Long lines over stdio"), and keeps what the SDK's
`stdio_client` does with every line: a result of tens of MB arrives whole, a CR before the
LF is JSON whitespace, bytes that are not UTF-8 become U+FFFD, a line that is not JSON is
one warning and the session goes on, a server that dies mid-line fails the call in flight.
The servers are real subprocesses: `mcp_long_lines_server.py` (the SDK's own server) and
`mcp_raw_lines_server.py` (JSON-RPC by hand, for what the SDK's server never writes)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import math
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, strategies as st
from mcp.shared.message import SessionMessage
from mcp.types import TextContent

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from tests.mcp.mcp_long_lines_server import long_text
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.mcp._stdio import MessageReader
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(300)

LONG_LINES = str(HERE / "mcp_long_lines_server.py")
RAW_LINES = str(HERE / "mcp_raw_lines_server.py")


async def test_a_20_mb_result_arrives_whole() -> None:
    """One line of about 28 MB (20 M characters, escapes and 2- to 4-byte UTF-8 among them)
    is the tool's text exactly: nothing lost, doubled or moved across the pipe's reads."""
    size = 20_000_000
    async with MCPServerStdio(sys.executable, [LONG_LINES], name="long") as server:
        store = ToolStore("long")
        await add_server(store, server, max_result_chars=None)
        [result] = await run_calls(store, ("long_text", {"size": size}), max_tool_result_chars=None)
    assert not result.is_error
    got = text(result)
    assert len(got) == size
    assert got == long_text(size)


async def test_a_20_mb_argument_reaches_a_served_tool_whole(tmp_path: Path) -> None:
    """The other direction: `yiem mcp serve` (the SDK's stdio server) reads a 20 MB request
    line, and its tool gets the argument exactly."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "digest.py").write_text(
        '"""A tool that answers the length and SHA-256 of its text."""\n'
        "import hashlib\n\n"
        "from yiemagent import AgentTool, tool\n\n\n"
        "@tool\n"
        "def digest(text: str) -> str:\n"
        '    """The length and SHA-256 of `text`.\n\n'
        "    Args:\n"
        "        text: any text.\n"
        '    """\n'
        '    return f"{len(text)} {hashlib.sha256(text.encode()).hexdigest()}"\n\n\n'
        "def get_tool() -> AgentTool:\n"
        "    return digest\n"
    )
    sent = long_text(20_000_000)
    command = [sys.executable, "-m", "yiemagent.cli.main", "mcp", "serve", "--tools", str(tools)]
    async with MCPServerStdio(command[0], command[1:], name="served") as server:
        result = await server.call_tool("digest", {"text": sent})
    assert not result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == f"{len(sent)} {hashlib.sha256(sent.encode()).hexdigest()}"


async def _echo_twice(mode: str, said: str) -> list[tuple[bool, str]]:
    """Whether each of two calls of `echo` was an error, and its text: `said`, then "again"."""
    server = MCPServerStdio(sys.executable, [RAW_LINES, mode], name=mode)
    answers: list[tuple[bool, str]] = []
    async with server:
        store = ToolStore(mode)
        await add_server(store, server)
        for text_sent in (said, "again"):
            [echoed] = await asyncio.wait_for(run_calls(store, ("echo", {"text": text_sent})), 60)
            answers.append((echoed.is_error, text(echoed)))
    return answers


async def test_lines_ending_in_crlf_are_read() -> None:
    assert await _echo_twice("crlf", "héllo ☃") == [(False, "héllo ☃"), (False, "again")]


async def test_an_answer_written_in_pieces_cut_inside_characters_arrives_whole() -> None:
    said = 'é☃𝄞"\\\n' * 300
    assert await _echo_twice("trickle", said) == [(False, said), (False, "again")]


async def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    answers = await _echo_twice("latin1", "abc")
    assert answers == [(False, "\ufffd\ufffdabc"), (False, "\ufffd\ufffdagain")]


async def test_a_line_of_broken_json_is_one_warning_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    answers = await _echo_twice("garbage", "still here")
    assert answers == [(False, "still here"), (False, "again")]
    warnings = [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(warnings) == 2  # one per broken line: one before each answer
    assert warnings[0].startswith("MCP server garbage wrote a line that is not JSON-RPC")
    assert "{broken" in warnings[0]


async def test_a_server_that_dies_mid_line_fails_the_call_in_flight() -> None:
    """The half line is dropped; the call fails, the next one starts the server again (and
    it dies again)."""
    answers = await _echo_twice("die", "x" * 100_000)
    for is_error, said in answers:
        assert is_error
        assert said.startswith('MCP server "die" closed the connection while "echo" was running')


# ── the line reader, chunks cut anywhere ─────────────────────────────────────────────

_RAW_TEXT = st.binary(max_size=40).map(
    lambda raw: bytes(b for b in raw if b >= 0x20 and b not in b'"\\')
)
"""Bytes that may go raw into a JSON string: UTF-8 or not, no quote, backslash or control."""


@st.composite
def _lines(draw: st.DrawFn) -> tuple[bytes, list[object]]:
    """The bytes of some lines and what each should read as: the echo request's `text`, or
    None for a line that is no JSON-RPC message."""
    wire: list[bytes] = []
    expected: list[object] = []
    for index in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["text", "raw", "garbage"]))
        end = draw(st.sampled_from([b"\n", b"\r\n"]))
        if kind == "text":
            said = draw(st.text(max_size=40))
            request = {"jsonrpc": "2.0", "id": index, "method": "echo", "params": {"text": said}}
            ascii_only = draw(st.booleans())
            wire.append(json.dumps(request, ensure_ascii=ascii_only).encode() + end)
            expected.append(said)
        elif kind == "raw":
            raw = draw(_RAW_TEXT)
            head = b'{"jsonrpc": "2.0", "id": %d, "method": "echo", "params": {"text": "' % index
            wire.append(head + raw + b'"}}' + end)
            expected.append(raw.decode("utf-8", "replace"))
        else:
            garbage = draw(st.binary(max_size=40)).replace(b"\n", b"")
            wire.append(b"{" + garbage + end)
            expected.append(None)
    tail = draw(st.binary(max_size=20)).replace(b"\n", b"")  # an unfinished last line
    return b"".join(wire) + tail, expected


async def _read_all(chunks: list[bytes]) -> list[object]:
    send, receive = anyio.create_memory_object_stream[bytes](math.inf)
    for chunk in chunks:
        send.send_nowait(chunk)
    send.close()
    reader = MessageReader(receive, errors="replace")
    read: list[object] = []
    while True:
        try:
            item = await reader.receive()
        except anyio.EndOfStream:
            return read
        if isinstance(item, SessionMessage):
            params = item.message.model_dump()["params"]
            read.append(params["text"])
        else:
            assert isinstance(item, ValueError)
            read.append(None)


@given(_lines(), st.data())
def test_chunks_cut_anywhere_read_as_the_same_messages(
    lines: tuple[bytes, list[object]], data: st.DataObject
) -> None:
    wire, expected = lines
    cuts = sorted(data.draw(st.sets(st.integers(0, len(wire)), max_size=12)))
    bounds = [0, *cuts, len(wire)]
    chunks = [wire[start:end] for start, end in itertools.pairwise(bounds)]
    assert anyio.run(_read_all, chunks) == expected
