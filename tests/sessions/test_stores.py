"""SQLite specifics of the session store (DESIGN §10): rows committed one per append in WAL
mode, a reopened file, many threads, rows that do not decode, bad files. The contract every
store keeps is tests/sessions/test_store_contract.py."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.sessions.test_store_contract import every_message_type
from yiemagent import Agent, ConfigError, SessionCorruptError, TextContent, UserMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import SqliteSessionStore

# ── SQLite specifics ────────────────────────────────────────────────────────


def test_sqlite_one_committed_row_per_append_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteSessionStore(path)
    reader = sqlite3.connect(path)  # another connection sees each row as soon as append returns
    try:
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for n, message in enumerate(every_message_type(), start=1):
            store.append("s", message)
            rows = reader.execute(
                "SELECT seq, role, timestamp FROM messages WHERE session_id='s' ORDER BY seq"
            ).fetchall()
            assert len(rows) == n
            assert rows[-1] == (n, message.role, message.timestamp)  # type: ignore[attr-defined]
    finally:
        reader.close()
        store.close()


def test_sqlite_reopened_file_holds_the_sessions(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionStore(path) as store:
        store.append("x", UserMessage("persisted"))
    with SqliteSessionStore(path) as again:
        [message] = again.load("x")
        assert isinstance(message, UserMessage) and message.content == [TextContent("persisted")]


def test_sqlite_appends_from_many_threads_keep_every_message(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:

        def write(k: int) -> None:
            for i in range(20):
                store.append(f"s{k % 2}", UserMessage(f"{k}-{i}"))

        threads = [threading.Thread(target=write, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        texts = [m.content[0].text for m in store.load("s0")]  # type: ignore[union-attr]
        assert len(texts) == 60 and len(set(texts)) == 60
        for k in (0, 2, 4):  # each thread's messages keep their order
            mine = [t for t in texts if t.startswith(f"{k}-")]
            assert mine == [f"{k}-{i}" for i in range(20)]


def test_sqlite_row_that_does_not_decode_is_refused_by_seq(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionStore(path) as store:
        store.append("s", UserMessage("one"))
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO messages VALUES ('s', 2, 'alien', '{\"role\": \"alien\"}', 0)"
            )
        store.append("s", UserMessage("three"))
        with pytest.raises(SessionCorruptError, match=r"seq=2: not a message"):
            store.load("s")


async def test_sqlite_bytes_that_are_not_utf8_do_not_lock_a_session_out(tmp_path: Path) -> None:
    """SQLite keeps any bytes written as TEXT, and sqlite3 raised on each that is not UTF-8:
    one such row (or held-calls record, or session id) made every read of the session
    fail, and with it every Agent built on it and every listing of the sessions. A row
    whose bytes, so read, are no longer JSON is named (its seq), as any bad row."""
    path = tmp_path / "s.db"
    mangled = '{"role":"user","timestamp":1,"content":[{"type":"text","text":"t\xffo"}]}'
    with SqliteSessionStore(path) as store:
        store.append("s", UserMessage("one"))
        with sqlite3.connect(path) as conn:
            for row in [
                f"('s', 2, 'user', CAST(X'{mangled.encode('latin-1').hex()}' AS TEXT), 0)",
                "('t', 1, 'user', CAST(X'7B22726F6C65223AFF7D' AS TEXT), 0)",  # {"role":\xff}
                "(CAST(X'61FF' AS TEXT), 1, 'user', '{}', 0)",  # a session id
            ]:
                conn.execute(f"INSERT INTO messages VALUES {row}")
            conn.execute(
                "INSERT INTO session_state VALUES ('s', 'held_tool_calls', CAST(X'FFFE' AS TEXT))"
            )
        fm = FauxModel(["fine"])
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s")
        assert [m.content[0].text for m in agent.state.messages] == ["one", "t\ufffdo"]  # type: ignore[union-attr]
        assert (await agent.prompt("again")).content[0].text == "fine"  # type: ignore[union-attr]
        await agent.close()
        assert store.list_sessions() == ["s", "t", "a\ufffd"]
        with pytest.raises(SessionCorruptError, match=r"'t' .*seq=1: not valid JSON"):
            store.load("t")


def test_sqlite_bad_file_and_newer_schema_are_config_errors(tmp_path: Path) -> None:
    not_a_db = tmp_path / "junk.db"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="session database"):
        SqliteSessionStore(not_a_db)
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version=99")
    with pytest.raises(ConfigError, match="newer yiemagent"):
        SqliteSessionStore(newer)
    with pytest.raises(ConfigError, match="cannot open"):
        SqliteSessionStore(tmp_path / "missing-dir" / "s.db")
