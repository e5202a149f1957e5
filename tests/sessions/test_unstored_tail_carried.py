"""The messages an agent could not store (its store locked or down past the end of its run)
wait in the process for the session's next agent, which stores them first (DESIGN §8:
loses nothing; docs/sessions.md "Failures"). `yiem serve` builds one agent per request, so
before, the end of a run whose last appends failed was lost: the next request's agent
found a tool call without its result, answered it "interrupted", and the answer the user
had read was gone. A real SQLite file locked by another connection (`BEGIN EXCLUSIVE`), a
real PostgreSQL table locked by another client under a real Uvicorn server."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

from tests.serve._kit import Tools, faux_server, run_events, sse, text_of
from tests.sessions.test_postgres_table_lock import TableLock
from yiemagent import Agent, AgentTool, ToolResultMessage, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import PostgresSessionStore, SqliteSessionStore
from yiemagent.types import message_to_dict


class FileLock:
    """An exclusive lock on an SQLite file, held by a connection of its own."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def agent_on(store: SqliteSessionStore, fm: FauxModel, tools: list[AgentTool]) -> Agent[Any]:
    return Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=tools, session_store=store, session_id="s"
    )


async def test_the_tail_a_locked_store_refused_is_stored_by_the_sessions_next_agent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    locks: list[FileLock] = []

    def lock_the_file(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        locks.append(FileLock(path))  # from here on every append waits 0.2 s, then fails
        return "locked"

    tool = AgentTool("lock", "Lock", "lock the file", {"type": "object"}, lock_the_file)
    fm = FauxModel([faux_message(faux_tool_call("lock", {})), "the answer", "and more"])
    with SqliteSessionStore(path, timeout_s=0.2) as store:
        first = agent_on(store, fm, [tool])
        await first.prompt("go")
        await first.close()  # its result and answer are not stored yet
        seen = [message_to_dict(m) for m in first.state.messages]
        locks[0].release()

        second = agent_on(store, fm, [tool])
        assert [message_to_dict(m) for m in second.state.messages] == seen
        results = [m for m in second.state.messages if isinstance(m, ToolResultMessage)]
        assert [text_of(r) for r in results] == ["locked"]  # not the "interrupted" stand-in
        await second.prompt("again")
        await second.close()
    with SqliteSessionStore(path) as reopened:
        stored = reopened.load("s")
    assert [text_of(m) for m in stored[-2:]] == ["again", "and more"]
    assert [message_to_dict(m) for m in stored[:-2]] == seen


async def test_a_tail_the_store_moved_past_is_not_stored(tmp_path: Path) -> None:
    """Another writer changed the session meanwhile (the lease was released): the waiting
    messages no longer follow what is stored, and are dropped rather than appended out of
    place."""
    path = tmp_path / "s.db"
    locks: list[FileLock] = []

    def lock_the_file(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        locks.append(FileLock(path))
        return "locked"

    tool = AgentTool("lock", "Lock", "lock the file", {"type": "object"}, lock_the_file)
    fm = FauxModel([faux_message(faux_tool_call("lock", {})), "the answer"])
    with SqliteSessionStore(path, timeout_s=0.2) as store:
        first = agent_on(store, fm, [tool])
        await first.prompt("go")
        await first.close()
        locks[0].release()
        with SqliteSessionStore(path) as other:  # another process's store: nothing waits there
            other.clear("s")
            other.append("s", UserMessage("a new start"))

        second = agent_on(store, fm, [tool])
        assert [text_of(m) for m in second.state.messages] == ["a new start"]
        await second.close()


def test_a_run_of_yiem_serve_that_ends_while_the_table_is_locked_keeps_its_answer(
    postgres_dsn: str,
) -> None:
    with (
        PostgresSessionStore(postgres_dsn, lock_timeout_s=0.5) as store,
        faux_server(store, Tools(delay_s=1.0)) as (url, tools),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        started = client.post("/v1/sessions/s/runs", json={"input": "weather rome"})
        events = f"/v1/runs/{started.json()['run_id']}/events"
        locks: list[TableLock] = []
        try:
            with client.stream("GET", events) as response:
                for _, event in sse(response):
                    if event["type"] == "tool_execution_start":  # the result, the answer refused
                        locks.append(TableLock(postgres_dsn))
            assert event["type"] == "agent_end" and locks
            time.sleep(3)  # the run's agent closes meanwhile, its last retry refused too
        finally:
            for lock in locks:
                lock.release()
        tools.delay_s = 0.0
        again = client.post("/v1/sessions/s/runs", json={"input": "hello"})
        run_events(client, again.json()["run_id"])
        texts = [text_of(m) for m in store.load("s")]
    assert texts == [
        "weather rome",
        "",
        "sunny in rome",
        "Done: sunny in rome",
        "hello",
        "echo: hello",
    ]
