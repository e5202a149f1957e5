"""A table of `PostgresSessionStore` locked by another client (a `LOCK TABLE`, a migration
that holds it): the store's statements wait at most `lock_timeout_s`, then fail, as SQLite's
`timeout_s` bounds its waits. The agent's store calls wait on the session's worker thread,
where a wait without end would still hold the session (and its store) for good; these tests
lock the table with a real PostgreSQL server and a real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx2 as httpx
import psycopg
import pytest

from tests.serve._kit import faux_server, run_events, text_of
from yiemagent import ConfigError
from yiemagent.sessions import PostgresSessionStore

pytestmark = pytest.mark.timeout(180)

HELD_S = 60.0
"""How long the lock is held at most: far longer than any wait the store may make."""


class TableLock:
    """`LOCK TABLE <schema>.messages` held by a connection of its own, until `release()`."""

    def __init__(self, dsn: str, schema: str = "yiemagent") -> None:
        self.conn = psycopg.connect(dsn)
        self.conn.execute(f'LOCK TABLE "{schema}".messages IN ACCESS EXCLUSIVE MODE')
        self._timer = threading.Timer(HELD_S, self.release)
        self._timer.start()
        self._released = threading.Lock()

    def release(self) -> None:
        with self._released:
            if not self.conn.closed:
                self.conn.rollback()
                self.conn.close()
        self._timer.cancel()


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresSessionStore]:
    with PostgresSessionStore(postgres_dsn, lock_timeout_s=1.0) as opened:
        yield opened


def test_a_locked_table_fails_a_read_and_a_write_instead_of_waiting(
    store: PostgresSessionStore, postgres_dsn: str
) -> None:
    from yiemagent import UserMessage

    store.append("s", UserMessage("before"))
    lock = TableLock(postgres_dsn)
    try:
        with pytest.raises(psycopg.errors.LockNotAvailable):
            store.load("s")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            store.append("s", UserMessage("during"))
    finally:
        lock.release()
    store.append("s", UserMessage("after"))
    assert [text_of(m) for m in store.load("s")] == ["before", "after"]


def test_a_server_whose_table_is_locked_still_answers_and_runs_once_it_is_free(
    postgres_dsn: str,
) -> None:
    """With the default limit: a run asked for while the table is locked is refused with the
    reason, the health check answers meanwhile, and the session runs once the lock is gone."""
    with (
        PostgresSessionStore(postgres_dsn) as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url, timeout=HELD_S / 2) as client,
    ):
        lock = TableLock(postgres_dsn)
        try:
            refused = client.post("/v1/sessions/s/runs", json={"input": "weather rome"})
            assert refused.status_code == 500
            assert "lock timeout" in refused.json()["error"]
            assert client.get("/healthz").status_code == 200
        finally:
            lock.release()
        started = client.post("/v1/sessions/s/runs", json={"input": "weather rome"})
        assert started.status_code == 202, started.text
        events = run_events(client, started.json()["run_id"])
        assert events[-1][1]["type"] == "agent_end"
        roles = [m.role for m in store.load("s")]
        assert roles == ["user", "assistant", "toolResult", "assistant"]


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan")])
def test_a_lock_timeout_that_is_not_positive_is_a_config_error(
    postgres_dsn: str, seconds: float
) -> None:
    with pytest.raises(ConfigError, match="lock_timeout_s"):
        PostgresSessionStore(postgres_dsn, lock_timeout_s=seconds)


def test_the_dsn_s_own_options_are_kept(postgres_dsn: str) -> None:
    with PostgresSessionStore(f"{postgres_dsn}?options=-c%20application_name%3Dmine") as store:
        name = store._conn.execute("SHOW application_name").fetchone()
        limit = store._conn.execute("SHOW lock_timeout").fetchone()
    assert name == ("mine",) and limit == ("5s",)
