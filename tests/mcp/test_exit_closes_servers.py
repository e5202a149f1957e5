"""DESIGN §12: a program that ends without closing its MCP servers (Ctrl-C mid-run, its
last line) stops the stdio servers it started, also one busy with a call. Real processes:
the program, and its server, which starts in a session of its own (the SDK's), so Ctrl-C
at a terminal never reaches it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(os.name != "posix", reason="POSIX")]

BUSY_SERVER = """
import os, sys, time
from mcp.server.mcpserver import MCPServer

server = MCPServer("busy", log_level="WARNING")


@server.tool(description="Block the whole server for `seconds`.")
def block(seconds: float) -> str:
    with open(sys.argv[1], "w") as marker:
        marker.write(str(os.getpid()))
    time.sleep(seconds)
    return "done"


server.run()
"""

PROGRAM = """
import sys
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.mcp import MCPServerStdio, add_server

fm = FauxModel([faux_message(faux_tool_call("block", {"seconds": 300})), "ok"])
agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
server = MCPServerStdio(sys.executable, ["-c", sys.argv[1], sys.argv[2]], name="busy")
{start}
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _run_until_the_call_blocks(tmp_path: Path, start: str) -> tuple[subprocess.Popen[str], int]:
    marker = tmp_path / "server.pid"
    script = tmp_path / "program.py"
    script.write_text(PROGRAM.replace("{start}", start))
    program = subprocess.Popen(
        [sys.executable, str(script), BUSY_SERVER, str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()):
        assert program.poll() is None, program.communicate()
        assert time.monotonic() < deadline, "the server never started the call"
        time.sleep(0.05)
    return program, int(marker.read_text())


@pytest.mark.parametrize(
    "start",
    [
        # asyncio.run's loop ends with the KeyboardInterrupt; the server's loop thread does not
        "import asyncio\nasyncio.run(add_server(agent, server))\nagent.prompt_sync('go')",
        "import asyncio\n\nasync def main():\n    await add_server(agent, server)\n"
        "    await agent.prompt('go')\n\nasyncio.run(main())",
    ],
    ids=["prompt_sync", "asyncio_run"],
)
def test_ctrl_c_mid_call_stops_the_busy_server(tmp_path: Path, start: str) -> None:
    program, server_pid = _run_until_the_call_blocks(tmp_path, start)
    try:
        os.killpg(program.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
        _, err = program.communicate(timeout=60)
        assert "KeyboardInterrupt" in err  # the program's own traceback, as Python ends
        deadline = time.monotonic() + 15
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), "the MCP server outlived the program"
    finally:
        if program.poll() is None:
            program.kill()
        if _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
