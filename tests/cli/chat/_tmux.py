"""A real terminal for the `yiem chat` tests: a private tmux server runs the command in a
pane; `send-keys` types and `capture-pane` reads the screen (and its scrollback).

Waiting is by polling the pane with generous timeouts (a loaded 2-core machine), never by
fixed sleeps.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAUX_SCRIPT = HERE / "faux_chat.py"
TOOLS = HERE / "tools"
APPROVAL_TOOLS = HERE / "approval_tools"
TIMEOUT_S = 60.0


class Pane:
    """`yiem chat ARGS` (or another `command`) in a 120x50 tmux pane of its own tmux
    server."""

    def __init__(
        self,
        data_dir: Path,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        faux: bool = True,
        width: int = 120,
        height: int = 50,
        command: Sequence[str] | None = None,
    ) -> None:
        self.socket = f"yiem-test-{uuid.uuid4().hex[:10]}"
        values = {"YIEM_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
        if faux:
            values["YIEM_CHAT_FAUX_SCRIPT"] = str(FAUX_SCRIPT)
        values.update(env or {})
        if command is None:
            command = [sys.executable, "-m", "yiemagent.cli.main", "chat", *args]
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items())
        # The pane stays for a while after the chat ends, so its last screen can be read.
        shell = f"env {exports} {shlex.join(command)}; echo __EXIT=$?__; sleep 120"
        self._tmux("new-session", "-d", "-s", "chat", "-x", str(width), "-y", str(height), shell)
        self._tmux("set-option", "-t", "chat", "history-limit", "5000")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        """Press keys (tmux key names: "Enter", "C-c", "C-d", "Up")."""
        self._tmux("send-keys", "-t", "chat", *keys)

    def type(self, text: str, enter: bool = True) -> None:
        """Type `text` literally, then Enter."""
        self._tmux("send-keys", "-t", "chat", "-l", text)
        if enter:
            self.keys("Enter")

    def paste(self, text: str) -> None:
        """Paste `text` as a terminal does: bracketed (ESC [200~ … ESC [201~) when the
        program asked for it, so its line breaks are text, not Enter presses."""
        self._tmux("set-buffer", "-b", "paste", text)
        self._tmux("paste-buffer", "-p", "-d", "-b", "paste", "-t", "chat")

    def screen(self) -> str:
        """The pane's scrollback and screen, wrapped lines joined, trailing blanks cut."""
        text = self._tmux("capture-pane", "-p", "-J", "-t", "chat", "-S", "-5000")
        return "\n".join(line.rstrip() for line in text.rstrip().splitlines())

    def wait(self, check: str | Callable[[str], bool], timeout: float = TIMEOUT_S) -> str:
        """Poll the screen until `check` (a text it contains, or a predicate) holds;
        returns that screen. Fails with the last screen after `timeout` seconds."""
        predicate = (lambda s: check in s) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {check!r}; screen:\n{screen}")
            time.sleep(0.05)

    def ready(self) -> str:
        """Wait for the chat's first prompt."""
        return self.wait("/help lists the commands")

    def exit_code(self, timeout: float = TIMEOUT_S) -> int:
        """Wait for the chat to end; its exit status."""
        screen = self.wait("__EXIT=", timeout)
        return int(screen.split("__EXIT=")[1].split("__")[0])

    def chat_pid(self) -> int:
        """The pid of the `yiem chat` process (the pane's shell runs it as its child)."""
        shell = int(self._tmux("list-panes", "-t", "chat", "-F", "#{pane_pid}").split()[0])
        children = subprocess.run(
            ["pgrep", "-P", str(shell)], capture_output=True, text=True, timeout=30
        ).stdout.split()
        assert len(children) == 1, children
        return int(children[0])

    def close(self) -> None:
        """Stop the tmux server (and the chat, if still running)."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def after(screen: str, *texts: str) -> bool:
    """Whether `texts` appear on the screen in this order."""
    position = 0
    for text in texts:
        found = screen.find(text, position)
        if found < 0:
            return False
        position = found + len(text)
    return True
