"""`yiem chat` stopped by SIGTERM mid-tool-call (DESIGN §8): it leaves as Ctrl-D does, so the
run is aborted with its tool call answered in the store, its MCP server stops, the
terminal gets its echo back, and the chat ends with one line and 143. A real terminal
(tmux) on the faux model."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from tests._slow_load import slow_load_script
from tests.cli.chat._tmux import TOOLS, Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, ToolResultMessage

pytestmark = pytest.mark.timeout(180)

MCP_SERVER = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"


def test_sigterm_mid_tool_call_winds_the_chat_down(tmp_path: Path) -> None:
    """SIGTERM used to kill the chat where it stood: the terminal left without echo (raw
    mode), no line said why, and the run's tool call was left unanswered."""
    data = tmp_path / "data"
    data.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    mcp = f"env MCP_TEST_MARKERS={markers} {sys.executable} {MCP_SERVER}"
    options = ["--tools", str(TOOLS), "--session", "t", "--mcp", mcp]
    chat = shlex.join([sys.executable, "-m", "yiemagent.cli.main", "chat", *options])
    # after the chat: whether the terminal echoes again ("echo" or "-echo")
    echo = "stty -a | tr ' ' '\\n' | grep -x -- '-\\{0,1\\}echo' | sed 's/^/STTY=/'"
    pane = Pane(data, command=["sh", "-c", f"{chat}; status=$?; {echo}; exit $status"])
    try:
        pane.ready()
        pane.wait("(echo, ")  # the MCP server has started
        pane.type("slow")
        pane.wait("s step 2/40")
        shell = int(pane._tmux("list-panes", "-t", "chat", "-F", "#{pane_pid}").split()[0])
        chat_pid = _descendant_running(shell, sys.executable)
        os.kill(chat_pid, signal.SIGTERM)
        assert pane.exit_code() == 143
        screen = pane.screen()
        assert after(screen, "⏹ aborted", "yiem: terminated", "STTY=echo"), screen
        assert "Traceback" not in screen
    finally:
        pane.close()
    with SqliteSessionStore(data / "sessions.db") as store:
        messages = store.load("t")
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    assert len(calls) == 1 and results == calls, messages
    mcp_pid = int((markers / "pid").read_text())
    deadline = time.monotonic() + 15
    while True:  # the MCP server stopped with the chat
        try:
            os.kill(mcp_pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the MCP server outlived yiem chat"
        time.sleep(0.1)


def _descendant_running(ancestor: int, executable: str) -> int:
    """The pid of the `yiem chat` process below `ancestor` (run by `executable`)."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    for pid, command in commands.items():
        if not command.startswith(executable.encode()) or b"yiemagent.cli.main" not in command:
            continue
        up = parents.get(pid)
        while up is not None and up != ancestor:
            up = parents.get(up)
        if up == ancestor:
            return pid
    raise AssertionError(f"nothing below {ancestor} runs {executable}")


def test_sigterm_while_the_embedded_model_loads_says_so(tmp_path: Path) -> None:
    """The chat left at once (llama.cpp's load cannot be stopped) with 143 but without a
    word, where every other way SIGTERM ends it says "yiem: terminated"."""
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.options", announce=False)
    data = tmp_path / "data"
    data.mkdir()
    pane = Pane(
        data, faux=False, command=[sys.executable, str(script), "chat", "--tools", str(TOOLS)]
    )
    try:
        pane.wait("loading")
        os.kill(pane.chat_pid(), signal.SIGTERM)
        assert pane.exit_code() == 143
        screen = pane.screen()
        assert after(screen, "yiem chat", "yiem: terminated", "__EXIT=143__"), screen
    finally:
        pane.close()


@pytest.mark.parametrize(("leave", "code"), [("C-d", 0), ("SIGTERM", 143)])
def test_leaving_while_an_mcp_server_starts_stops_it(tmp_path: Path, leave: str, code: int) -> None:
    """Leaving before the chat was ready (a server fetched by npx takes seconds to start)
    ended the process at once and left the MCP server's process running on its own."""
    data = tmp_path / "data"
    data.mkdir()
    pid_file = tmp_path / "server.pid"
    server = f"sh -c 'echo $$ > {pid_file}; sleep 60'"  # started, never answers
    pane = Pane(data, ["--tools", str(TOOLS), "--mcp", server])
    try:
        pane.wait("/help lists the commands")
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.05)
        server_pid = int(pid_file.read_text())
        if leave == "SIGTERM":
            os.kill(pane.chat_pid(), signal.SIGTERM)
        else:
            pane.keys(leave)
        assert pane.exit_code() == code
    finally:
        pane.close()
    deadline = time.monotonic() + 15
    while True:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            os.kill(server_pid, signal.SIGKILL)
            raise AssertionError("the MCP server outlived yiem chat")
        time.sleep(0.1)
