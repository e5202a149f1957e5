"""A block of several lines pasted into `yiem chat` is one message (DESIGN §15), sent when
Enter is pressed: the terminal brackets the paste, and its line breaks stay text. Reports of
other terminal agents (openinterpreter#1446, langchain-ai/deepagents#3856) had each pasted
line sent as a message of its own."""

from __future__ import annotations

from pathlib import Path

from tests.cli.chat._tmux import TOOLS, Pane
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import UserMessage, text_of

PASTED = "first line of the paste\nsecond line, 日本語 and wide\nthird"


def test_a_pasted_block_of_lines_is_one_message_sent_on_enter(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--tools", str(TOOLS), "--session", "p"])
    try:
        pane.ready()
        pane.paste(PASTED)
        pane.wait("second line, 日本語 and wide\nthird")
        assert "You said" not in pane.screen()  # nothing is sent before Enter
        pane.keys("Enter")
        screen = pane.wait("third [1 messages]")
        assert screen.count("You said") == 1, screen
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        prompts = [m for m in store.load("p") if isinstance(m, UserMessage)]
    assert [text_of(m.content) for m in prompts] == [PASTED]
