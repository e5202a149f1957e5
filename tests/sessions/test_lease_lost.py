"""A writer whose lease is gone writes the session no more (DESIGN §18, the one-writer
lease): after `force_release` (`yiem sessions release ID`), or a takeover while it looked
dead, another writer may have written turns its transcript lacks. Its next write of any
kind is one clear `SessionBusyError` and the session keeps what it had; the session is free
for a new writer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.sessions._backends import Backend
from yiemagent import SessionBusyError, UserMessage
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
