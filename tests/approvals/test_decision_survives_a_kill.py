"""A decision, once stored, decides its call's result after any crash (DESIGN §14): a
process killed with SIGKILL while `resume()` runs an approved call leaves the rejected call
of the same message answered with its rejection (never "No result: ... run it again"), and
the approved call that was running answered as interrupted, never run twice. Real
processes on one SQLite session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from yiemagent import Agent, AgentTool, SqliteSessionStore, ToolResultMessage
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.types import text_of

    db, role, folder = sys.argv[1], sys.argv[2], sys.argv[3]
    SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}

    def remove(call_id, args, signal, on_update):
        with open(f"{folder}/ran.txt", "a") as f:
            f.write(call_id + "\\n")
        with open(f"{folder}/started", "w") as f:
            f.write(call_id)
        time.sleep(120)  # killed here, mid-resume
        return "removed"

    responses = [faux_message(faux_tool_call("remove", {"path": "a"}, id="keep"),
                              faux_tool_call("remove", {"path": "b"}, id="drop"))]
    fm = FauxModel(responses if role == "first" else ["done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tool_execution="sequential",
                  tools=[AgentTool("remove", "remove", "remove a file", SCHEMA, remove,
                                   requires_approval=True)],
                  session_store=SqliteSessionStore(db), session_id="s")

    async def main():
        if role == "first":
            await agent.prompt("remove a and b")
            print("HELD", json.dumps([p.tool_call_id for p in agent.pending_approvals]))
        elif role == "resume":
            agent.approve("keep")
            agent.reject("drop", "not b, it is still needed")
            print("RESUMING", flush=True)
            await agent.resume()
        else:
            results = {m.tool_call_id: text_of(m.content) for m in agent.state.messages
                       if isinstance(m, ToolResultMessage)}
            print("RESULTS", json.dumps({"results": results,
                                         "pending": len(agent.pending_approvals)}))
        await agent.close()

    asyncio.run(main())
    """
)


def _child(script: Path, db: Path, role: str, folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(db), role, str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


@pytest.mark.timeout(180)
def test_a_kill_during_resume_keeps_the_rejection(tmp_path: Path) -> None:
    script, db = tmp_path / "child.py", tmp_path / "s.db"
    script.write_text(CHILD)
    first = _child(script, db, "first", tmp_path)
    out, err = first.communicate(timeout=60)
    assert out.startswith('HELD ["keep", "drop"]'), err[-2000:]

    resuming = _child(script, db, "resume", tmp_path)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert resuming.poll() is None, resuming.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the approved call never started"
        time.sleep(0.02)
    os.kill(resuming.pid, signal.SIGKILL)  # mid-resume: the approved call is running
    resuming.wait(30)

    check = _child(script, db, "check", tmp_path)
    out, err = check.communicate(timeout=60)
    assert out.startswith("RESULTS"), err[-2000:]
    report = json.loads(out.split(None, 1)[1])
    assert report["pending"] == 0
    results = report["results"]
    assert results["drop"] == "Tool call rejected by the user: not b, it is still needed"
    assert results["keep"].startswith("No result: the session was interrupted")
    assert (tmp_path / "ran.txt").read_text().split() == ["keep"]  # at most once
