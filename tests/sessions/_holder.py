"""Another process that holds a session's lease on a SQLite store: what the lease tests take
over, respect, or kill."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def lease_holder(db: Path, setup: str = "") -> Iterator[subprocess.Popen[str]]:
    """A Python process that runs `setup` (source, for example patching
    `yiemagent.sessions.lease`), then acquires session "s" of the SQLite store `db` and
    holds it. Yields the process once it holds the lease; kills it when the block ends."""
    source = textwrap.dedent(setup) + textwrap.dedent(f"""
        import sys
        from yiemagent.sessions import SqliteSessionStore
        store = SqliteSessionStore({str(db)!r})
        store.acquire("s")
        print("held", flush=True)
        sys.stdin.readline()
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child
    finally:
        child.kill()
        child.wait()
