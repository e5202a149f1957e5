"""Persisted sessions (DESIGN §2): an `Agent(session_store=..., session_id=...)`
writes every message of its transcript to the store as it enters the transcript and, built
again on the same store and id, resumes from it (also after a crash).

`SessionStore` is the contract; `SqliteSessionStore(path)` keeps sessions in one SQLite file,
one row per message; `PostgresSessionStore(dsn)` keeps them in PostgreSQL, shared by several
processes or hosts (extra `postgres`); `InMemorySessionStore()` keeps them in memory (tests,
ephemeral use). `check_session_id` is the one check of a session id (non-empty, no control
characters) that every entry point applies. For a store of one's own: `SessionStateStore`,
the protocol of a store that also keeps a session's state (the calls held for approval), and
`encode_message` / `decode_message`, the JSON codec of one stored message, which persists
the message types in `PERSISTED_TYPES`. What the stores raise (also in `yiemagent.errors`):
`SessionBusyError` (another writer holds the session), `SessionCorruptError` (a stored
transcript that cannot be read back) and `SessionStoreClosedError` (a call on a closed
store). See `docs/sessions.md`.

The stores' modules (`_store`, `_sqlite`, `_postgres`) are private. `lease` (who holds a
session and the release of a collected agent's lease) stays public: the `Agent`'s session
log in `yiemagent.agent` takes and settles its releases through it.
"""

from yiemagent.errors import SessionBusyError, SessionCorruptError, SessionStoreClosedError
from yiemagent.sessions._postgres import PostgresSessionStore as PostgresSessionStore
from yiemagent.sessions._sqlite import SqliteSessionStore as SqliteSessionStore
from yiemagent.sessions._store import (
    PERSISTED_TYPES as PERSISTED_TYPES,
    InMemorySessionStore as InMemorySessionStore,
    SessionStateStore as SessionStateStore,
    SessionStore as SessionStore,
    check_session_id as check_session_id,
    decode_message as decode_message,
    encode_message as encode_message,
)

__all__ = [
    "PERSISTED_TYPES",
    "InMemorySessionStore",
    "PostgresSessionStore",
    "SessionBusyError",
    "SessionCorruptError",
    "SessionStateStore",
    "SessionStore",
    "SessionStoreClosedError",
    "SqliteSessionStore",
    "check_session_id",
    "decode_message",
    "encode_message",
]
