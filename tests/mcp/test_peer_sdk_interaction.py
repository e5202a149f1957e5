"""The MCP python-sdk's interaction cases (its tests/interaction/lowlevel/test_progress.py,
test_cancellation.py and test_timeouts.py) through `add_server` and the tool pipeline
(DESIGN §12): calls in flight together each get their own progress, and one call given
up on (its timeout) is cancelled on the server while the other runs on to its answer and
the connection serves the next call. Real server subprocesses, stdio and streamable
HTTP."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import wait_for_file
from yiemagent.mcp import MCPServer, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AgentEvent, ToolExecutionUpdateEvent

pytestmark = pytest.mark.timeout(120)


def said(event: ToolExecutionUpdateEvent) -> str:
    return " ".join(getattr(b, "text", "") for b in event.partial_result.content)


async def test_calls_in_flight_together_each_get_their_own_progress(server: MCPServer) -> None:
    # test_concurrent_requests_carry_distinct_progress_tokens
    store = ToolStore("progress")
    await add_server(store, server)
    events: list[AgentEvent] = []
    results = await run_calls(
        store, ("progress", {"steps": 5}), ("progress", {"steps": 8}), events=events
    )
    assert [text(r) for r in results] == ["done", "done"]
    for result, steps in zip(results, (5, 8), strict=True):
        mine = [
            said(e)
            for e in events
            if isinstance(e, ToolExecutionUpdateEvent) and e.tool_call_id == result.tool_call_id
        ]
        assert mine == [f"step {i} of {steps}" for i in range(1, steps + 1)]


async def test_a_call_given_up_on_leaves_the_other_running_and_the_link_serving(
    server: MCPServer, markers: Path
) -> None:
    # test_abandoning_one_call_leaves_a_concurrent_call_running,
    # test_session_serves_requests_after_timeout
    store = ToolStore("timeouts")
    await add_server(store, server)
    patient = dataclasses.replace(store.tools["progress"], timeout_s=60.0)
    store.register(patient, replace=True)
    events: list[AgentEvent] = []
    stuck, slow = await run_calls(
        store,
        ("sleep", {"tag": "stuck"}),
        ("progress", {"steps": 150}),  # about 1.5 s, past the other call's timeout
        tool_timeout_s=0.5,
        events=events,
    )
    assert text(stuck) == "Tool sleep timed out after 0.5 s"
    await wait_for_file(markers / "stuck.cancelled")  # cancelled on the server
    assert not slow.is_error and text(slow) == "done"
    updates = [e for e in events if isinstance(e, ToolExecutionUpdateEvent)]
    assert len(updates) == 150 and said(updates[-1]) == "step 150 of 150"
    [after] = await run_calls(store, ("echo", {"text": "still serving"}))
    assert text(after) == "still serving"
