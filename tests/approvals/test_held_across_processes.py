"""A held tool call survives SIGKILL of its process: a second process opening the same
session (SQLite or PostgreSQL) sees the same pending call, approves it and resumes; the call
runs once and the model gets every result (DESIGN §14). Decisions are stored
too: one process may approve and another resume."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from tests.sessions._backends import OPEN_SPEC, make_backend
from tests.sessions.test_store_contract import acquire_within

CHILD = OPEN_SPEC + textwrap.dedent(
    """
    import asyncio, json, sys, time
    from yiemagent import Agent, AgentTool, ToolResultMessage
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    db, role, runs = sys.argv[1], sys.argv[2], sys.argv[3]
    SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}

    def make(name, approval=False):
        def execute(call_id, args, signal, on_update):
            with open(runs, "a") as f:
                f.write(call_id + "\\n")
            return f"{name} ran"
        return AgentTool(name, name, name, SCHEMA, execute, parallel=True,
                         requires_approval=approval)

    if role == "first":
        responses = [faux_message(faux_tool_call("a", {"n": 1}, id="c1"),
                                  faux_tool_call("b", {"n": 2}, id="c2"),
                                  faux_tool_call("c", {"n": 3}, id="c3"))]
    else:
        responses = ["all three done"]
    fm = FauxModel(responses)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn,
                  tools=[make("a"), make("b", True), make("c")],
                  session_store=open_store(db), session_id="held")

    async def main():
        pending = [(p.tool_call_id, p.tool_name, p.arguments) for p in agent.pending_approvals]
        if role == "first":
            await agent.prompt("do a, b and c")
            print("HELD", json.dumps([p.tool_call_id for p in agent.pending_approvals]), flush=True)
            time.sleep(120)  # killed here, holding the session
        elif role == "approve":
            agent.approve("c2")
            print("DECIDED", json.dumps(pending), flush=True)
        else:
            if role == "approve_and_resume":
                agent.approve("c2")
            answer = await agent.resume()
            seen = [m.tool_call_id for m in fm.contexts[0].messages
                    if isinstance(m, ToolResultMessage)]
            print("DONE", json.dumps({"pending": pending, "answer": answer.text,
                                      "results_seen": seen,
                                      "left": len(agent.pending_approvals)}), flush=True)

    asyncio.run(main())
    """
)


async def run_child(script: Path, *args: str, kill_after: bytes | None = None) -> str:
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), *args, stdout=PIPE, stderr=PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
        if kill_after is not None and line.startswith(kill_after):
            child.kill()  # SIGKILL: no finally, no atexit, the lease is left behind
        out = line.decode()
        if not out:
            err = await child.stderr.read()
            pytest.fail(f"child {args[1]} printed nothing: {err.decode()[-2000:]}")
        return out
    finally:
        if child.returncode is None and kill_after is not None:
            child.kill()
        await asyncio.wait_for(child.wait(), timeout=30)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("flow", ["one process approves and resumes", "approve, then resume"])
async def test_held_call_survives_sigkill_and_is_resumed_elsewhere(
    tmp_path: Path, flow: str, kind: str, request: pytest.FixtureRequest
) -> None:
    dsn = request.getfixturevalue("postgres_dsn") if kind == "postgres" else None
    backend = make_backend(kind, tmp_path, dsn)
    db, runs, script = backend.spec, tmp_path / "runs.txt", tmp_path / "child.py"
    script.write_text(CHILD)
    first = await run_child(script, str(db), "first", str(runs), kill_after=b"HELD")
    assert first.split(None, 1) == ["HELD", '["c2"]\n']
    assert sorted(runs.read_text().split()) == ["c1", "c3"]
    store = backend.open()  # the killed holder's end is noticed (PostgreSQL: a moment later)
    store.release("held", await acquire_within(store, "held", 15.0))
    store.close()

    if flow == "approve, then resume":
        decided = await run_child(script, str(db), "approve", str(runs))
        assert decided.startswith("DECIDED")
        assert json.loads(decided.split(None, 1)[1]) == [["c2", "b", {"n": 2}]]
        done = await run_child(script, str(db), "resume", str(runs))
    else:
        done = await run_child(script, str(db), "approve_and_resume", str(runs))
    assert done.startswith("DONE"), done
    report = json.loads(done.split(None, 1)[1])
    assert report["pending"] == [["c2", "b", {"n": 2}]]
    assert report["answer"] == "all three done"
    assert report["results_seen"] == ["c1", "c3", "c2"]  # every call answered once
    assert report["left"] == 0
    assert sorted(runs.read_text().split()) == ["c1", "c2", "c3"]  # c2 ran exactly once
