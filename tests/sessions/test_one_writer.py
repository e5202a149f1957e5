"""One writer per session (DESIGN §10; issue 12 item 2): a second Agent on a session that is
being written — in this process or another — is refused at once with `SessionBusyError`, a
lease left by a killed process is taken over, and an interleaved stored transcript is
reported on load (`SessionCorruptError`), never repaired into invented results."""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import sys
import textwrap
import threading
import time
from asyncio.subprocess import PIPE
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AssistantMessage,
    SessionBusyError,
    SessionCorruptError,
    TextContent,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.loop import transcript_problems
from yiemagent.sessions import (
    InMemorySessionStore,
    PostgresSessionStore,
    SqliteSessionStore,
    lease,
)
from yiemagent.sessions.lease import process_start_time

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from yiemagent import Agent, AgentTool, SessionBusyError
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.sessions import SqliteSessionStore

    SCHEMA = {"type": "object", "properties": {}}
    name, prompts = sys.argv[2], int(sys.argv[3])
    script = []
    for n in range(prompts):
        script += [faux_message(faux_tool_call("echo", {}, id=f"{name}-{n}")), f"{name} {n}"]
    fm = FauxModel(script)
    try:
        agent = Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[AgentTool("echo", "echo", "echo", SCHEMA, lambda *a: name)],
            session_store=SqliteSessionStore(sys.argv[1]),
            session_id="shared",
        )
    except SessionBusyError as exc:
        print("REFUSED", exc, flush=True)
        sys.exit(3)
    print("WRITING", flush=True)

    async def main():
        for n in range(prompts):
            await agent.prompt(f"{name} prompt {n}")
        print("DONE", flush=True)
        if sys.argv[4] == "hold":
            await asyncio.sleep(120)
        await agent.close()

    asyncio.run(main())
    """
)


async def _spawn(tmp_path: Path, db: Path, name: str, prompts: int, hold: str) -> Any:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(db), name, str(prompts), hold, stdout=PIPE, stderr=PIPE
    )


@pytest.mark.timeout(120)
async def test_a_second_process_is_refused_and_nothing_interleaves(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    a = await _spawn(tmp_path, db, "A", 60, "hold")
    try:
        assert a.stdout is not None
        assert (await asyncio.wait_for(a.stdout.readline(), 60)).strip() == b"WRITING"
        b = await _spawn(tmp_path, db, "B", 60, "exit")
        out, err = await asyncio.wait_for(b.communicate(), 60)
        assert b.returncode == 3, err.decode()
        assert out.startswith(b"REFUSED") and f"process {a.pid}".encode() in out
        # a raw write from another store is refused too, while A lives
        with SqliteSessionStore(db) as other, pytest.raises(SessionBusyError):
            other.append("shared", UserMessage("intruder"))
        assert (await asyncio.wait_for(a.stdout.readline(), 90)).strip() == b"DONE"
    finally:
        a.kill()  # SIGKILL: its lease stays behind in the file
        await a.wait()
    with SqliteSessionStore(db) as store:
        stored = store.load("shared")
        assert len(stored) == 60 * 4 and transcript_problems(stored) == []
        assert all("B" not in repr(m.content) for m in stored)  # type: ignore[union-attr]
        fm = FauxModel(["after"])
        agent = Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="shared"
        )
        assert (await agent.prompt("resumed")).text == "after"  # the dead lease was taken over
        await agent.close()


@pytest.mark.timeout(120)
async def test_two_processes_started_together_never_interleave(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SqliteSessionStore(db).close()  # the file and tables exist before both start
    procs = [await _spawn(tmp_path, db, name, 60, "exit") for name in ("A", "B")]
    results = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 110)
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 0], [0, 3]), [r[1].decode()[-500:] for r in results]
    with SqliteSessionStore(db) as store:
        stored = store.load("shared")
    assert transcript_problems(stored) == []
    assert len(stored) == 240 * codes.count(0)  # whole runs only: A's, then maybe B's
    if codes == [0, 0]:  # the second started after the first closed: blocks, never mixed
        first = repr(stored[0].content)  # type: ignore[union-attr]
        other = "B" if "A prompt" in first else "A"
        # (a tool call's and a tool result's content hold no "A " or "B ": look for the other)
        assert all(other not in repr(m.content) for m in stored[:240])  # type: ignore[union-attr]


def _agent(store: Any, session_id: str = "s") -> Agent:
    return Agent(
        llm_call=lambda f: {"role": "assistant", "content": "ok"},
        session_store=store,
        session_id=session_id,
    )


@pytest.mark.parametrize("make", [InMemorySessionStore, None])
async def test_a_second_agent_in_this_process_is_refused_until_the_first_is_gone(
    make: Any, tmp_path: Path
) -> None:
    store = make() if make else SqliteSessionStore(tmp_path / "s.db")
    first = _agent(store)
    await first.prompt("hi")
    with pytest.raises(SessionBusyError, match="another Agent in this process"):
        _agent(store)
    _agent(store, "other").state  # other sessions are free  # noqa: B018
    await first.close()
    second = _agent(store)
    with pytest.raises(SessionBusyError):
        _agent(store)
    del second
    gc.collect()  # a collected agent gives its lease back
    third = _agent(store)
    assert [m.role for m in third.state.messages] == ["user", "assistant"]
    store.close()


@pytest.mark.parametrize("make", [InMemorySessionStore, None])
@pytest.mark.parametrize("held", ["store", "leases"])
def test_an_agent_collected_while_a_lock_is_held_gives_its_lease_back(
    make: Any, held: str, tmp_path: Path
) -> None:
    # A collection runs on whichever thread allocates, also inside a store method (or the
    # leases' table) holding its lock: the collected agent's lease is released right
    # there. Seen hanging `SqliteSessionStore.close()` for good in a CI run.
    store = make() if make else SqliteSessionStore(tmp_path / "s.db")
    cycle: dict[str, Any] = {"agent": _agent(store)}
    cycle["self"] = cycle  # only a collection frees the agent
    del cycle
    lock = store._lock if held == "store" else lease._LIVE_LOCK

    def collect_under_the_lock() -> None:
        with lock:
            gc.collect()

    worker = threading.Thread(target=collect_under_the_lock, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the release waited on its own thread's lock"
    _agent(store)  # the lease is free
    store.close()


def _collect_inside_database_calls(store: Any) -> Callable[[], int]:
    """Make the store's next database call run a collection from inside the driver (SQLite:
    the statement's trace callback; psycopg: dumping a parameter, under the connection's own
    lock); returns how many lease rows the database holds."""
    once = [True]

    def collect(*_: object) -> None:
        if once[0]:
            once[0] = False
            gc.collect()

    if isinstance(store, SqliteSessionStore):
        store._conn.set_trace_callback(collect)
        return lambda: int(store._conn.execute("SELECT count(*) FROM leases").fetchone()[0])

    from psycopg.types.string import StrDumper

    class CollectingDumper(StrDumper):
        def dump(self, obj: str) -> bytes:
            collect()
            return super().dump(obj)

    conn = store._conn
    conn.adapters.register_dumper(str, CollectingDumper)

    def leases() -> int:
        with store._lock:
            return int(conn.execute("SELECT count(*) FROM yiemagent.leases").fetchone()[0])

    return leases


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_agent_collected_inside_a_database_call_gives_its_lease_back(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The finalizer runs inside the driver's call, on the thread that holds the connection
    # (psycopg: its lock): releasing there would wait for good or use the connection in the
    # middle of a statement. The release is queued, made by a background step, and the
    # lease row is gone for every process.
    if kind == "sqlite":
        store: Any = SqliteSessionStore(tmp_path / "s.db")
    else:
        store = PostgresSessionStore(request.getfixturevalue("postgres_dsn"))
    cycle: dict[str, Any] = {"agent": _agent(store)}
    cycle["self"] = cycle  # only a collection frees the agent
    del cycle
    leases = _collect_inside_database_calls(store)

    worker = threading.Thread(target=store.load, args=("other",), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the release waited on its own thread's database call"
    deadline = time.monotonic() + 30
    while leases() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leases() == 0, "the collected agent's lease row is still there"
    _agent(store)  # the lease is free
    store.close()


def _plant_lease(db: Path, host: str, pid: int, started: str) -> None:
    SqliteSessionStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO leases VALUES ('s', 'tok', ?, ?, ?, ?)",
            (host, pid, started, int(time.time() * 1000)),  # renewed just now
        )


def test_a_lease_of_a_recycled_pid_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    parent = os.getppid()  # alive, but started at another time than the lease says
    _plant_lease(db, os.uname().nodename, parent, "1")
    with SqliteSessionStore(db) as store:
        _agent(store)


def test_a_lease_of_a_live_process_is_respected(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    parent = os.getppid()
    _plant_lease(db, os.uname().nodename, parent, process_start_time(parent))
    with SqliteSessionStore(db) as store:
        with pytest.raises(SessionBusyError, match=f"process {parent}"):
            _agent(store)
        with pytest.raises(SessionBusyError):
            store.replace("s", [UserMessage("x")])
        assert store.load("s") == []


def test_a_lease_from_another_host_needs_force_release(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _plant_lease(db, "elsewhere.example", 1, "")
    with SqliteSessionStore(db) as store:
        with pytest.raises(SessionBusyError, match="force_release"):
            _agent(store)
        store.force_release("s")
        _agent(store)


def _exchange(n: int, writer: str) -> list[Any]:
    call = faux_tool_call("echo", {}, id=f"{writer}{n}")
    from yiemagent import ToolResultMessage

    return [
        UserMessage(f"{writer} {n}"),
        faux_message(call),
        ToolResultMessage(call.id, "echo", [TextContent("ok")]),
        AssistantMessage([TextContent(f"{writer} answer {n}")]),
    ]


def test_an_interleaved_session_is_reported_not_repaired(tmp_path: Path) -> None:
    a, b = _exchange(1, "A"), _exchange(1, "B")
    rows = [a[0], a[1], b[0], b[1], a[2], b[2], a[3], b[3]]  # two writers' rows, mixed
    with SqliteSessionStore(tmp_path / "s.db") as store:
        store.replace("s", rows)
        with pytest.raises(SessionCorruptError, match="interleaved") as caught:
            _agent(store)
        assert caught.value.problems and "message 1" in caught.value.problems[0]
        assert store.load("s") == rows  # nothing changed, nothing invented
        _agent(store, "s2")  # the refused agent left no lease behind on other sessions
        store.replace("s", a)
        _agent(store)  # and none on this one: a fixed copy opens
