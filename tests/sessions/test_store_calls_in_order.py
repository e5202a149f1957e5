"""The store calls of a session run on its worker thread, off the event loop; whatever
interleaving the run's parallel tools, a store locked and freed by another connection at
any moment, and a run's task cancelled mid-way make, each message that entered the
agent's transcript is stored exactly once, in transcript order (docs/sessions.md
"Threads" and "Failures"). A real SQLite file, a real lock (`BEGIN EXCLUSIVE` from a
connection of its own), the agent driven through its public API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tests.serve._kit import text_of
from yiemagent import Agent, AgentTool, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import ToolResultMessage, message_to_dict

pytestmark = pytest.mark.timeout(600)

Action = tuple[str, int]
"""("sleep", ms), ("lock", 0) or ("unlock", 0): what one tool call does."""

actions = st.one_of(
    st.tuples(st.just("sleep"), st.integers(0, 30)),
    st.tuples(st.sampled_from(["lock", "unlock"]), st.just(0)),
)
runs = st.lists(st.lists(st.lists(actions, max_size=3), max_size=4), min_size=1, max_size=4)
"""Runs, each a list of parallel tool calls, each a list of actions."""


class FileLock:
    """At most one exclusive lock on the SQLite file at a time, each held by a connection of
    its own; `take` and `free` may be called from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None
        self.guard = threading.Lock()
        self.taken = threading.Event()
        """Set once a lock was taken."""

    def take(self) -> None:
        with self.guard:
            if self.conn is None:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                conn.execute("BEGIN EXCLUSIVE")
                self.conn = conn
                self.taken.set()

    def free(self) -> None:
        with self.guard:
            if self.conn is not None:
                self.conn.execute("ROLLBACK")
                self.conn.close()
                self.conn = None


def brain(context: Context) -> AssistantMessage:
    """A user message holding a run's plan (JSON) calls `act` once per planned call, all in
    one reply; after the results, an answer."""
    last = context.messages[-1]
    if isinstance(last, ToolResultMessage):
        return faux_message(faux_text("done"))
    plan = json.loads(text_of(last))
    if not plan:
        return faux_message(faux_text("nothing to do"))
    return faux_message(*(faux_tool_call("act", {"do": calls}) for calls in plan))


def act_tool(lock: FileLock) -> AgentTool:
    async def act(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        for what, ms in args["do"]:
            if what == "sleep":
                await asyncio.sleep(ms / 1000)
            elif what == "lock":
                await asyncio.to_thread(lock.take)
            else:
                await asyncio.to_thread(lock.free)
        return f"did {len(args['do'])}"

    schema = {"type": "object", "properties": {"do": {"type": "array"}}}
    return AgentTool("act", "Act", "do the planned actions", schema, act, parallel=True)


async def drive(path: Path, plan: list[list[list[Action]]], cancel_after_ms: int | None) -> None:
    lock = FileLock(path)
    fm = FauxModel([brain] * 100)
    with SqliteSessionStore(path, timeout_s=0.1) as store:
        agent: Agent[Any] = Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[act_tool(lock)],
            session_store=store,
            session_id="s",
        )
        for number, calls in enumerate(plan):
            run = asyncio.ensure_future(agent.prompt(json.dumps(calls)))
            last = number == len(plan) - 1
            if last and cancel_after_ms is not None:  # the task goes, its appends do not
                # after the file was locked, so an append is likely waiting for it
                await asyncio.wait(
                    [run, asyncio.ensure_future(asyncio.to_thread(lock.taken.wait, 5))],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                await asyncio.sleep(cancel_after_ms / 1000)
                run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        seen = [message_to_dict(m) for m in agent.state.messages]
        await agent.close()  # the lock may still be held: what waits is carried over
        lock.free()
        reopened: Agent[Any] = Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s"
        )
        resumed = [message_to_dict(m) for m in reopened.state.messages]
        await reopened.close()
        stored = [message_to_dict(m) for m in store.load("s")]
    assert stored == resumed
    # Each message once, in order; after a cancelled run, only the crash repair follows:
    # an "interrupted" result for each call the cancellation left unanswered.
    assert stored[: len(seen)] == seen
    assert all(m["role"] == "toolResult" and m["is_error"] for m in stored[len(seen) :])


@settings(max_examples=20)
@given(plan=runs, cancel_after_ms=st.none() | st.integers(0, 150))
def test_each_message_is_stored_once_in_order_whatever_the_interleaving(
    plan: list[list[list[Action]]], cancel_after_ms: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(drive(Path(folder) / "s.db", plan, cancel_after_ms))
