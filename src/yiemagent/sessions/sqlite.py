"""`SqliteSessionStore`: transcripts in one SQLite file, one row per message (DESIGN §10).

Table `messages(session_id, seq, role, data, timestamp)`: `seq` counts from 1 within a
session, `data` is the message's JSON (`yiemagent.types.message_to_dict`), `timestamp` the
message's own timestamp (ms since the epoch, UTC). The database runs in WAL mode and every
`append` is one statement in its own committed transaction, so each message is on disk when
`append` returns and survives a crash of the process (with `synchronous="FULL"` also a power
loss, at the cost of an fsync per message).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from types import TracebackType
from typing import Literal

from yiemagent.errors import ConfigError
from yiemagent.sessions.store import decode_messages, encode_message
from yiemagent.types import AgentMessage, now_ms

__all__ = ["SqliteSessionStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    data TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
)
"""
# One statement: the next seq is read and the row written in the same (implicit) transaction.
_APPEND = """
INSERT INTO messages (session_id, seq, role, data, timestamp)
SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM messages WHERE session_id = ?
"""


class SqliteSessionStore:
    """A `SessionStore` in an SQLite file (stdlib `sqlite3`), durable message by message.

    One connection per store, opened with `check_same_thread=False` and guarded by a lock,
    so the agent's event loop thread, tool worker threads and the caller may all use it; each
    call is one short statement. Several stores (or processes) may open the same file (WAL
    readers do not block the writer; a busy writer is waited for up to `timeout_s`), but
    each session should have one writer at a time.

    Args:
        path: the database file (created with its table if missing), or ":memory:".
        synchronous: SQLite's `synchronous` setting. "NORMAL" (default) survives a crash of
            the process; "FULL" also a power loss or OS crash (an fsync per append).
        timeout_s: how long a write waits for another connection's lock, in seconds.

    Raises:
        ConfigError: the file cannot be opened as a session database (the reason is given).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        timeout_s: float = 5.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ConfigError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}")
        self.path = os.fspath(path)
        """The database file."""
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session database {self.path!r}: {exc}") from exc
        try:
            self._setup(synchronous)
        except (sqlite3.Error, ConfigError) as exc:
            self._conn.close()
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{self.path!r} cannot be used as a session database: {exc}") from exc
        self._closed = False

    def _setup(self, synchronous: str) -> None:
        conn = self._conn
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path!r} was written by a newer yiemagent (schema {version}, this one "
                f"reads {SCHEMA_VERSION}); upgrade yiemagent or use another file"
            )
        conn.execute(_SCHEMA)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # ── SessionStore ───────────────────────────────────────────────────────

    def load(self, session_id: str) -> list[AgentMessage]:
        """The session's messages in append order (`[]` for an unknown id); rows that do not
        decode are skipped with a warning.

        Raises:
            sqlite3.Error: the database cannot be read; RuntimeError: the store is closed.
        """
        with self._lock:
            self._check_open()
            rows = self._conn.execute(
                "SELECT data FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        return decode_messages(row[0] for row in rows)

    def append(self, session_id: str, message: AgentMessage) -> None:
        """Write one message as the session's next row, committed before returning. A message
        that cannot be encoded (an application's own type) is skipped with a warning.

        Raises:
            sqlite3.Error: the write failed (disk full, locked longer than `timeout_s`, ...);
                RuntimeError: the store is closed.
        """
        data = encode_message(message)
        if data is None:
            return
        timestamp = getattr(message, "timestamp", None)
        if not isinstance(timestamp, int):
            timestamp = now_ms()
        role = str(getattr(message, "role", ""))
        with self._lock:
            self._check_open()
            self._conn.execute(_APPEND, (session_id, role, data, timestamp, session_id))

    def clear(self, session_id: str) -> None:
        """Delete the session's rows (one committed transaction).

        Raises:
            sqlite3.Error: the write failed; RuntimeError: the store is closed.
        """
        with self._lock:
            self._check_open()
            self._conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def list_sessions(self) -> list[str]:
        """Ids of the sessions with at least one row, in the order they were first written."""
        with self._lock:
            self._check_open()
            rows = self._conn.execute(
                "SELECT session_id FROM messages GROUP BY session_id ORDER BY MIN(rowid)"
            ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection (idempotent); the store is unusable afterwards."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> SqliteSessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the session store {self.path!r} is closed")
