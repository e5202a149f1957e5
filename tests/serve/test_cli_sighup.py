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
from tests.serve.test_cli_sigterm import NAP, SERVE_FAUX
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def test_sighup_mid_tool_call_aborts_the_run_and_ends_with_one_line_and_143(
    tmp_path: Path,
) -> None:
    """SIGHUP used to kill the server where it stood (status -1): the run's tool call
    stayed without a result in the store."""
    script = tmp_path / "serve_faux.py"
    script.write_text(SERVE_FAUX)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "nap.py").write_text(NAP)
    db = tmp_path / "sessions.db"
    server, url, _, _ = start_serve("--tools", str(tools), "--sessions", str(db), script=script)
    try:
        run = httpx.post(f"{url}/v1/sessions/s/runs", json={"input": "rest"})
        assert run.status_code == 202, run.text
        deadline = time.monotonic() + 30
        while not (tools / "napping").exists():  # the tool call is running
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.05)
        server.send_signal(signal.SIGHUP)
        assert server.wait(30) == 143
        assert server.stderr is not None
        rest = server.stderr.read().strip()
        assert rest == "yiem: terminated", rest
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    with SqliteSessionStore(db) as store:
        roles = [message.role for message in store.load("s")]
        assert roles == ["user", "assistant", "toolResult"], roles


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
