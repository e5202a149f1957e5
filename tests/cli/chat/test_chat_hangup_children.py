"""`yiem chat` whose terminal goes away (DESIGN §8) while it has children: `tmux
kill-session` sends SIGHUP mid-call of a tool that runs in a worker process
(`isolation="process"`), with an MCP server running over stdio. The chat ends, and with it
every process it started; nothing is left in its error output but what it chose to say (no
traceback); the stored session is whole. A real terminal (tmux) on the faux model."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, ToolResultMessage

pytestmark = pytest.mark.timeout(240)

MCP_SERVER = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"

# `slow` as the faux model calls it ("slow": 40 steps of 0.25 s), run in a worker process
# that writes its pid first.
SLOW_IN_A_PROCESS = """
import os
import time
from pathlib import Path

from yiemagent import AgentTool, AgentToolResult, TextContent


def execute(tool_call_id, args, signal, on_update):
    Path(os.environ["SLOW_PIDS"], str(os.getpid())).write_text("")
    label, steps = args["label"], args.get("steps", 3)
    for step in range(1, steps + 1):
        time.sleep(args.get("delay", 0.2))
        on_update(AgentToolResult([TextContent(f"{label} step {step}/{steps}")]))
    return f"{label} done after {steps} steps"


def get_tool():
    schema = {"type": "object", "required": ["label"], "properties": {
        "label": {"type": "string"}, "steps": {"type": "integer"}, "delay": {"type": "number"}}}
    return AgentTool("slow", "Slow", "Count slowly", schema, execute, parallel=True,
                     isolation="process")
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie its parent has not reaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def descendants(pid: int) -> list[int]:
    """The pids of every process below `pid` (its children, theirs, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def all_gone(pids: list[int], timeout_s: float) -> list[int]:
    """The pids of `pids` still running after up to `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_a_hangup_mid_call_ends_the_chat_and_every_child_quietly(tmp_path: Path) -> None:
    tools, pids = tmp_path / "tools", tmp_path / "pids"
    for folder in (tools, pids):
        folder.mkdir()
    (tools / "slow.py").write_text(SLOW_IN_A_PROCESS)
    err, status = tmp_path / "stderr.txt", tmp_path / "status.txt"
    quoted_err, quoted_status = shlex.quote(str(err)), shlex.quote(str(status))
    chat = [
        sys.executable, "-m", "yiemagent.cli.main", "chat", "--tools", str(tools),
        "--session", "t", "--mcp", shlex.join([sys.executable, str(MCP_SERVER)]),
    ]  # fmt: skip
    env = {"SLOW_PIDS": str(pids)}
    children: list[int] = []
    pane = Pane(
        tmp_path,
        env=env,
        # a shell that outlives the hangup (its trap runs `:`) to keep the chat's status
        command=[
            "sh",
            "-c",
            f"trap : HUP; {shlex.join(chat)} 2>{quoted_err}; echo $? >{quoted_status}",
        ],
    )
    try:
        pane.ready()
        pane.type("slow")
        pane.wait("s step 2/40")
        [pid] = descendants(pane.chat_pid())[:1]  # the chat, below the shell
        worker = [int(p.name) for p in pids.iterdir()]
        children = descendants(pid)
        # the tool's worker, the MCP server (and whatever they started)
        assert len(worker) == 1 and worker[0] in children and len(children) >= 2, children
        assert all(alive(p) for p in (pid, *children))
        pane._tmux("kill-session", "-t", "chat")  # the pane's terminal hangs up
        assert all_gone([pid], 60) == [], "the chat did not end after its terminal went away"
        assert all_gone(children, 30) == [], "a process the chat started outlived it"
    finally:
        pane.close()
        for leftover in children:
            if alive(leftover):
                os.kill(leftover, 9)
    # the line and the status of SIGTERM, which it winds down as (no `[Errno 5]` error)
    assert err.read_text() == "yiem: terminated\n"
    assert status.read_text().strip() == "143"
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        messages = store.load("t")
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert len(calls) == 1 and [r.tool_call_id for r in results] == calls, messages
