"""`yiem chat` whose terminal goes away (DESIGN §8): closing the window, `tmux
kill-session` or a lost ssh connection sends SIGHUP, and the chat winds down as for SIGTERM,
so the stored session is whole: the run's tool call has its result. A real terminal (tmux)
on the faux model."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, ToolResultMessage

pytestmark = pytest.mark.timeout(180)


def _gone(pid: int, timeout_s: float) -> bool:
    """Whether process `pid` has ended within `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_terminal_killed_mid_tool_call_leaves_the_call_answered(tmp_path: Path) -> None:
    """SIGHUP used to end the chat where it stood (Python's default action), leaving the
    stored tool call without a result."""
    pane = Pane(tmp_path, ["--tools", str(TOOLS), "--session", "t"])
    try:
        pane.ready()
        pane.type("slow")
        pane.wait("s step 2/40")
        pid = pane.chat_pid()
        pane._tmux("kill-session", "-t", "chat")  # the pane's terminal hangs up
        assert _gone(pid, 60), "the chat did not end after its terminal went away"
    finally:
        pane.close()
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        messages = store.load("t")
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert len(calls) == 1 and [r.tool_call_id for r in results] == calls, messages
    assert "stopped at step" in str(results[0].content), results[0]
