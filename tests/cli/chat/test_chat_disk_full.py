"""`yiem chat` on a full disk (DESIGN §8), in a real terminal (tmux, the scripted faux
model): the chat runs under a file size limit (`RLIMIT_FSIZE`, which fails a write past it
with "File too large" as a full disk fails it with "No space left") that its input history
file has already reached."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cli.chat._tmux import TOOLS, Pane, after

HISTORY = "\n# 2020-01-01 00:00:00.000000\n+" + "x" * 1_000_000 + "\n"
"""An input history of one long line, in prompt_toolkit's file format."""

LIMITED = (
    "import os, resource, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'yiemagent.cli.main', 'chat', "
    "*sys.argv[2:]])\n"
)
"""Runs `yiem chat ARGS` with the file size limit `argv[1]` (bytes)."""


def test_an_input_history_that_cannot_grow_is_one_line_and_the_question_runs(
    tmp_path: Path,
) -> None:
    """Enter on a full disk: prompt_toolkit's append to the history file raised out of the
    key handler, so the chat printed "Unhandled exception in event loop", a traceback and
    "Press ENTER to continue...", the question just typed was never sent, and the file was
    left with half a line. Now it says once that the history is not kept, the question
    runs, and the file holds what it held."""
    history = tmp_path / "chat_history"
    history.write_text(HISTORY, encoding="utf-8")
    size = history.stat().st_size
    limit = size + 8  # the session database stays far below it; the next line does not fit
    command = [sys.executable, "-c", LIMITED, str(limit), "--tools", str(TOOLS)]
    pane = Pane(tmp_path, command=[*command, "--session", "t"])
    try:
        pane.ready()
        pane.type("stream")
        screen = pane.wait(
            lambda s: after(
                " ".join(s.split()),  # the note wraps where the terminal ends
                f"input history is not kept from now on: {history}: File too large",
                "› stream",
                "word40 end.",
                "tokens: 12 in",
            )
        )
        assert "Unhandled exception" not in screen and "Traceback" not in screen, screen
        pane.type("stream")  # said once, not at every Enter
        screen = pane.wait(lambda s: s.count("word40 end.") == 2)
        assert screen.count("input history is not kept") == 1, screen
    finally:
        pane.close()
    assert history.read_text(encoding="utf-8") == HISTORY
