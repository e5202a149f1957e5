"""A server that asks the client for a sampled answer or its roots, or logs, in the middle
of a call, in the cases the MCP SDK's tests/client/test_sampling_callback.py,
test_list_roots_callback.py and test_logging_callback.py check, against a real server
process (`mcp_asking_server.py`, over stdio). yiemagent has no sampling or roots to offer
(docs/mcp.md): the server is told so and the call is answered at once; what the server logs
reaches Python's logging, named by the server."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AgentEvent

pytestmark = pytest.mark.timeout(120)

SERVER = str(Path(__file__).parent / "mcp_asking_server.py")


async def test_sampling_and_roots_are_refused_and_every_call_answered() -> None:
    async with MCPServerStdio(sys.executable, [SERVER], name="asking") as server:
        store = ToolStore("asking")
        await add_server(store, server)
        failed, went_on, roots = await run_calls(
            store,
            ("summarise_or_fail", {"text": "hello world"}),
            ("summarise_or_default", {"text": "hello world"}),
            ("roots_or_default", {}),
        )
        [again] = await run_calls(store, ("summarise_or_default", {"text": "again!"}))

    assert failed.is_error
    assert text(failed) == 'MCP server "asking" refused the call: Sampling not supported'
    assert (went_on.is_error, text(went_on)) == (
        False,
        "hello... (no sampling: Sampling not supported)",
    )
    assert (roots.is_error, text(roots)) == (False, "no roots (List roots not supported)")
    assert text(again) == "again... (no sampling: Sampling not supported)"


async def test_log_messages_reach_pythons_logging_and_progress_the_listeners(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[AgentEvent] = []
    with caplog.at_level(logging.DEBUG, logger="yiemagent.mcp"):
        async with MCPServerStdio(sys.executable, [SERVER], name="asking") as server:
            store = ToolStore("asking")
            await add_server(store, server)
            [result] = await run_calls(store, ("chatty", {}), events=events)

    assert (result.is_error, text(result)) == (False, "chatty is done")
    logged = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name.startswith("yiemagent.mcp") and "logged:" in r.getMessage()
    ]
    assert logged == [
        (logging.DEBUG, 'MCP server "asking" logged: starting'),
        (logging.INFO, "MCP server \"asking\" logged: {'step': 1, 'of': 2}"),
        (logging.WARNING, "MCP server \"asking\" logged: ['a', 'list']"),
        (logging.ERROR, 'MCP server "asking" logged: not really an error'),
    ]
    updates = [text(e.partial_result) for e in events if e.type == "tool_execution_update"]  # type: ignore[union-attr]
    assert updates == ["half way", "done"]
