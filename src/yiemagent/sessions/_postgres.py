"""`PostgresSessionStore`: transcripts in PostgreSQL, shared by several processes or hosts
(DESIGN §18, scale-out). The same contract as `SqliteSessionStore` (`yiemagent.sessions._store`).

Tables, in a schema of their own (default `yiemagent`): `messages(id, session_id, seq, role,
data, timestamp)` with one row per message (`data` the message's JSON text, exactly as
SQLite keeps it), `session_state(session_id, key, value)` for the tool calls held for
approval (`value` as UTF-8 bytes, so any string fits, NUL characters included; a session id
or key cannot hold NUL in PostgreSQL), `leases(session_id, token, host, pid, started,
acquired_ms)` for each session's one writer, and `meta(key, value)` with the schema
version.

Every write is one transaction that first takes a transaction-scoped advisory lock on the
session, so writes of one session are serialised across connections: the lease check, the
next `seq` and the row are decided together, and a crash at any moment (of the client or the
server) leaves the transaction committed or not at all. `append` commits before it returns.

Leases: the holder's own connection holds a session-level advisory lock named after the
lease token for as long as it holds the lease. PostgreSQL drops that lock when the
connection ends, so a holder in another process, on this host or another, is alive exactly
while its connection is (a SIGKILLed replica's connection closes at once; one cut off by the
network ends when TCP keepalive gives up). Holders in this process are judged as every store
judges them (`yiemagent.sessions.lease`). A connection pooler must therefore keep sessions
(PgBouncer's session mode), not transactions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from yiemagent.errors import ConfigError, SessionBusyError, SessionStoreClosedError, install_hint
from yiemagent.sessions import lease
from yiemagent.sessions._postgres_sql import Statements, token_key
from yiemagent.sessions._store import decode_rows, message_row
from yiemagent.types import AgentMessage, now_ms

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresSessionStore"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_T = TypeVar("_T")


class PostgresSessionStore:
    """A `SessionStore` (and `SessionStateStore`) in a PostgreSQL database, via psycopg 3.

    One connection per store, guarded by a lock, so the agent's event loop thread, tool
    threads and the caller may all use it; each call is a short statement or transaction.
    Any number of stores, processes and hosts may share the database; each session has one
    writer at a time (`acquire`; an `Agent` takes it). The tables are created on first use.
    A connection that broke (the server restarted, a proxy dropped it while idle) is opened
    again by the call that meets the break, which then runs once more: a read, or a write
    whose transaction the break ended before its COMMIT was sent. Only a break during a
    COMMIT is raised, since the write may have been made (an `Agent` checks before it
    writes that message again).

    Args:
        dsn: a libpq connection string or URI, e.g. `"postgresql://user:pw@db:5432/app"`.
        schema: the PostgreSQL schema that holds the tables (created if missing).
        connect_timeout_s: how long to wait for the server when connecting, in seconds.
        lock_timeout_s: how long a statement waits for a lock another connection holds (a
            `LOCK TABLE`, a long migration), in seconds, as SQLite's `timeout_s`; then it
            fails with `psycopg.errors.LockNotAvailable`. The agent calls the store on its
            event loop, so an unbounded wait would stop every session of a server.

    Raises:
        ConfigError: psycopg is not installed, the server cannot be reached or refuses the
            login, `lock_timeout_s` is not positive, or the tables were written by a newer
            yiemagent (the reason is given).
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "yiemagent",
        connect_timeout_s: float = 10.0,
        lock_timeout_s: float = 5.0,
    ):
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigError(
                f"PostgresSessionStore needs psycopg 3: {install_hint('postgres')}"
            ) from exc
        self._psycopg = psycopg
        self.dsn = dsn
        """The connection string, as given (its password is hidden in `repr`)."""
        self.schema = schema
        """The schema holding the tables."""
        self._connect_timeout_s = connect_timeout_s
        if not lock_timeout_s > 0:
            raise ConfigError(f"lock_timeout_s must be a positive number, not {lock_timeout_s}")
        self._lock_timeout_ms = max(1, round(lock_timeout_s * 1000))
        self._sql = Statements(schema)
        self._lock = threading.Lock()  # a collected agent only queues its release
        self._held: dict[str, lease.LeaseHolder] = {}
        self._locked_tokens: set[str] = set()  # token locks held by this store's connection
        self._closed = False
        self._conn = self._connect()
        try:
            self._setup()
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self._connect_timeout_s))
            )
        except psycopg.Error as exc:
            said = _scrubbed(str(exc), self.dsn)  # a parse error quotes the whole dsn
            raise ConfigError(f"cannot connect to the session database {self!r}: {said}") from exc
        try:  # set here, not in `options`, which would replace the dsn's own
            conn.execute(
                "SELECT set_config('lock_timeout', %s, false)", (f"{self._lock_timeout_ms}ms",)
            )
        except psycopg.Error as exc:
            conn.close()
            raise ConfigError(f"cannot set lock_timeout on {self!r}: {exc}") from exc
        return conn

    def _setup(self) -> None:
        sql, conn = self._sql, self._conn
        try:
            with conn.transaction():
                conn.execute(sql.setup_lock)  # concurrent CREATE IF NOT EXISTS can clash
                for statement in sql.create:
                    conn.execute(statement)
                row = conn.execute(sql.get_version).fetchone()
                version = int(row[0]) if row else 0
                if version > SCHEMA_VERSION:
                    raise ConfigError(
                        f"the tables in schema {self.schema!r} of {self!r} were written by a "
                        f"newer yiemagent (schema {version}, this one reads {SCHEMA_VERSION}); "
                        "upgrade yiemagent or use another schema"
                    )
                if version < SCHEMA_VERSION:
                    conn.execute(sql.set_version, (str(SCHEMA_VERSION),))
        except self._psycopg.Error as exc:
            raise ConfigError(f"{self!r} cannot be used as a session database: {exc}") from exc

    # ── SessionStore ───────────────────────────────────────────────────────

    def load(self, session_id: str) -> list[AgentMessage]:
        """The session's messages in append order (`[]` for an unknown id).

        Raises:
            SessionCorruptError: a row does not load (edited into bad JSON, say); it names
                the database, the session and each such row's `seq`. Nothing is skipped.
            psycopg.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            rows = self._again(lambda conn: conn.execute(self._sql.load, (session_id,)).fetchall())
        return decode_rows(((seq, data) for seq, data in rows), session_id, repr(self))

    def append(self, session_id: str, message: AgentMessage) -> None:
        """Write one message as the session's next row, committed before returning. A message
        that cannot be encoded (an application's own type) is skipped with a warning.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing written).
            psycopg.Error: the write failed.
            SessionStoreClosedError: the store is closed.
        """
        row = message_row(message)
        if row is None:
            return
        role, data, timestamp = row
        values = {"sid": session_id, "role": role, "data": data, "ts": timestamp}

        def write(conn: psycopg.Connection[Any]) -> None:
            conn.execute(self._sql.append, values)

        with self._lock:
            self._write(session_id, write, self._token(session_id))

    def replace(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Make `messages` the session's whole transcript, in one transaction: after a crash at
        any moment the session holds the old transcript or the new one, never a mix or a
        part. Messages that cannot be encoded are skipped (with a warning), as in `append`.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            psycopg.Error: the write failed (nothing changed).
            SessionStoreClosedError: the store is closed.
        """
        rows = [row for row in map(message_row, messages) if row is not None]
        numbered = [(session_id, seq, *row) for seq, row in enumerate(rows, 1)]

        def write(conn: psycopg.Connection[Any]) -> None:
            conn.execute(self._sql.delete_messages, (session_id,))
            with conn.cursor() as cursor:
                cursor.executemany(self._sql.insert_message, numbered)

        with self._lock:
            self._write(session_id, write, self._token(session_id))

    def clear(self, session_id: str) -> None:
        """Delete the session's rows and saved values (one committed transaction).

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            psycopg.Error: the write failed.
            SessionStoreClosedError: the store is closed.
        """

        def write(conn: psycopg.Connection[Any]) -> None:
            conn.execute(self._sql.delete_messages, (session_id,))
            conn.execute(self._sql.delete_state, (session_id,))

        with self._lock:
            self._write(session_id, write, self._token(session_id))

    def list_sessions(self) -> list[str]:
        """Ids of the sessions with at least one row, in the order they were first written."""
        with self._lock:
            rows = self._again(lambda conn: conn.execute(self._sql.list_sessions).fetchall())
        return [str(row[0]) for row in rows]

    # ── SessionStateStore ──────────────────────────────────────────────────

    def load_state(self, session_id: str, key: str) -> str | None:
        """The value saved under `key` for the session, or `None`. Stored bytes that are not
        UTF-8 (written by something else) are read with replacement characters, logged,
        so the session still opens (an unreadable record of held calls is ignored).

        Raises:
            psycopg.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            row = self._again(
                lambda conn: conn.execute(self._sql.load_state, (session_id, key)).fetchone()
            )
        if row is None:
            return None
        raw = bytes(row[0])
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # not written by save_state: read what can be read
            logger.warning(
                "session store: the saved %r of session %r is not UTF-8 text (%d bytes); "
                "read with replacement characters",
                key,
                session_id,
                len(raw),
            )
            return raw.decode("utf-8", "replace")

    def save_state(self, session_id: str, key: str, value: str | None) -> None:
        """Save `value` under `key` (`None` deletes it), committed before returning.

        Raises:
            SessionBusyError: another live holder has the session's lease (nothing changed).
            psycopg.Error: the write failed.
            SessionStoreClosedError: the store is closed.
        """

        def write(conn: psycopg.Connection[Any]) -> None:
            if value is None:
                conn.execute(self._sql.delete_state_key, (session_id, key))
            else:
                # bytes: a PostgreSQL text value cannot hold NUL characters; a value can
                conn.execute(self._sql.save_state, (session_id, key, value.encode("utf-8")))

        with self._lock:
            self._write(session_id, write, self._token(session_id))

    # ── the writer lease (yiemagent.sessions.lease) ────────────────────────

    def acquire(self, session_id: str) -> str:
        """Become the session's one writer; returns the lease token (for `release`).

        A lease whose holder is gone (its process killed, its connection closed, its agent
        collected) is taken over. Acquiring a session this store already holds raises too:
        one writer is one `Agent`.

        Raises:
            SessionBusyError: a live holder has the session; the text names it.
            psycopg.Error: the database failed.
            SessionStoreClosedError: the store is closed.
        """
        lease.settle_releases()  # a collected agent's queued release frees its session now
        holder = lease.new_holder()
        values = (session_id, holder.token, holder.host, holder.pid, holder.started, now_ms())

        def write(conn: psycopg.Connection[Any]) -> None:
            if holder.token not in self._locked_tokens:  # a reconnect takes it again itself
                conn.execute(self._sql.lock_token, token_key(holder.token))
                self._locked_tokens.add(holder.token)
            conn.execute(self._sql.put_lease, values)

        try:
            with self._lock:
                try:
                    self._write(session_id, write, None)
                except BaseException:
                    self._unlock_token(holder.token)  # session-level: a rollback keeps it
                    raise
                self._held[session_id] = holder
        except BaseException:
            lease.forget(holder.token)
            raise
        return holder.token

    def release(self, session_id: str, token: str) -> None:
        """Give the lease back (no-op unless `token` holds it, or the store is closed)."""
        with self._lock:
            lease.drop(self._held, session_id, token)
            if self._closed:
                return
            with contextlib.suppress(self._psycopg.Error):
                self._open().execute(self._sql.delete_lease, (session_id, token))
            self._unlock_token(token)

    def lease_holder(self, session_id: str) -> lease.LeaseHolder | None:
        """Who holds the session's writer lease (alive or not), or None.

        Raises:
            psycopg.Error: the database cannot be read.
            SessionStoreClosedError: the store is closed.
        """
        with self._lock:
            row = self._open().execute(self._sql.other_lease, (session_id, None)).fetchone()
        if row is None:
            return None
        return lease.LeaseHolder(str(row[0]), str(row[1]), int(row[2]), str(row[3]))

    def force_release(self, session_id: str) -> bool:
        """Remove the session's lease whoever holds it, for a holder known to be gone whose
        connection the server still keeps open. The old holder's next write is refused.
        Returns whether there was a lease to remove."""
        with self._lock:
            return self._open().execute(self._sql.delete_leases, (session_id,)).rowcount > 0

    def close(self) -> None:
        """Release the leases this store holds and close the connection (idempotent); the
        store is unusable afterwards."""
        with self._lock:
            if self._closed:
                return
            for session_id, holder in list(self._held.items()):
                lease.forget(holder.token)
                with contextlib.suppress(self._psycopg.Error):
                    self._conn.execute(self._sql.delete_lease, (session_id, holder.token))
            self._held.clear()
            self._locked_tokens.clear()  # the server drops them with the connection
            self._closed = True
            self._conn.close()

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresSessionStore({_without_password(self.dsn)!r})"

    # ── internals (call with self._lock held) ──────────────────────────────

    def _open(self) -> psycopg.Connection[Any]:
        """The connection, opened again if it broke (its token locks taken again)."""
        if self._closed:
            raise SessionStoreClosedError(
                f"the session store {self!r} is closed; open a new PostgresSessionStore on the "
                "same database"
            )
        if self._conn.closed:
            self._conn = self._connect()
            for token in self._locked_tokens:
                self._conn.execute(self._sql.lock_token, token_key(token))
        return self._conn

    def _token(self, session_id: str) -> str | None:
        held = self._held.get(session_id)
        return None if held is None else held.token

    def _again(self, call: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """`call(connection)`, made once more on a new connection when the first one
        turns out to be broken (`_open` reconnects)."""
        conn = self._open()
        try:
            return call(conn)
        except self._psycopg.OperationalError:
            if not conn.closed:
                raise
        return call(self._open())

    def _write(
        self,
        session_id: str,
        body: Callable[[psycopg.Connection[Any]], object],
        token: str | None,
    ) -> None:
        """`body(connection)` in one transaction that holds the session's write lock and
        checks its lease (`token`: the holder allowed besides dead ones). When the
        connection breaks before the COMMIT is sent, the transaction is gone and is made
        again on a new connection, once; a break during the COMMIT raises."""
        for attempt in (1, 2):
            conn = self._open()
            committing = False
            try:
                with self._transaction(conn, session_id, token):
                    body(conn)
                    committing = True  # the block's end sends the COMMIT
                return
            except self._psycopg.OperationalError:
                if committing or attempt == 2 or not conn.closed:
                    raise

    @contextlib.contextmanager
    def _transaction(
        self, conn: psycopg.Connection[Any], session_id: str, token: str | None
    ) -> Iterator[None]:
        """A transaction holding the session's write lock, after checking that no live holder
        other than `token` has the session (a dead holder's lease is deleted) and that the
        lease of `token`, when given, is still there: a holder whose connection broke looks
        dead to the others, and one that took the session over meanwhile has written turns
        this holder's transcript lacks, so it never writes the session again."""
        with conn.transaction():
            conn.execute(self._sql.lock_session, (session_id,))
            row = conn.execute(self._sql.other_lease, (session_id, token)).fetchone()
            if row is not None:
                other = lease.LeaseHolder(str(row[0]), str(row[1]), int(row[2]), str(row[3]))
                if self._alive(conn, other):
                    raise _busy(session_id, other)
                conn.execute(self._sql.delete_lease, (session_id, other.token))
            if (
                token is not None
                and conn.execute(self._sql.own_lease, (session_id, token)).fetchone() is None
            ):
                raise lease.taken_over_error(session_id)
            yield

    def _alive(self, conn: psycopg.Connection[Any], holder: lease.LeaseHolder) -> bool:
        if holder.host == lease.this_host() and holder.pid == os.getpid():
            return lease.holder_is_alive(holder)  # this process: is its agent still there?
        row = conn.execute(self._sql.probe_token, token_key(holder.token)).fetchone()
        return not (row is not None and row[0])  # got its lock: the connection is gone

    def _unlock_token(self, token: str) -> None:
        if token in self._locked_tokens:
            self._locked_tokens.discard(token)
            if not self._conn.closed:
                with contextlib.suppress(self._psycopg.Error):
                    self._conn.execute(self._sql.unlock_token, token_key(token))


def _busy(session_id: str, holder: lease.LeaseHolder) -> SessionBusyError:
    if holder.host == lease.this_host():
        return lease.busy_error(session_id, holder)
    return SessionBusyError(
        f"session {session_id!r} is being written by {holder.describe()}, whose connection to "
        "the database is open; one writer per session: close that Agent or stop that process "
        "(or, if it is known to be gone, run `yiem sessions release ID` or call "
        "store.force_release(session_id)), or use another "
        "session_id",
        session_id=session_id,
        holder=holder.describe(),
    )


def _scrubbed(text: str, dsn: str) -> str:
    """`text` with every password `dsn` holds (`user:PASSWORD@` in a URI, `password=...`
    in either form) replaced by `***`, found without parsing `dsn`, which may not parse."""
    found = re.findall(r"://[^/@:]*:([^@/]+)@", dsn)
    found += re.findall(r"(?i)password\s*=\s*'?([^'&\s]+)", dsn)
    for secret in sorted(set(found), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _without_password(dsn: str) -> str:
    """`dsn` with any password replaced by `***` (for messages and `repr`)."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
    except Exception:
        return "<unparsable dsn>"
    if "password" in params:
        params["password"] = "***"
    return make_conninfo("", **params)
