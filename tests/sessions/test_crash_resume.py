"""A process killed mid-run (SIGKILL, no cleanup) loses none of the messages that entered its
transcript, and a new Agent on the same file and session id resumes it with a transcript the
provider accepts: the tool call that was running gets an error result (DESIGN §10, R-4.1)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import textwrap
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from yiemagent import Agent, AgentTool
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
    from yiemagent.sessions import SqliteSessionStore

    SCHEMA = {"type": "object", "properties": {}}

    def slow(tool_call_id, args, signal, on_update):
        print("TOOL_STARTED", flush=True)
        time.sleep(120)
        return "never"

    fm = FauxModel([
        faux_message(
            faux_text("working on it"),
            faux_tool_call("fast", {}, id="c1"),
            faux_tool_call("slow", {}, id="c2"),
        ),
        "never reached",
    ])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            AgentTool("fast", "fast", "quick", SCHEMA, lambda *a: "fast result"),
            AgentTool("slow", "slow", "slow", SCHEMA, slow),
        ],
        tool_execution="sequential",
        session_store=SqliteSessionStore(sys.argv[1]),
        session_id="crashy",
    )
    asyncio.run(agent.prompt("do both"))
    """
)

SCHEMA = {"type": "object", "properties": {}}


@pytest.mark.timeout(60)
async def test_killed_process_mid_tool_is_resumed_by_a_new_agent(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(db), stdout=PIPE, stderr=PIPE
    )
    try:
        assert child.stdout is not None and child.stderr is not None
        line = await asyncio.wait_for(child.stdout.readline(), timeout=45)
        if line.strip() != b"TOOL_STARTED":  # the child died before its tool ran
            err = await child.stderr.read()
            pytest.fail(f"the child did not reach the tool: {err.decode()[-2000:]}")
        child.kill()  # SIGKILL: no finally blocks, no atexit, no sqlite close
    finally:
        if child.returncode is None:
            child.kill()
        await asyncio.wait_for(child.wait(), timeout=10)
    assert child.returncode != 0

    with sqlite3.connect(db) as conn:  # what the dead process committed, message by message
        stored = conn.execute(
            "SELECT seq, role FROM messages WHERE session_id = 'crashy' ORDER BY seq"
        ).fetchall()
    assert stored == [(1, "user"), (2, "assistant"), (3, "toolResult")]

    store = SqliteSessionStore(db)
    fm = FauxModel(["recovered"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("fast", "fast", "quick", SCHEMA, lambda *a: "fast result")],
        session_store=store,
        session_id="crashy",
    )
    messages = agent.state.messages
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "toolResult"]
    fast, interrupted = messages[2], messages[3]
    assert isinstance(fast, ToolResultMessage) and isinstance(interrupted, ToolResultMessage)
    assert (fast.tool_call_id, text_of(fast.content), fast.is_error) == ("c1", "fast result", False)
    assert interrupted.tool_call_id == "c2" and interrupted.is_error
    assert "interrupted" in text_of(interrupted.content)

    answer = await agent.resume()
    assert answer.text == "recovered"
    sent = fm.contexts[0].messages  # every call answered once, in order: valid for any provider
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "toolResult"]
    call_ids = [c.id for c in sent[1].tool_calls]  # type: ignore[union-attr]
    assert call_ids == [m.tool_call_id for m in sent[2:] if isinstance(m, ToolResultMessage)]
    assert [m.role for m in store.load("crashy")] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    store.close()
