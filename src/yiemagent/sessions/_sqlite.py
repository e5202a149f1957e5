"""`SqliteSessionStore`: transcripts in one SQLite file, one row per message, old or new
after a crash, never half (DESIGN §8).

Table `messages(session_id, seq, role, data, timestamp)`: `seq` counts from 1 within a
session, `data` is the message's JSON (`yiemagent.types.message_to_dict`), `timestamp` the
message's own timestamp (ms since the epoch, UTC). Table `session_state(session_id, key,
value)` keeps small named values beside a session (the tool calls held for approval); `clear`
deletes both in one transaction. The database runs in WAL mode and every
`append` is one statement in its own committed transaction, so each message is on disk when
`append` returns and survives a crash of the process (with `synchronous="FULL"` also a power
loss, at the cost of an fsync per message). `replace` (a rewrite of the whole transcript) is
one transaction: after a crash at any moment the session is the old transcript or the new.

Table `leases(session_id, token, host, pid, started, acquired_ms)`: the session's one writer
(`yiemagent.sessions.lease`); `acquired_ms` is when it was taken or last renewed (the holder
renews it every `lease.LEASE_TTL_S` / 4 seconds, so one of another host that has not been
renewed for `LEASE_TTL_S` is a dead holder's). Every write checks, in the same statement or
transaction, that no other live holder has the session.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Literal

from yiemagent.errors import ConfigError, SessionBusyError, SessionStoreClosedError
from yiemagent.sessions import lease
from yiemagent.sessions._store import decode_rows, message_row
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
_STATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS session_state (
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
)
"""
_LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started TEXT NOT NULL,
    acquired_ms INTEGER NOT NULL
)
"""
# One statement: the lease is checked, the next seq read and the row written in the same
# (implicit) transaction; no row is written when another holder has the session, or when
# the writer's own lease (?5) is gone.
_APPEND = """
INSERT INTO messages (session_id, seq, role, data, timestamp)
SELECT ?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?1), ?2, ?3, ?4
WHERE NOT EXISTS (SELECT 1 FROM leases WHERE session_id = ?1 AND token IS NOT ?5)
AND (?5 IS NULL OR EXISTS (SELECT 1 FROM leases WHERE session_id = ?1 AND token = ?5))
"""
_OTHER_LEASE = (
    "SELECT token, host, pid, started, acquired_ms FROM leases "
    "WHERE session_id = ? AND token IS NOT ?"
)


class SqliteSessionStore:
    """A `SessionStore` in an SQLite file (stdlib `sqlite3`), durable message by message.

    One connection per store, opened with `check_same_thread=False` and guarded by a lock,
    so the agent's event loop thread, tool worker threads and the caller may all use it; each
    call is one short statement or transaction. Several stores (or processes) may open the
    same file (WAL readers do not block the writer; a busy writer is waited for up to
    `timeout_s`); each session has one writer at a time (`acquire`; an `Agent` takes it).

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
        self._lock = threading.Lock()  # a collected agent only queues its release
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the session database {self.path!r}: {exc}") from exc
        try:
            self._setup_when_free(synchronous, timeout_s)
        except (sqlite3.Error, ConfigError) as exc:
            self._conn.close()
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{self.path!r} cannot be used as a session database: {exc}") from exc
        self._closed = False
        self._held: dict[str, lease.LeaseHolder] = {}

    def _setup_when_free(self, synchronous: str, timeout_s: float) -> None:
        """`_setup`, tried again while another connection holds the file, for up to
        `timeout_s` seconds. SQLite answers "database is locked" at once, without waiting
        for the busy timeout, when processes that open a new file together switch it to
        WAL and create its tables at the same moment; every step is idempotent, so the
        loser simply does it again."""
        deadline = time.monotonic() + timeout_s
        pause = 0.005
        while True:
            try:
                self._setup(synchronous)
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

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
        conn.execute(_LEASES)
        conn.execute(_STATE_SCHEMA)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # ── SessionStore ───────────────────────────────────────────────────────

    def load(self, session_id: str) -> list[AgentMessage]:
        """The session's messages in append order (`[]` for an unknown id).

        Raises:
            SessionCorruptError: a row does not load (edited into bad JSON, say); it names
                the file, the session and each such row's `seq`. Nothing is skipped.
            sqlite3.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            self._check_open()
            rows = self._conn.execute(
                "SELECT seq, CAST(data AS BLOB) FROM messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return decode_rows(((seq, _text(data)) for seq, data in rows), session_id, repr(self))

    def append(self, session_id: str, message: AgentMessage) -> None:
        """Write one message as the session's next row, committed before returning. A message
        that cannot be encoded (an application's own type) is skipped with a warning.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing written).
            sqlite3.Error: the write failed (disk full, locked longer than `timeout_s`, ...).
            SessionStoreClosedError: the store is closed.
        """
        row = message_row(message)
        if row is None:
            return
        with self._lock:
            self._check_open()
            for _ in range(2):  # a second try after a stale lease was removed
                token = self._token(session_id)
                cursor = self._conn.execute(_APPEND, (session_id, *row, token))
                if cursor.rowcount == 1:
                    return
                self._fence(session_id, token)
            raise SessionBusyError(
                f"session {session_id!r} was taken by another writer while this one wrote "
                "(nothing written); one writer per session: use another session_id, or "
                "open it again once that writer is done",
                session_id=session_id,
            )

    def replace(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's whole transcript, in one transaction: after a crash at
        any moment the session holds the old transcript or the new one, never a mix or a
        part. Messages that cannot be encoded are skipped (with a warning), as in `append`.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            sqlite3.Error: the write failed (nothing changed).
            SessionStoreClosedError: the store is closed.
        """
        rows = [row for row in map(message_row, messages) if row is not None]
        with self._lock:
            self._check_open()
            with self._transaction():
                self._fence(session_id, self._token(session_id))
                self._conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                self._conn.executemany(
                    "INSERT INTO messages (session_id, seq, role, data, timestamp) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(session_id, seq, *row) for seq, row in enumerate(rows, 1)],
                )

    def clear(self, session_id: str) -> None:
        """Delete the session's rows and saved values (one committed transaction).

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            sqlite3.Error: the write failed.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            self._check_open()
            with self._transaction():
                self._fence(session_id, self._token(session_id))
                self._conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                self._conn.execute("DELETE FROM session_state WHERE session_id = ?", (session_id,))

    # ── the writer lease (yiemagent.sessions.lease) ────────────────────────

    def acquire(self, session_id: str) -> str:
        """Become the session's one writer; returns the lease token (for `release`).

        A lease left by a holder that is gone (a killed process, a collected agent) is taken
        over. Acquiring a session this store already holds raises too: one writer is one
        `Agent`.

        Raises:
            SessionBusyError: a live holder has the session; the text names it.
            sqlite3.Error: the database failed.
            SessionStoreClosedError: the store is closed.
        """
        lease.settle_releases()  # a collected agent's queued release frees its session now
        holder = lease.new_holder()
        try:
            with self._lock:
                self._check_open()
                with self._transaction():
                    self._fence(session_id, None)
                    self._conn.execute(
                        "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            session_id,
                            holder.token,
                            holder.host,
                            holder.pid,
                            holder.started,
                            now_ms(),
                        ),
                    )
                self._held[session_id] = holder
        except BaseException:
            lease.forget(holder.token)
            raise
        lease.renew_while_held(self)
        return holder.token

    def renew_leases(self) -> None:
        """Mark the leases this store holds as renewed now (the lease thread calls it); a
        lease another writer took over in the meantime stays theirs."""
        with self._lock:
            if self._closed:
                return
            now = now_ms()
            for session_id, holder in list(self._held.items()):
                self._conn.execute(
                    "UPDATE leases SET acquired_ms = ? WHERE session_id = ? AND token = ?",
                    (now, session_id, holder.token),
                )

    def release(self, session_id: str, token: str) -> None:
        """Give the lease back (no-op unless `token` holds it, or the store is closed)."""
        with self._lock:
            lease.drop(self._held, session_id, token)
            if self._closed:
                return
            self._conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, token)
            )

    def lease_holder(self, session_id: str) -> lease.LeaseHolder | None:
        """Who holds the session's writer lease (alive or not), or None.

        Raises:
            sqlite3.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            self._check_open()
            row = self._conn.execute(_OTHER_LEASE, (session_id, None)).fetchone()
        return None if row is None else lease.LeaseHolder(*row)

    def force_release(self, session_id: str) -> bool:
        """Remove the session's lease whoever holds it: for a holder on another host that is
        known to be gone (this store cannot check a pid there). The old holder's next write
        is refused. Returns whether there was a lease to remove."""
        with self._lock:
            self._check_open()
            cursor = self._conn.execute("DELETE FROM leases WHERE session_id = ?", (session_id,))
            return cursor.rowcount > 0

    def _token(self, session_id: str) -> str | None:
        held = self._held.get(session_id)
        return None if held is None else held.token

    def _fence(self, session_id: str, token: str | None) -> None:
        """Raise `SessionBusyError` if a live holder other than `token` has the session, or
        if the lease of `token` (when given) is gone: taken over while this holder looked
        dead, or force-released. Remove a dead holder's lease. Called inside the write's
        transaction or lock."""
        row = self._conn.execute(_OTHER_LEASE, (session_id, token)).fetchone()
        if row is not None:
            other = lease.LeaseHolder(*row)
            if lease.holder_is_alive(other):
                raise lease.busy_error(session_id, other)
            self._conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, other.token)
            )
        if (
            token is not None
            and not self._conn.execute(
                "SELECT 1 FROM leases WHERE session_id = ? AND token = ?", (session_id, token)
            ).fetchone()
        ):
            raise lease.taken_over_error(session_id)

    def load_state(self, session_id: str, key: str) -> str | None:
        """The value saved under `key` for the session, or `None` (`SessionStateStore`).

        Raises:
            sqlite3.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            self._check_open()
            row = self._conn.execute(
                "SELECT CAST(value AS BLOB) FROM session_state WHERE session_id = ? AND key = ?",
                (session_id, key),
            ).fetchone()
        return None if row is None else _text(row[0])

    def save_state(self, session_id: str, key: str, value: str | None) -> None:
        """Save `value` under `key` (`None` deletes it), committed before returning.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            sqlite3.Error: the write failed.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            self._check_open()
            self._fence(session_id, self._token(session_id))
            if value is None:
                self._conn.execute(
                    "DELETE FROM session_state WHERE session_id = ? AND key = ?", (session_id, key)
                )
            else:
                self._conn.execute(
                    "INSERT OR REPLACE INTO session_state (session_id, key, value) "
                    "VALUES (?, ?, ?)",
                    (session_id, key, value),
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def list_sessions(self) -> list[str]:
        """Ids of the sessions with at least one row, in the order they were first written."""
        with self._lock:
            self._check_open()
            rows = self._conn.execute(
                "SELECT CAST(session_id AS BLOB) FROM messages GROUP BY session_id "
                "ORDER BY MIN(rowid)"
            ).fetchall()
        return [_text(row[0]) for row in rows]

    def close(self) -> None:
        """Release the leases this store holds and close the connection (idempotent); the
        store is unusable afterwards."""
        with self._lock:
            if self._closed:
                return
            for session_id, holder in list(self._held.items()):
                lease.forget(holder.token)
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute(
                        "DELETE FROM leases WHERE session_id = ? AND token = ?",
                        (session_id, holder.token),
                    )
            self._held.clear()
            self._closed = True
            self._conn.close()

    def __enter__(self) -> SqliteSessionStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise SessionStoreClosedError(
                f"the session store {self.path!r} is closed; open the file again with "
                f"SqliteSessionStore({self.path!r})"
            )


def _text(value: bytes) -> str:
    """A stored text read as bytes (`CAST(... AS BLOB)`): SQLite keeps whatever bytes were
    written, and sqlite3 raises on a TEXT value that is not UTF-8, which would fail every
    read of the session; here such bytes become replacement characters (a message that then
    does not parse is refused by name, as any row that does not decode)."""
    return value.decode("utf-8", "replace")
