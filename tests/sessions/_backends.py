"""The session stores the contract suite runs against, built the same way for every test:
in memory, SQLite in a temporary file, and PostgreSQL on the server the tests start
(tests/_postgres.py, a fresh database per test)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from yiemagent.sessions import (
    InMemorySessionStore,
    PostgresSessionStore,
    SessionStore,
    SqliteSessionStore,
)

OPEN_SPEC = """
def open_store(spec):
    from yiemagent.sessions import PostgresSessionStore, SqliteSessionStore
    if spec.startswith("postgresql://"):
        return PostgresSessionStore(spec)
    return SqliteSessionStore(spec)
"""
"""Source of `open_store(spec)` for the child processes the tests start."""


@dataclass
class Backend:
    """One kind of store; `open()` gives a new store on the same data (a memory backend has
    no data to share: each `open()` is a new empty store)."""

    kind: str
    spec: str
    """What a child process passes to `open_store`: the SQLite path or the PostgreSQL DSN."""

    def open(self) -> SessionStore:
        if self.kind == "memory":
            return InMemorySessionStore()
        if self.kind == "sqlite":
            return SqliteSessionStore(self.spec)
        return PostgresSessionStore(self.spec)


def make_backend(kind: str, tmp_path: Path, postgres_dsn: str | None) -> Backend:
    if kind == "postgres":
        assert postgres_dsn is not None
        return Backend(kind, postgres_dsn)
    return Backend(kind, str(tmp_path / "s.db"))
