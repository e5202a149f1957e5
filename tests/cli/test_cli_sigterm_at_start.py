"""`yiem run --mcp` stopped by SIGTERM while its MCP server starts (a server fetched by
`npx` can take many seconds; DESIGN §8): the command ends with one line and 143, and the
server process it started is stopped, not left running on its own. A real process and a
server command that never answers."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests._signals import stop_when_ready
from tests.cli.test_cli_agent_file_sigterm import SCRIPT

pytestmark = pytest.mark.timeout(120)


def test_sigterm_while_an_mcp_server_starts_stops_it(tmp_path: Path) -> None:
    """The default SIGTERM action used to end `yiem run` at once, silently, leaving the MCP
    server's process (and its children) running."""
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir()
    pid_file = tmp_path / "server.pid"
    server = f"sh -c 'echo $$ > {pid_file}; sleep 60'"  # started, never answers
    options = ["--tools", str(tmp_path / "tools"), "--mcp", server]

    def started(_: object) -> bool:
        return pid_file.exists() and bool(pid_file.read_text().strip())

    ended = stop_when_ready(
        [sys.executable, str(script), "run", "hi", *options],
        signal.SIGTERM,
        started,
        ready_within_s=60,
        end_within_s=60,
    )
    out, err = ended.out, ended.err
    server_pid = int(pid_file.read_text())
    assert ended.code == 143, err
    assert err.strip().splitlines()[-1] == "yiem: terminated", err
    assert "Traceback" not in err and out == ""
    deadline = time.monotonic() + 15
    while True:  # the server's shell stopped with yiem run
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the MCP server outlived yiem run"
        time.sleep(0.1)
