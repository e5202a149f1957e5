"""Leaving `yiem chat` while it asks `Run remove(...)? [y/N/a]` (Ctrl-D, or SIGTERM from a
supervisor; DESIGN §8): it ends at once, the held call stays held and did not run, and the
next chat on the session asks the question again, as after a kill. A real terminal (tmux)
on the faux model."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.cli.chat._tmux import APPROVAL_TOOLS, Pane, after

pytestmark = pytest.mark.timeout(180)

QUESTION = "Run remove(name=zeta)? [y/N/a(lways)]"


@pytest.mark.parametrize(("leave", "code"), [("C-d", 0), ("SIGTERM", 143)])
def test_leaving_at_an_approval_question_ends_at_once_and_keeps_the_call_held(
    tmp_path: Path, leave: str, code: int
) -> None:
    """The chat waited 30 s for the answer that could no longer come before it ended."""
    data = tmp_path / "data"
    data.mkdir()
    removed = tmp_path / "removed.txt"
    removed.touch()
    args = ["--tools", str(APPROVAL_TOOLS), "--session", "left"]
    env = {"YIEM_TEST_REMOVED": str(removed)}
    first = Pane(data, args, env=env)
    try:
        first.ready()
        first.type("remove zeta")
        first.wait(QUESTION)
        started = time.monotonic()
        if leave == "SIGTERM":
            os.kill(first.chat_pid(), signal.SIGTERM)
        else:
            first.keys(leave)
        assert first.exit_code() == code
        assert time.monotonic() - started < 20  # not the 30 s wait
        assert "cancelled" not in first.screen()
    finally:
        first.close()
    assert removed.read_text() == ""  # the call did not run
    second = Pane(data, args, env=env)
    try:
        second.wait(
            lambda s: after(
                s, "this session has 1 tool call(s) waiting for your approval", QUESTION
            )
        )
        second.type("y")
        second.wait(lambda s: after(s, f"{QUESTION} yes", "Tool results: removed zeta"))
    finally:
        second.close()
    assert removed.read_text() == "zeta\n"
