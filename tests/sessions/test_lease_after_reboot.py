"""A lease names its holder's boot (DESIGN §10): after a reboot, a process that has the
holder's pid and started as many clock ticks after boot is another process, and the lease
is taken over; a holder of this boot is respected."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from yiemagent import SessionBusyError
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def test_a_lease_from_before_a_reboot_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from yiemagent.sessions import SqliteSessionStore
            store = SqliteSessionStore({str(db)!r})
            store.acquire("s")
            print("held", flush=True)
            sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        with SqliteSessionStore(db) as store, pytest.raises(SessionBusyError):
            store.acquire("s")  # the same boot: the child is alive
        with sqlite3.connect(db) as conn:  # as if written before this boot (same pid, ticks)
            [(started,)] = conn.execute("SELECT started FROM leases").fetchall()
            ticks, at, boot = started.partition("@")
            assert at and boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            conn.execute("UPDATE leases SET started = ?", (f"{ticks}@{boot[::-1]}",))
        with SqliteSessionStore(db) as store:
            store.release("s", store.acquire("s"))
    finally:
        child.kill()
        child.wait()
