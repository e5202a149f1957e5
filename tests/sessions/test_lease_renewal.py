"""Leases of another host on SQLite (DESIGN §10): the holder renews its lease from the lease
thread, so a live holder keeps the session however long it runs, and a dead one's lease is
taken over once it has gone unrenewed for `LEASE_TTL_S`, with no `force_release`. "Another
host" is a container with a host name of its own, or one recreated under a new name."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.sessions._holder import lease_holder
from yiemagent import SessionBusyError
from yiemagent.sessions import SqliteSessionStore, lease

pytestmark = pytest.mark.timeout(180)


def plant(db: Path, renewed_ms: int) -> None:
    SqliteSessionStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO leases VALUES ('s', 'tok', 'gone.example', 7, '', ?)", (renewed_ms,)
        )


def test_a_lease_of_another_host_not_renewed_for_the_ttl_is_taken_over(tmp_path: Path) -> None:
    """It was respected for good: the session stayed busy until `force_release`."""
    now_ms = int(time.time() * 1000)
    plant(tmp_path / "old.db", now_ms - int(lease.LEASE_TTL_S * 1000) - 5_000)
    with SqliteSessionStore(tmp_path / "old.db") as store:
        store.release("s", store.acquire("s"))
    plant(tmp_path / "new.db", now_ms)
    renewed = f"not renewed for {lease.LEASE_TTL_S:g} s"
    with (
        SqliteSessionStore(tmp_path / "new.db") as store,
        pytest.raises(SessionBusyError, match=renewed),
    ):
        store.acquire("s")


def test_a_live_holder_keeps_renewing_and_a_killed_one_is_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl_s = 4.0
    monkeypatch.setattr(lease, "LEASE_TTL_S", ttl_s)
    db = tmp_path / "s.db"
    setup = f"""
        from yiemagent.sessions import lease
        lease.LEASE_TTL_S = {ttl_s}
        lease.this_host = lambda: "another-container"
    """
    with lease_holder(db, setup) as child:
        time.sleep(2 * ttl_s + 1)  # longer than the TTL: only its renewals keep it
        with SqliteSessionStore(db) as store:
            with pytest.raises(SessionBusyError, match="another-container"):
                store.acquire("s")
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            deadline = time.monotonic() + 60  # the TTL, with a wide margin for a loaded machine
            while True:
                try:
                    token = store.acquire("s")
                    break
                except SessionBusyError:
                    assert time.monotonic() < deadline, "the dead holder's lease was kept"
                    time.sleep(0.5)
            store.release("s", token)
