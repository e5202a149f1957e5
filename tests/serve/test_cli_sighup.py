"""`yiem serve` whose terminal or ssh connection goes away (SIGHUP) mid-run (DESIGN §8):
it shuts down as for SIGTERM, the run aborted with its tool call answered in the store,
one line and 143; started under `nohup` (SIGHUP ignored) it keeps serving. A real process
on the faux model, with a tool file that sleeps."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.serve.test_cli import start_serve
from tests.serve.test_cli_sigterm import stop_mid_tool_call

pytestmark = pytest.mark.timeout(120)


def test_sighup_mid_tool_call_aborts_the_run_and_ends_with_one_line_and_143(
    tmp_path: Path,
) -> None:
    """SIGHUP used to kill the server where it stood (status -1): the run's tool call
    stayed without a result in the store."""
    stop_mid_tool_call(tmp_path, signal.SIGHUP)


def test_a_server_started_with_sighup_ignored_keeps_serving(tmp_path: Path) -> None:
    """`nohup yiem serve`: the hang-up it was started to outlive changes nothing."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # inherited, as nohup does
    try:
        server, url, _, _ = start_serve("--sessions", str(tmp_path / "s.db"))
    finally:
        signal.signal(signal.SIGHUP, previous)
    try:
        server.send_signal(signal.SIGHUP)
        time.sleep(1.0)  # a server that took it would be shutting down by now
        assert server.poll() is None
        assert httpx.get(f"{url}/healthz").status_code == 200
    finally:
        server.terminate()
        server.wait(30)
