"""Session ids and message text of any characters, as openai-agents' memory tests check
their SQLite session (`test_sqlite_session_special_characters_and_sql_injection`,
`test_sqlite_session_unicode_content`, `test_session_memory_different_sessions`): an id
that looks like SQL, holds quotes, spaces, slashes, `%` or `_`, or is not ASCII names its
own session on every store, kept apart from its look-alikes, and an `Agent` on it
continues the conversation after the store is opened again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sessions._backends import Backend
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

IDS = [
    "'; DROP TABLE messages; --",
    'quote"s and \\backslash',
    "ünïcødé-会话-🐈",
    "with spaces/and/slashes",
    "100%_like",
    "100X_like",  # what `100%_like` would match as a LIKE pattern
    "x" * 300,
]
TEXT = "héllo ' \" \\ %_ 🐈 \n\t ; DROP TABLE x; --"


@pytest.mark.parametrize("session_id", IDS, ids=range(len(IDS)))
async def test_an_id_of_any_text_keeps_its_own_conversation(
    backend: Backend, session_id: str
) -> None:
    store = backend.open()
    try:
        look_alike = session_id + "-other"
        for sid, answer in ((session_id, "first answer"), (look_alike, "other answer")):
            fm = FauxModel([answer + " " + TEXT])
            agent = Agent(
                model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=sid
            )
            await agent.prompt(TEXT)
            await agent.close()
        assert session_id in store.list_sessions() and look_alike in store.list_sessions()
    finally:
        if backend.kind == "memory":  # nothing outlives the store: check it before closing
            assert [text_of(m.content) for m in store.load(session_id)] == [
                TEXT,
                "first answer " + TEXT,
            ]
        store.close()
    if backend.kind == "memory":
        return

    reopened = backend.open()
    try:
        fm = FauxModel(["again"])
        agent = Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=reopened, session_id=session_id
        )
        assert [text_of(m.content) for m in agent.state.messages] == [TEXT, "first answer " + TEXT]
        await agent.prompt("and now?")
        await agent.close()
        sent: list[Any] = fm.contexts[0].messages
        assert [text_of(m.content) for m in sent] == [TEXT, "first answer " + TEXT, "and now?"]
        reopened.clear(session_id)
        assert reopened.load(session_id) == []
        assert len(reopened.load(session_id + "-other")) == 2  # the look-alike is untouched
    finally:
        reopened.close()
