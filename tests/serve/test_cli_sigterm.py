"""`yiem serve` stopped by SIGTERM (a supervisor, `timeout`, `kill`, a container's stop)
mid-run (DESIGN §8): the run is aborted as for Ctrl-C (its tool call answered in the
store), the server's own clean-up runs, and it ends with one line and 143. A real process
on the faux model, with a tool file that sleeps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from tests._slow_load import slow_load_script
from tests.serve.test_cli import free_port, start_serve
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)

SERVE_FAUX = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.serve as serve
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.cli.main import main

    faux = FauxModel([faux_message(faux_tool_call("nap", {})), "rested"], model_id="serve-faux")
    serve.resolve_model = lambda *args, **kwargs: faux.model
    sys.exit(main(sys.argv[1:]))
    """
)

NAP = textwrap.dedent(
    """
    import asyncio
    from pathlib import Path

    from yiemagent import tool

    @tool
    async def nap() -> str:
        \"\"\"Sleep a minute.\"\"\"
        Path(__file__).with_name("napping").write_text("yes")
        await asyncio.sleep(60)
        return "rested"

    def get_tool():
        return nap
    """
)


def stop_mid_tool_call(tmp_path: Path, signum: signal.Signals) -> None:
    """Start `yiem serve` on the faux model with the `nap` tool, start a run, send `signum`
    while its tool call runs, and check the server ends with one line and 143 and the
    store holds the run with its tool call answered."""
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
        server.send_signal(signum)
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


def test_sigterm_mid_tool_call_aborts_the_run_and_ends_with_one_line_and_143(
    tmp_path: Path,
) -> None:
    """SIGTERM used to end the process silently (status -15) once Uvicorn had shut down:
    Uvicorn raises the signal again, so `yiem serve`'s own clean-up (closing the store,
    stopping an agent file's MCP servers) never ran."""
    stop_mid_tool_call(tmp_path, signal.SIGTERM)


@pytest.mark.parametrize(
    ("command", "resolving"),
    [("serve", "yiemagent.cli.serve"), ("run", "yiemagent.cli.main")],
)
def test_sigterm_while_the_embedded_model_loads_ends_at_once_with_143(
    tmp_path: Path, command: str, resolving: str
) -> None:
    """SIGTERM while llama.cpp loads the model (seconds) ended `yiem serve` silently with
    status -15, where Ctrl-C there says "yiem: interrupted", 130."""
    script = slow_load_script(tmp_path, resolving=resolving, announce=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, str(script), command]
    if command == "serve":
        argv += ["--port", str(free_port()), "--sessions", str(tmp_path / "s.db")]
    else:
        (tmp_path / "tools").mkdir()
        argv += ["hi", "--tools", str(tmp_path / "tools")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        while (line := proc.stderr.readline()) and line.strip() != "loading":
            pass
        assert line.strip() == "loading"
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert time.monotonic() - started < 10
    assert err.strip().splitlines()[-1] == "yiem: terminated", err
