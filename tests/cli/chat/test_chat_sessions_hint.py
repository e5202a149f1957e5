"""`/sessions` says how to open a listed session in the chat itself (`/new NAME`), not
only by leaving it for `yiem chat --session NAME`. A real terminal (tmux) on the faux
model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after

pytestmark = pytest.mark.timeout(180)


def test_sessions_names_new_to_open_one_here(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--session", "first"])
    try:
        pane.ready()
        pane.type("hello")
        pane.wait(lambda s: after(s, "› hello", "tokens:"))
        pane.type("/new second")
        pane.wait("new session second")
        pane.type("/sessions")
        screen = pane.wait(lambda s: after(s, "› /sessions", "first", "/new NAME"))
        pane.type("/new first")  # as it says: the session opens in this chat
        screen = pane.wait("switched to session first")
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    assert after(screen, "open one here with /new NAME", "switched to session first"), screen
