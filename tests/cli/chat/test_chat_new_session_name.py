"""A chat started without `--session` gets a session of its own (DESIGN §15), even when a
stored session already has the name of this second (`chat-YYYYmmdd-HHMMSS`): two chats
started in one second, a clock set back an hour. A real terminal (tmux) on the faux
model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import UserMessage, text_of

pytestmark = pytest.mark.timeout(180)


def test_a_new_chat_never_resumes_a_session_named_for_its_second(tmp_path: Path) -> None:
    """The name was the time alone: the chat resumed the stored conversation as its own
    (or, that chat still open, refused to start as the session's second writer)."""
    now = time.time()
    earlier = [time.strftime("chat-%Y%m%d-%H%M%S", time.localtime(now + s)) for s in range(-2, 90)]
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        for name in earlier:
            store.append(name, UserMessage(f"earlier talk in {name}"))
    pane = Pane(tmp_path)
    try:
        pane.ready()
        pane.type("hello there")
        # the run ended (Ctrl-D typed while it runs is not an exit)
        screen = pane.wait(lambda s: after(s, "You said: hello there [", " messages]", "tokens:"))
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    assert "earlier talk" not in screen and "[1 messages]" in screen, screen
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        for name in earlier:
            assert [text_of(m.content) for m in store.load(name)] == [f"earlier talk in {name}"]
        (new,) = set(store.list_sessions()) - set(earlier)
        assert new.startswith(tuple(earlier)) and new.rsplit("-", 1)[1] == "2", new
        typed = [text_of(m.content) for m in store.load(new) if isinstance(m, UserMessage)]
    assert typed == ["hello there"]
