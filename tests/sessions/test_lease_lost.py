"""A writer whose lease is gone writes the session no more (DESIGN §18, the one-writer
lease): after `force_release` (`yiem sessions release ID`), or a takeover while it looked
dead, another writer may have written turns its transcript lacks. Its next write of any
kind is one clear `SessionBusyError` and the session keeps what it had; the session is free
for a new writer."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from tests.sessions._backends import Backend
from yiemagent import Agent, SessionBusyError, UserMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import SessionStore


def texts(store: SessionStore) -> list[str]:
    return [m.content[0].text for m in store.load("s")]  # type: ignore[union-attr]


def test_a_holder_whose_lease_was_force_released_writes_nothing(shared_backend: Backend) -> None:
    """`force_release` said the old holder's next write is refused; it was written as long
    as nobody had taken the session meanwhile."""
    old, admin = shared_backend.open(), shared_backend.open()
    try:
        old.acquire("s")
        old.append("s", UserMessage("before"))
        old.save_state("s", "key", "kept")  # type: ignore[attr-defined]
        assert admin.force_release("s")  # type: ignore[attr-defined]
        writes: list[Callable[[], object]] = [
            lambda: old.append("s", UserMessage("late")),
            lambda: old.replace("s", [UserMessage("rewritten")]),
            lambda: old.save_state("s", "key", "changed"),  # type: ignore[attr-defined]
            lambda: old.clear("s"),
        ]
        for write in writes:
            with pytest.raises(SessionBusyError, match="was taken over by another writer"):
                write()
        assert texts(admin) == ["before"]
        assert admin.load_state("s", "key") == "kept"  # type: ignore[attr-defined]
        token = admin.acquire("s")
        admin.append("s", UserMessage("next writer"))
        assert texts(admin) == ["before", "next writer"]
        admin.release("s", token)
    finally:
        old.close()
        admin.close()


async def test_an_agent_whose_session_was_taken_over_says_so_at_its_next_prompt(
    shared_backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent whose lease went (force_release, then a new writer) went on answering:
    each message it could not store was logged with a traceback, queued and retried
    before every later one, and its turns reached no store, silently for the caller. Now
    the first refused write is one log line, nothing is retried, and the next prompt
    raises the refusal before any model call."""
    fm = FauxModel(["one", "two", "three"])
    store, other = shared_backend.open(), shared_backend.open()
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s")
    try:
        await agent.prompt("first")
        assert other.force_release("s")  # type: ignore[attr-defined]
        token = other.acquire("s")
        other.append("s", UserMessage("the new writer's turn"))
        with caplog.at_level(logging.WARNING):
            await agent.prompt("second")  # its run was under way when the lease went
        said = [r for r in caplog.records if r.name.startswith("yiemagent")]
        assert len(said) == 1 and said[0].exc_info is None, [r.getMessage() for r in said]
        assert "is stored no more" in said[0].getMessage()
        with pytest.raises(SessionBusyError, match=r"^session 's' is being written by"):
            await agent.prompt("third")
        assert fm.call_count == 2  # the third prompt reached no model
        assert texts(other) == ["first", "one", "the new writer's turn"]
        other.release("s", token)
    finally:
        await agent.close()
        store.close()
        other.close()
