"""The MCP python-sdk's client cases (its tests/client/test_stdio.py,
test_session_concurrency.py and test_http_unicode.py) through `add_server` and the tool
pipeline (DESIGN §12): how `close` ends a stdio server, calls answered out of order, and
text beyond ASCII both ways. Real server subprocesses, stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from yiemagent.mcp import MCPServer, MCPServerStdio, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AgentEvent, ToolExecutionEndEvent

pytestmark = pytest.mark.timeout(120)

TREE_SERVER = str(HERE / "mcp_tree_server.py")


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie nobody reaped has ended too)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_gone(pid: int, timeout_s: float = 20.0) -> bool:
    for _ in range(int(timeout_s / 0.05)):
        if gone(pid):
            return True
        await asyncio.sleep(0.05)
    return gone(pid)


async def tree(markers: Path, **env: str) -> tuple[MCPServerStdio, int, int]:
    """The tree server, connected; returns it with its pid and its child's."""
    server = MCPServerStdio(
        sys.executable, [TREE_SERVER], env={"MCP_TEST_MARKERS": str(markers), **env}, name="tree"
    )
    store = ToolStore("tree")
    await add_server(store, server)
    [pong] = await run_calls(store, ("ping", {}))
    assert text(pong) == "pong"
    return server, int((markers / "pid").read_text()), int((markers / "child.pid").read_text())


async def test_a_server_that_exits_when_its_input_closes_is_let_finish(markers: Path) -> None:
    # test_a_server_that_exits_on_stdin_close_is_never_terminated: its own cleanup runs,
    # and what it leaves running is its business (the SDK's POSIX rule)
    server, pid, child = await tree(markers)
    try:
        await server.close()
        assert await wait_gone(pid)
        assert (markers / "clean_exit").exists()
        assert not gone(child)
    finally:
        os.kill(child, 9)


@pytest.mark.parametrize("stubborn", [False, True])
async def test_a_server_that_stays_is_stopped_with_its_whole_process_tree(
    markers: Path, stubborn: bool
) -> None:
    # test_exiting_the_context_terminates_the_entire_process_tree and
    # test_escalation_kills_a_process_that_ignores_sigterm
    env = {"MCP_TEST_STUBBORN": "1"} if stubborn else {"MCP_TEST_LINGER": "1"}
    server, pid, child = await tree(markers, **env)
    try:
        await asyncio.wait_for(server.close(), 60)  # a bound: the grace period, then a kill
        assert (markers / "clean_exit").exists()  # it was asked first
        assert await wait_gone(pid) and await wait_gone(child)
    finally:
        for leftover in (pid, child):
            if not gone(leftover):
                os.kill(leftover, 9)


async def test_calls_answered_out_of_order_reach_their_own_calls(server: MCPServer) -> None:
    # test_concurrent_tool_calls_resolve_out_of_order_to_their_own_callers
    store = ToolStore("order")
    await add_server(store, server)
    events: list[AgentEvent] = []
    results = await run_calls(
        store,
        ("sleep", {"seconds": 1.0, "tag": "slow"}),
        ("echo", {"text": "fast"}),
        events=events,
    )
    assert [text(r) for r in results] == ["slept 1.0 s", "fast"]
    ended = [e.tool_name for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert ended == ["echo", "sleep"]  # the second call was answered first


UNICODE = [
    "Grüße, 世界! 🌍🚀",
    "مرحبا بالعالم",  # right to left
    "e\u0301 ñ \u00e9",  # combining and composed
    "one\u2028two\u2029three\x85four",  # JSON keeps these raw inside strings
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 \ufeff zero-width joined, a BOM",
]


async def test_text_beyond_ascii_goes_and_comes_back_unchanged(server: MCPServer) -> None:
    # test_streamable_http_client_unicode_tool_call, over stdio as well
    store = ToolStore("unicode")
    await add_server(store, server)
    results = await run_calls(store, *[("echo", {"text": t}) for t in UNICODE])
    assert [text(r) for r in results] == UNICODE
