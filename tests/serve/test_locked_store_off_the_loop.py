"""A session store that waits for a lock does not stall `yiem serve`: the store calls of a
session run on a worker thread, so while one session's SQLite file is locked by another
connection (`BEGIN EXCLUSIVE`) the server's event loop still answers `/healthz`, and the
session's run goes on once the lock is gone, each message stored once, in order
(docs/sessions.md "Threads"). Real SQLite files, a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import run_events, serving, text_of
from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import message_to_dict

pytestmark = pytest.mark.timeout(180)

WAIT_S = 60.0
"""The store's lock wait (`timeout_s`): far longer than the health check may take."""
ANSWER_S = 15.0
"""How long the health check may take: a stalled loop answers only once the lock is gone."""


class FileLock:
    """An exclusive lock on an SQLite file, held by a connection of its own."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(tmp_path / "s.db", timeout_s=WAIT_S) as opened:
        yield opened


def healthy(url: str) -> bool:
    """Whether `/healthz` answers 200 within `ANSWER_S`."""
    try:
        return httpx.get(f"{url}/healthz", timeout=ANSWER_S).status_code == 200
    except httpx.TimeoutException:
        return False


def test_healthz_answers_while_a_run_waits_to_store_its_message(
    store: SqliteSessionStore, tmp_path: Path
) -> None:
    """The tool locks the file: the append of its result waits for the lock on the
    session's worker thread, and the loop answers meanwhile."""
    locks: list[FileLock] = []
    locked = threading.Event()

    def lock_the_file(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        locks.append(FileLock(tmp_path / "s.db"))
        locked.set()
        return "locked"

    tool = AgentTool("lock", "Lock", "lock the file", {"type": "object"}, lock_the_file)
    fm = FauxModel([faux_message(faux_tool_call("lock", {})), "the answer"])

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool],
            session_store=store,
            session_id=session_id,
        )

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=WAIT_S * 2) as client:
        started = client.post("/v1/sessions/s/runs", json={"input": "go"})
        assert started.status_code == 202, started.text
        assert locked.wait(30)
        try:
            answered = healthy(url)
        finally:
            locks[0].release()
        events = run_events(client, started.json()["run_id"])
    assert answered
    assert events[-1][1]["type"] == "agent_end"
    stored = [message_to_dict(m) for m in store.load("s")]
    assert stored == events[-1][1]["messages"]
    assert [text_of(m) for m in store.load("s")] == ["go", "", "locked", "the answer"]


def test_healthz_answers_while_a_session_waits_to_load(
    store: SqliteSessionStore, tmp_path: Path
) -> None:
    """The file is locked before the run is asked for: building the session's agent (its
    lease, its load) waits on a worker thread, the loop answers meanwhile, and the run
    starts once the lock is gone."""
    fm = FauxModel(["hello there"])
    building = threading.Event()

    def make_agent(session_id: str) -> Agent[Any]:
        building.set()
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    app = create_app(make_agent, session_store=store)
    answers: list[httpx.Response] = []
    with serving(app) as url, httpx.Client(base_url=url, timeout=WAIT_S * 2) as client:
        lock = FileLock(tmp_path / "s.db")
        try:
            asking = threading.Thread(
                target=lambda: answers.append(
                    client.post("/v1/sessions/s/runs", json={"input": "hi"})
                )
            )
            asking.start()
            assert building.wait(30)
            answered = healthy(url)
        finally:
            lock.release()
        asking.join(WAIT_S)
        assert answers and answers[0].status_code == 202, answers
        events = run_events(client, answers[0].json()["run_id"])
    assert answered
    assert events[-1][1]["type"] == "agent_end"
    assert [text_of(m) for m in store.load("s")] == ["hi", "hello there"]
