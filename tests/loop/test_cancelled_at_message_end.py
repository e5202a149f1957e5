"""A run's task cancelled while the assistant message's `message_end` is being told (an
async listener, the session store's append) still answers that message's tool calls:
the sink had taken the message into the transcript, so leaving its calls open (and adding
an "aborted" message after it) made a transcript no provider takes and a stored session
no agent opens (R-4.1). Real SQLite store, the agent through its public API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, AssistantMessage, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.loop import transcript_problems
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import message_to_dict

pytestmark = pytest.mark.timeout(120)


async def test_a_run_cancelled_at_its_assistant_message_end_answers_the_calls(
    tmp_path: Path,
) -> None:
    async def look(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return "seen"

    tool = AgentTool("look", "Look", "look", {"type": "object"}, look)
    fm = FauxModel([faux_message(faux_tool_call("look", {}), faux_tool_call("look", {}))])
    told = asyncio.Event()

    async def stall(event: Any, signal: Any) -> None:
        first = not told.is_set()
        if first and event.type == "message_end" and isinstance(event.message, AssistantMessage):
            told.set()
            await asyncio.Event().wait()  # until the run's task is cancelled

    with SqliteSessionStore(tmp_path / "s.db") as store:
        agent: Agent[Any] = Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=[tool], session_store=store
        )
        agent.subscribe(stall)
        run = asyncio.ensure_future(agent.prompt("go"))
        await told.wait()
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        messages = agent.state.messages
        await agent.close()
        reopened: Agent[Any] = Agent(session_store=store, session_id=agent.session_id)
        stored = [message_to_dict(m) for m in reopened.state.messages]
        await reopened.close()
    assert transcript_problems(messages) == []
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "toolResult"]
    calls = [call.id for call in messages[1].tool_calls]  # type: ignore[union-attr]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == calls
    assert all(r.is_error for r in results)
    assert stored == [message_to_dict(m) for m in messages]
