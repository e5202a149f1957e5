"""A lease names its holder's boot (DESIGN §10): after a reboot, a process that has the
holder's pid and started as many clock ticks after boot is another process, and the lease
is taken over; a holder of this boot is respected."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.sessions._holder import lease_holder
from yiemagent import SessionBusyError
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def test_a_lease_from_before_a_reboot_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with lease_holder(db):
        with SqliteSessionStore(db) as store, pytest.raises(SessionBusyError):
            store.acquire("s")  # the same boot: the child is alive
        with sqlite3.connect(db) as conn:  # as if written before this boot (same pid, ticks)
            [(started,)] = conn.execute("SELECT started FROM leases").fetchall()
            ticks, at, boot = started.partition("@")
            assert at and boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            conn.execute("UPDATE leases SET started = ?", (f"{ticks}@{boot[::-1]}",))
        with SqliteSessionStore(db) as store:
            store.release("s", store.acquire("s"))
