"""`add_server` refused with a `ConfigError` after connecting (a tool-name clash, a name in
`requires_approval` the server has not) closes the connection it opened: nothing owns the
server yet, so nothing else would stop its process or end its HTTP session. A server the
caller connected before stays connected. Real subprocess servers, stdio and HTTP."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HttpTestServer, stdio_server, wait_for_file
from yiemagent import Agent, ConfigError, tool
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.mcp import add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(180)


@tool
def echo(text: str) -> str:
    """A local echo, whose name the test server's `echo` clashes with."""
    return text


def _agent() -> Agent:
    fm = FauxModel([])
    return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[echo])


def _store() -> ToolStore:
    store = ToolStore("refused")
    store.register(echo)
    return store


_CLASH = re.escape("'echo' (from MCP server")

_REFUSALS = {
    "clash": ({}, _CLASH),
    "approval": ({"prefix": "t", "requires_approval": ["ad"]}, "requires_approval names no"),
}


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pid: int, timeout_s: float = 30.0) -> bool:
    """Whether process `pid` ends within `timeout_s` (a wide bound for 2 loaded cores)."""
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.mark.parametrize("target", ["agent", "store"])
@pytest.mark.parametrize("refusal", list(_REFUSALS))
async def test_a_refused_add_server_stops_the_stdio_server_it_started(
    markers: Path, refusal: str, target: str
) -> None:
    kwargs, said = _REFUSALS[refusal]
    server = stdio_server(markers)
    agent = _agent() if target == "agent" else None
    store = agent.tool_store if agent is not None else _store()
    to: Agent | ToolStore = agent if agent is not None else store
    try:
        with pytest.raises(ConfigError, match=said):
            await add_server(to, server, **kwargs)  # type: ignore[arg-type]
        pid = int(await wait_for_file(markers / "pid"))
        assert not server.connected
        assert await asyncio.to_thread(_gone, pid), "the process outlived add_server"
        assert list(store) == ["echo"]  # nothing registered
    finally:
        if agent is not None:
            await agent.close()
        await server.close()


async def test_a_refused_add_server_ends_the_http_session_it_opened(markers: Path) -> None:
    http = HttpTestServer(markers)
    await asyncio.to_thread(http.start)
    agent = _agent()
    server = http.client()
    try:
        with pytest.raises(ConfigError, match=_CLASH):
            await add_server(agent, server)
        assert not server.connected
        assert list(agent.tool_store) == ["echo"]
    finally:
        await agent.close()
        await server.close()
        http.kill()


async def test_a_server_the_caller_connected_stays_connected_after_a_refusal(
    markers: Path,
) -> None:
    store = _store()
    async with stdio_server(markers) as server:
        pid = int(await wait_for_file(markers / "pid"))
        with pytest.raises(ConfigError, match=_CLASH):
            await add_server(store, server)
        assert server.connected and _alive(pid)
        assert "s_echo" in await add_server(store, server, prefix="s")
        [result] = await run_calls(store, ("s_echo", {"text": "still here"}))
        assert text(result) == "still here"
