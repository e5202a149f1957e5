"""A process killed mid-run (SIGKILL, no cleanup) loses none of the messages that entered its
transcript, and a new Agent on the same file and session id resumes it with a transcript the
provider accepts: the tool call that was running gets an error result (DESIGN §10).
Run on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from tests.sessions._backends import OPEN_SPEC, Backend
from tests.sessions.test_store_contract import acquire_within
from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

CHILD = OPEN_SPEC + textwrap.dedent(
    """
    import asyncio, sys, time
    from yiemagent import Agent, AgentTool
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

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
        session_store=open_store(sys.argv[1]),
        session_id="crashy",
    )
    asyncio.run(agent.prompt("do both"))
    """
)

SCHEMA = {"type": "object", "properties": {}}


@pytest.mark.timeout(60)
async def test_killed_process_mid_tool_is_resumed_by_a_new_agent(
    tmp_path: Path, shared_backend: Backend
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), shared_backend.spec, stdout=PIPE, stderr=PIPE
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

    store = shared_backend.open()  # what the dead process committed, message by message
    assert [m.role for m in store.load("crashy")] == ["user", "assistant", "toolResult"]
    store.release("crashy", await acquire_within(store, "crashy", 15.0))
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
