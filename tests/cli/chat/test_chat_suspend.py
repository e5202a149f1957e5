"""`yiem chat` suspended with Ctrl-Z in a shell with job control, then resumed with `fg`
(DESIGN §15): the chat stops as any terminal program does, a run's tool call goes on where
it stood, and nothing the keys typed reaches the model. A real terminal (tmux) running an
interactive bash, on the faux model."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.chat._tmux import FAUX_SCRIPT, TOOLS, Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import ToolResultMessage, UserMessage, text_of

pytestmark = pytest.mark.timeout(180)


def _state(pid: int) -> str:
    """The process state letter of `pid` ("T": stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_state(pid: int, state: str, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _state(pid) == state:
            return True
        time.sleep(0.05)
    return False


def test_ctrl_z_suspends_the_chat_and_fg_resumes_its_run(tmp_path: Path) -> None:
    """Ctrl-Z used to type a ^Z into the input line, sent with the next message."""
    session = f"suspend-{uuid.uuid4().hex[:8]}"
    pane = Pane(tmp_path, command=["bash", "--norc", "--noprofile", "-i"], faux=False)
    try:
        env = f"YIEM_DATA_DIR={tmp_path} YIEM_CHAT_FAUX_SCRIPT={FAUX_SCRIPT}"
        chat = [sys.executable, "-m", "yiemagent.cli.main", "chat"]
        pane.type(f"{env} {shlex.join([*chat, '--tools', str(TOOLS), '--session', session])}")
        pane.ready()
        pid = int(
            subprocess.run(
                ["pgrep", "-f", f"chat .*{session}"], capture_output=True, text=True, timeout=30
            ).stdout.split()[0]
        )
        pane.type("slow")
        pane.wait("s step 2/40")
        pane.keys("C-z")
        assert _wait_state(pid, "T"), f"not stopped: state {_state(pid)}"
        pane.wait("Stopped")  # bash's job line
        pane.type("fg")
        assert _wait_state(pid, "S") or _state(pid) == "R"
        pane.wait(lambda screen: after(screen, "Tool results: s done after 40 steps", "tokens:"))
        pane.type("ping")
        pane.wait(lambda screen: after(screen, "You said: ping [", "tokens:"))
        pane.keys("C-d")
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists():  # the chat has left
            assert time.monotonic() < deadline, "the chat did not end after Ctrl-D"
            time.sleep(0.05)
    finally:
        pane.close()
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        messages = store.load(session)
    typed = [text_of(m.content) for m in messages if isinstance(m, UserMessage)]
    assert typed == ["slow", "ping"], typed
    results = [text_of(m.content) for m in messages if isinstance(m, ToolResultMessage)]
    assert results == ["s done after 40 steps"], results
