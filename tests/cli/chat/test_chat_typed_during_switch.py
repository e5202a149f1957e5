"""A line typed while `/new` switches sessions is the new session's first prompt, not a
steering message for the agent being replaced (DESIGN §8: typed text is never lost). A real
terminal (tmux) on the faux model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import UserMessage, text_of

pytestmark = pytest.mark.timeout(180)


def test_lines_typed_during_a_session_switch_run_in_the_new_session(tmp_path: Path) -> None:
    """They showed "⧗ queued steering" for ever: the steering went to the old agent, which
    the switch closed, and nothing ever answered them."""
    pane = Pane(tmp_path, ["--session", "first"])
    try:
        pane.ready()
        pane.type("hello")
        pane.wait(lambda s: after(s, "› hello", "tokens:"))
        # typed at once, before the switch is done: the first line is a prompt, the second
        # steers its run, as lines typed during a run do
        pane.keys("/new second", "Enter", "what now", "Enter", "and more", "Enter")
        screen = pane.wait(
            lambda s: after(s, "new session second", "› what now", "You said:", "tokens:")
        )
        assert after(screen, "» steering delivered: and more"), screen
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    assert "queued steering" not in screen.split("new session second")[1], screen
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        second = [text_of(m.content) for m in store.load("second") if isinstance(m, UserMessage)]
        first = [text_of(m.content) for m in store.load("first") if isinstance(m, UserMessage)]
    assert second == ["what now", "and more"]
    assert first == ["hello"]
