"""What a handoff leaves behind for the agent handed to (DESIGN §17, R-4.1): the calls the
first agent made stay in the shared transcript, but the target runs with its own tools,
so a call it copies from that history is answered "not found" and never runs; and a run
aborted while the target works leaves a session whose every call is answered, which,
opened again, the target goes on with, sending its model a transcript a provider takes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from yiemagent import ToolExecutionStartEvent, ToolResultMessage
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted, slow_tool

pytestmark = pytest.mark.timeout(120)


async def test_a_call_to_the_first_agents_tool_is_not_found_for_the_target() -> None:
    log: list[tuple[str, str, float]] = []
    query, query_fm = scripted(
        "query", [calls(("navigate", {"n": 2})), "done"], tools=[slow_tool("lookup", log, 0)]
    )
    trigger, _ = scripted(
        "trigger",
        [calls(("navigate", {"n": 1})), calls(("transfer_to_query", {}))],
        tools=[slow_tool("navigate", log, 0)],
        handoffs=[query],
    )
    reply = await trigger.prompt("query the task data")
    assert (reply.agent, reply.text) == ("query", "done")
    assert [t.name for t in query_fm.contexts[0].tools or []] == ["lookup"]
    results = [m for m in trigger.state.messages if isinstance(m, ToolResultMessage)]
    copied = results[-1]
    assert (copied.tool_name, copied.is_error) == ("navigate", True)
    assert text_of(copied.content) == 'Tool "navigate" not found. Available tools: lookup'
    assert [entry[:2] for entry in log] == [("navigate", "start"), ("navigate", "end")]  # once


async def test_an_abort_while_the_target_works_leaves_a_session_it_goes_on_with(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    log: list[tuple[str, str, float]] = []
    billing, _ = scripted(
        "billing",
        [calls(("invoices", {"n": 1}), ("invoices", {"n": 2})), "never sent"],
        tools=[slow_tool("invoices", log, 60)],
    )
    router, _ = scripted(
        "router",
        [calls(("note", {"n": 1}), ("transfer_to_billing", {}))],
        tools=[slow_tool("note", log, 0)],
        handoffs=[billing],
        session_store=store,
        session_id="s",
    )
    working = asyncio.Event()
    router.subscribe(
        lambda event, _signal: (
            working.set()
            if isinstance(event, ToolExecutionStartEvent) and event.tool_name == "invoices"
            else None
        )
    )
    run = asyncio.ensure_future(router.prompt("Is my invoice paid?"))
    await asyncio.wait_for(working.wait(), 30)
    router.abort()
    reply = await asyncio.wait_for(run, 30)
    assert reply.stop_reason == "aborted"
    await router.close()

    stored = store.load("s")
    assert transcript_problems(stored) == []  # type: ignore[arg-type]
    answered = [(m.tool_name, m.is_error) for m in stored if isinstance(m, ToolResultMessage)]
    assert answered == [
        ("note", False),
        ("transfer_to_billing", False),
        ("invoices", True),
        ("invoices", True),
    ]

    billing2, billing2_fm = scripted("billing", ["Anything else?"])
    router2, router2_fm = scripted(
        "router", ["not me"], handoffs=[billing2], session_store=store, session_id="s"
    )
    assert router2.state.active_agent == "billing"
    again: Any = await router2.prompt("Thanks")
    assert (again.agent, again.text) == ("billing", "Anything else?")
    assert router2_fm.call_count == 0
    assert transcript_problems(billing2_fm.contexts[0].messages) == []
    await router2.close()
    store.close()
