"""A streamable-HTTP server whose tool works longer than the client's `timeout_s` but sends
progress notifications more often than that (DESIGN §12): the call is not given up, every
notification reaches the run as a `tool_execution_update`, and the answer arrives. The
bound is on silence, not on the call's length: once the notifications stop and the server
stays silent for `timeout_s`, the call fails saying it went silent."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import free_port, wait_for_port
from yiemagent.mcp import MCPServerHTTP, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AgentEvent, ToolExecutionUpdateEvent

pytestmark = pytest.mark.timeout(120)

SERVER = str(Path(__file__).resolve().parent / "mcp_heartbeat_server.py")
TIMEOUT_S = 2.0
"""The client's silence bound: each call below runs three times as long."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


async def call(url: str, **arguments: float) -> tuple[str, bool, list[AgentEvent]]:
    """Call `slow_progress` with `arguments`: (the result's text, is_error, the events)."""
    server = MCPServerHTTP(url, name="heartbeat", connect_timeout_s=30, timeout_s=TIMEOUT_S)
    events: list[AgentEvent] = []
    async with server:
        store = ToolStore("heartbeat")
        await add_server(store, server)
        [result] = await run_calls(store, ("slow_progress", arguments), events=events)
    return text(result), result.is_error, events


async def test_progress_more_often_than_the_timeout_keeps_a_long_call_going(url: str) -> None:
    said, failed, events = await call(url, steps=6, every=TIMEOUT_S / 2)
    assert (said, failed) == ("done", False)
    updates = [e for e in events if isinstance(e, ToolExecutionUpdateEvent)]
    assert len(updates) == 6


async def test_silence_after_the_progress_still_ends_the_call(url: str) -> None:
    said, failed, _ = await call(url, steps=2, every=TIMEOUT_S / 2, then_wait=TIMEOUT_S * 3)
    assert failed
    assert "went silent" in said and f"{TIMEOUT_S:g} s" in said
