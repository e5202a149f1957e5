"""The session stores on their own (DESIGN §10): every message type round-trips, sessions are
isolated, SQLite rows are committed one per append in WAL mode, custom message types are
skipped with a warning instead of raising."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from yiemagent import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ConfigError,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from yiemagent.sessions import (
    InMemorySessionStore,
    SessionStore,
    SqliteSessionStore,
)


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    s: SessionStore = (
        SqliteSessionStore(tmp_path / "s.db")
        if request.param == "sqlite"
        else InMemorySessionStore()
    )
    yield s
    s.close()


def every_message_type() -> list[AgentMessage]:
    usage = Usage(10, 5, 2, 1, 18, Cost(0.1, 0.2, 0.01, 0.02, 0.33))
    return [
        UserMessage([TextContent("héllo ✓"), ImageContent("aGVsbG8=", "image/png")], 1),
        AssistantMessage(
            [
                ThinkingContent("hmm", signature="sig", redacted=True),
                TextContent("calling"),
                ToolCall("c1", "get", {"a": [1, {"b": None}], "s": "x"}, partial_json='{"a":'),
            ],
            api="faux",
            provider="faux",
            model="m",
            usage=usage,
            stop_reason="toolUse",
            error_message=None,
            timestamp=2,
        ),
        ToolResultMessage(
            "c1",
            "get",
            [TextContent("ok"), ImageContent("AAAA", "image/jpeg")],
            details={"n": 1, "nested": {"list": [1.5, True]}},
            usage=usage,
            added_tool_names=["newTool"],
            is_error=True,
            timestamp=3,
        ),
        AssistantMessage(stop_reason="error", error_message="boom", timestamp=4),
        BashExecutionMessage(
            "ls", "a\nb", exit_code=1, cancelled=True, truncated=True, timestamp=5
        ),
        CompactionSummaryMessage("summary", tokens_before=1234, timestamp=6),
        BranchSummaryMessage("branch", from_id="x1", timestamp=7),
    ]


def test_round_trip_of_every_message_type(store: SessionStore) -> None:
    messages = every_message_type()
    for message in messages:
        store.append("s", message)
    loaded = store.load("s")
    assert loaded == messages
    assert all(a is not b for a, b in zip(loaded, messages, strict=True))  # new objects


def test_unknown_session_loads_empty_and_clear_is_a_no_op(store: SessionStore) -> None:
    assert store.load("nope") == []
    store.clear("nope")
    assert store.list_sessions() == []


def test_two_sessions_in_one_store_are_isolated(store: SessionStore) -> None:
    store.append("a", UserMessage("a1"))
    store.append("b", UserMessage("b1"))
    store.append("a", UserMessage("a2"))
    assert [m.content[0].text for m in store.load("a")] == ["a1", "a2"]  # type: ignore[union-attr]
    assert [m.content[0].text for m in store.load("b")] == ["b1"]  # type: ignore[union-attr]
    assert store.list_sessions() == ["a", "b"]
    store.clear("a")
    assert store.load("a") == []
    assert len(store.load("b")) == 1
    assert store.list_sessions() == ["b"]
    store.append("a", UserMessage("again"))  # a cleared session starts over
    assert len(store.load("a")) == 1


@dataclass
class Note:
    text: str
    role: str = "note"


def test_custom_message_type_is_skipped_with_a_warning(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
        store.append("s", UserMessage("kept"))
        store.append("s", Note("not persisted"))
    assert [m.role for m in store.load("s")] == ["user"]
    assert "Note" in caplog.text and "skipping" in caplog.text


def test_tool_result_with_unserialisable_details_keeps_its_pairing(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
        store.append("s", ToolResultMessage("c1", "t", [TextContent("r")], details=Opaque()))
    [loaded] = store.load("s")
    assert isinstance(loaded, ToolResultMessage)
    assert loaded.tool_call_id == "c1" and loaded.content == [TextContent("r")]
    assert loaded.details == {"unserializable": "<opaque>"}
    assert "not JSON-serialisable" in caplog.text


def test_both_stores_satisfy_the_protocol() -> None:
    assert isinstance(InMemorySessionStore(), SessionStore)
    with SqliteSessionStore(":memory:") as s:
        assert isinstance(s, SessionStore)


def test_closed_store_refuses_use(store: SessionStore) -> None:
    store.close()
    store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        store.append("s", UserMessage("x"))
    with pytest.raises(RuntimeError, match="closed"):
        store.load("s")


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


def test_sqlite_row_that_does_not_decode_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionStore(path) as store:
        store.append("s", UserMessage("one"))
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO messages VALUES ('s', 2, 'alien', '{\"role\": \"alien\"}', 0)"
            )
        store.append("s", UserMessage("three"))
        with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
            loaded = store.load("s")
    assert [m.content[0].text for m in loaded] == ["one", "three"]  # type: ignore[union-attr]
    assert "does not load" in caplog.text


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
