"""A stored row edited into something that is not a message (DESIGN §8), on SQLite and on
PostgreSQL: `load` refuses the session with one `SessionCorruptError` naming the store, the
session and the row; an `Agent` on it says the same, not "two writers at once"; nothing else
is lost, and once the row is fixed the whole transcript loads again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.sessions._backends import Backend
from yiemagent import (
    Agent,
    AssistantMessage,
    SessionCorruptError,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.cli.main import main
from yiemagent.sessions import SessionStore


def transcript() -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    call = AssistantMessage([ToolCall("c1", "clock", {})], stop_reason="toolUse", timestamp=2)
    return [
        UserMessage("what time is it?", 1),
        call,
        ToolResultMessage("c1", "clock", [TextContent("noon")], timestamp=3),
        AssistantMessage([TextContent("It is noon.")], timestamp=4),
    ]


def set_row(backend: Backend, session_id: str, seq: int, data: str) -> None:
    """Overwrite a stored row's data behind the store's back, as a hand edit would."""
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.spec) as conn:
            conn.execute(
                "UPDATE messages SET data = ? WHERE session_id = ? AND seq = ?",
                (data, session_id, seq),
            )
        return
    import psycopg

    with psycopg.connect(backend.spec, autocommit=True) as conn:
        conn.execute(
            "UPDATE yiemagent.messages SET data = %s WHERE session_id = %s AND seq = %s",
            (data, session_id, seq),
        )


def stored_data(backend: Backend, session_id: str, seq: int) -> str:
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.spec) as conn:
            row = conn.execute(
                "SELECT data FROM messages WHERE session_id = ? AND seq = ?", (session_id, seq)
            ).fetchone()
        return str(row[0])
    import psycopg

    with psycopg.connect(backend.spec) as conn:
        row = conn.execute(
            "SELECT data FROM yiemagent.messages WHERE session_id = %s AND seq = %s",
            (session_id, seq),
        ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize(
    ("edited", "why"),
    [
        ('{"role": "assistant", "content": [', "not valid JSON"),
        ('{"role": "alien"}', "not a message"),
    ],
)
async def test_a_row_that_does_not_load_is_one_clear_error_and_loses_nothing(
    shared_backend: Backend, edited: str, why: str
) -> None:
    store: SessionStore = shared_backend.open()
    try:
        for message in transcript():
            store.append("s", message)
        store.append("other", UserMessage("untouched", 5))
        good = stored_data(shared_backend, "s", 2)
        set_row(shared_backend, "s", 2, edited)

        with pytest.raises(SessionCorruptError) as raised:
            store.load("s")
        text = str(raised.value)
        assert repr(store) in text and "'s'" in text and "seq=2" in text and why in text
        assert "two writers" not in text
        assert raised.value.session_id == "s" and len(raised.value.problems) == 1

        fm = FauxModel(["never asked"])
        with pytest.raises(SessionCorruptError) as opened:
            Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s")
        assert str(opened.value) == text and fm.call_count == 0

        assert stored_data(shared_backend, "s", 2) == edited  # nothing rewritten or dropped
        assert [m.role for m in store.load("other")] == ["user"]
        assert sorted(store.list_sessions()) == ["other", "s"]

        set_row(shared_backend, "s", 2, good)  # fixed by hand: every message is back
        assert [m.role for m in store.load("s")] == [
            "user",
            "assistant",
            "toolResult",
            "assistant",
        ]
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s")
        assert len(agent.state.messages) == 4
        await agent.close()
    finally:
        store.close()


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    backend = Backend("sqlite", str(db))
    store = backend.open()
    for message in transcript():
        store.append("s1", message)
    store.close()
    set_row(backend, "s1", 3, "{not json")

    code = main(["trace", "s1", "--db", str(db), "--html", str(tmp_path / "t.html")])

    _, err = capsys.readouterr()
    assert code != 0 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "seq=3" in lines[0] and "not valid JSON" in lines[0]


async def test_a_text_given_as_content_is_stored_as_a_block_and_loads_back(
    backend: Backend,
) -> None:
    """An assistant message or tool result made with a text for `content` (the Agent takes
    it) was written as a bare string, which no load reads back as a message."""
    store: SessionStore = backend.open()
    try:
        fm = FauxModel(["never asked"])
        given = [
            UserMessage("what time is it?", 1),
            AssistantMessage([ToolCall("c1", "clock", {})], stop_reason="toolUse", timestamp=2),
            ToolResultMessage("c1", "clock", "noon", timestamp=3),  # type: ignore[arg-type]
            AssistantMessage("It is noon.", timestamp=4),  # type: ignore[arg-type]
        ]
        agent = Agent(
            model=fm.model, stream_fn=fm.stream_fn, messages=given,
            session_store=store, session_id="s",
        )  # fmt: skip
        await agent.close()

        loaded = store.load("s")

        assert [m.role for m in loaded] == ["user", "assistant", "toolResult", "assistant"]
        assert loaded[2].content == [TextContent("noon")]  # type: ignore[union-attr]
        assert loaded[3].content == [TextContent("It is noon.")]  # type: ignore[union-attr]
    finally:
        store.close()
