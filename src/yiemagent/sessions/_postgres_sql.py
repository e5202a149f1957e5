"""The SQL of `PostgresSessionStore`, with the schema name quoted in (psycopg's `sql`
composition), and the advisory-lock keys it uses.

Two advisory-lock key spaces that PostgreSQL keeps apart: one `bigint` per session (held for
a write transaction) and a pair of `int4` per lease token (held by the lease holder's
connection for as long as it holds the lease).
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["Statements", "token_key"]


def token_key(token: str) -> tuple[int, int]:
    """The two signed 32-bit keys of the advisory lock that stands for a lease token."""
    digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
    return (
        int.from_bytes(digest[:4], "big", signed=True),
        int.from_bytes(digest[4:], "big", signed=True),
    )


class Statements:
    """Every statement the store runs, for one schema."""

    def __init__(self, schema: str) -> None:
        from psycopg import sql

        s = sql.Identifier(schema)

        def q(text: str) -> Any:
            return sql.SQL(text).format(s=s)

        self.setup_lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtextextended({}, 0))").format(
            sql.Literal(f"yiemagent schema setup {schema}")
        )
        self.create = [
            q("CREATE SCHEMA IF NOT EXISTS {s}"),
            q("CREATE TABLE IF NOT EXISTS {s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
            q(
                "CREATE TABLE IF NOT EXISTS {s}.messages ("
                " id BIGSERIAL NOT NULL,"
                " session_id TEXT NOT NULL,"
                " seq BIGINT NOT NULL,"
                " role TEXT NOT NULL,"
                " data TEXT NOT NULL,"
                ' "timestamp" BIGINT NOT NULL,'
                " PRIMARY KEY (session_id, seq))"
            ),
            q(
                "CREATE TABLE IF NOT EXISTS {s}.session_state ("
                " session_id TEXT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL,"
                " PRIMARY KEY (session_id, key))"
            ),
            q(
                "CREATE TABLE IF NOT EXISTS {s}.leases ("
                " session_id TEXT PRIMARY KEY, token TEXT NOT NULL, host TEXT NOT NULL,"
                " pid INTEGER NOT NULL, started TEXT NOT NULL, acquired_ms BIGINT NOT NULL)"
            ),
        ]
        self.get_version = q("SELECT value FROM {s}.meta WHERE key = 'schema_version'")
        self.set_version = q(
            "INSERT INTO {s}.meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        )
        self.load = q("SELECT seq, data FROM {s}.messages WHERE session_id = %s ORDER BY seq")
        # run after lock_session in the same transaction: the next seq cannot be taken twice
        self.append = q(
            'INSERT INTO {s}.messages (session_id, seq, role, data, "timestamp") '
            "SELECT %(sid)s, COALESCE(MAX(seq), 0) + 1, %(role)s, %(data)s, %(ts)s "
            "FROM {s}.messages WHERE session_id = %(sid)s"
        )
        self.insert_message = q(
            'INSERT INTO {s}.messages (session_id, seq, role, data, "timestamp") '
            "VALUES (%s, %s, %s, %s, %s)"
        )
        self.delete_messages = q("DELETE FROM {s}.messages WHERE session_id = %s")
        self.list_sessions = q(
            "SELECT session_id FROM {s}.messages GROUP BY session_id ORDER BY MIN(id)"
        )
        self.load_state = q(
            "SELECT value FROM {s}.session_state WHERE session_id = %s AND key = %s"
        )
        self.save_state = q(
            "INSERT INTO {s}.session_state (session_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id, key) DO UPDATE SET value = EXCLUDED.value"
        )
        self.delete_state = q("DELETE FROM {s}.session_state WHERE session_id = %s")
        self.delete_state_key = q(
            "DELETE FROM {s}.session_state WHERE session_id = %s AND key = %s"
        )
        self.other_lease = q(
            "SELECT token, host, pid, started FROM {s}.leases "
            "WHERE session_id = %s AND token IS DISTINCT FROM %s::text"
        )
        self.own_lease = q("SELECT 1 FROM {s}.leases WHERE session_id = %s AND token = %s")
        self.put_lease = q(
            "INSERT INTO {s}.leases (session_id, token, host, pid, started, acquired_ms) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
            "token = EXCLUDED.token, host = EXCLUDED.host, pid = EXCLUDED.pid, "
            "started = EXCLUDED.started, acquired_ms = EXCLUDED.acquired_ms"
        )
        self.delete_lease = q("DELETE FROM {s}.leases WHERE session_id = %s AND token = %s")
        self.delete_leases = q("DELETE FROM {s}.leases WHERE session_id = %s")
        self.lock_session = sql.SQL("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))")
        self.lock_token = sql.SQL("SELECT pg_advisory_lock(%s, %s)")
        self.unlock_token = sql.SQL("SELECT pg_advisory_unlock(%s, %s)")
        self.probe_token = sql.SQL("SELECT pg_try_advisory_xact_lock(%s, %s)")
