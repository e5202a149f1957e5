"""`yiem chat` in a terminal resized down to one column and back while it streams an
answer and runs a tool (DESIGN §15): the chat neither fails nor stops, the stored session
holds every message, and at full width the next answer is shown whole. A real terminal
(tmux), the faux model."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, ToolResultMessage, UserMessage, text_of

pytestmark = pytest.mark.timeout(180)


def _resize(pane: Pane, width: int, height: int) -> None:
    pane._tmux("resize-window", "-t", "chat", "-x", str(width), "-y", str(height))


def _idle(screen: str) -> bool:
    """Whether the chat waits for a prompt: the input line last, no run working above it."""
    lines = screen.splitlines()
    return len(lines) >= 2 and lines[-1].startswith("›") and "working" not in lines[-2]


def test_a_chat_resized_to_one_column_and_back_goes_on(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--tools", str(TOOLS), "--session", "narrow"], width=80, height=24)
    try:
        pane.ready()
        _resize(pane, 10, 8)
        pane.type("progress 5")
        time.sleep(4.0)  # the tool's steps redraw the status line at 10 columns
        _resize(pane, 1, 2)
        pane.type("stream")
        time.sleep(2.0)
        _resize(pane, 4, 3)
        time.sleep(4.0)
        _resize(pane, 120, 40)
        pane.wait(_idle, 90)  # typed during a run, "hello" would steer it
        pane.type("hello")
        pane.wait(lambda s: after(s, "Hello! I am a scripted faux model", "tokens:"), 90)
        pane.type("/exit")
        assert pane.exit_code() == 0
        screen = pane.screen()
        assert "Traceback" not in screen and "Error" not in screen, screen[-3000:]
    finally:
        pane.close()
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        messages = store.load("narrow")
    typed = [text_of(m.content) for m in messages if isinstance(m, UserMessage)]
    assert typed == ["progress 5", "stream", "hello"], typed
    results = [text_of(m.content) for m in messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1, results
    last = messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "stop", last
    assert text_of(last.content).startswith("Hello! I am a scripted faux model")


def test_a_narrowed_window_shows_the_working_line_once(tmp_path: Path) -> None:
    """The terminal rewraps the rows drawn at the old width into more rows; the chat erased
    only as many as it drew, and the rest stayed above the redrawn ones: two "working"
    lines on the screen."""
    pane = Pane(tmp_path, ["--tools", str(TOOLS)], width=100, height=30)
    try:
        pane.ready()
        pane.type("progress 40")  # 12 s of tool steps
        pane.wait("working —")
        _resize(pane, 40, 30)
        time.sleep(1.5)  # the spinner redraws several times
        visible = pane._tmux("capture-pane", "-p", "-t", "chat")
        pane.keys("C-c")
    finally:
        pane.close()
    assert visible.count("working —") == 1, visible


def test_a_frame_drawn_before_the_resize_is_heard_shows_the_working_line_once(
    tmp_path: Path,
) -> None:
    """A frame the chat draws after the terminal narrowed and before it handles SIGWINCH
    (the signal comes a moment later; tmux and the spinner race) sees the new width: it
    moved up only the rows drawn at the old width before drawing again, and the rows
    the terminal rewrapped them into stayed above: a second "working" line. Here the
    chat runs with SIGWINCH blocked, so every frame after the narrowing is such a frame."""
    blocked = (
        "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH}); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    chat = ["-m", "yiemagent.cli.main", "chat", "--tools", str(TOOLS)]
    command = [sys.executable, "-c", blocked, *chat]
    pane = Pane(tmp_path, command=command, width=100, height=30)
    try:
        pane.ready()
        pane.type("progress 40")  # 12 s of tool steps
        pane.wait("working —")
        _resize(pane, 40, 30)
        time.sleep(1.5)  # the spinner redraws several times
        visible = pane._tmux("capture-pane", "-p", "-t", "chat")
        pane.keys("C-c")
    finally:
        pane.close()
    assert visible.count("working —") == 1, visible
