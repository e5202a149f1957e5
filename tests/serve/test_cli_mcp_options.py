"""`yiem serve --mcp "command"` / `--mcp-url URL` (docs/mcp.md): the servers' tools join the
tools folder's for every session, connected once and closed with the server."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.mcp.conftest import HttpTestServer
from tests.serve._kit import run_events
from tests.serve.test_cli import FAUX_SERVE, one_line_error, start_serve

pytestmark = pytest.mark.timeout(120)

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py"


def _echoes(url: str, runs: list[tuple[str, str]]) -> None:
    """Each (session, word) run calls the MCP server's `echo` and gets `word` back."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for session, word in runs:
            run = client.post(f"/v1/sessions/{session}/runs", json={"input": word})
            assert run.status_code == 202, run.text
            events = [event for _, event in run_events(client, run.json()["run_id"])]
            [ended] = [e for e in events if e["type"] == "tool_execution_end"]
            assert not ended["is_error"], ended
            assert ended["result"]["content"] == [{"type": "text", "text": word}]
            assert events[-1]["type"] == "agent_end", events[-1]


def test_serve_mcp_starts_the_server_once_and_stops_it_with_yiem_serve(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    # MCP_TEST_START_ONCE: a second start of the server exits at once
    command = (
        f"env MCP_TEST_MARKERS={markers} MCP_TEST_START_ONCE={tmp_path / 'once'} "
        f"{sys.executable} {MCP_SERVER}"
    )
    script = tmp_path / "serve_faux.py"
    script.write_text(FAUX_SERVE)
    server, url, banner, _ = start_serve(
        "--mcp", command, "--sessions", str(tmp_path / "s.db"), script=script
    )
    try:
        assert "tools" in banner, banner
        _echoes(url, [("s1", "one"), ("s2", "two"), ("s1", "three")])
        mcp_pid = int((markers / "pid").read_text())
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 130
        deadline = time.monotonic() + 15
        while True:  # the MCP server stopped with yiem serve
            try:
                os.kill(mcp_pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the MCP server outlived yiem serve"
            time.sleep(0.1)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_serve_mcp_url_takes_tools_from_a_streamable_http_server(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    http = HttpTestServer(markers)
    http.start()
    script = tmp_path / "serve_faux.py"
    script.write_text(FAUX_SERVE)
    try:
        server, url, _, _ = start_serve(
            "--mcp-url", http.url, "--sessions", str(tmp_path / "s.db"), script=script
        )
        try:
            _echoes(url, [("s1", "one"), ("s2", "two")])
        finally:
            server.kill()
            server.wait()
    finally:
        http.kill()


@pytest.mark.parametrize("option", ["--mcp", "--mcp-url"])
def test_serve_mcp_with_an_agent_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    team = tmp_path / "team.toml"
    team.write_text('[agents.helper]\nsystem_prompt = "Help."\n')
    err = one_line_error(
        capsys, ["serve", "--agent", str(team), option, "http://127.0.0.1:9/mcp", "--port", "0"]
    )
    assert err == f"yiem: error: {option} does not go with --agent: set it in the agent file"


def test_serve_mcp_that_does_not_start_is_one_line_and_serves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dies = f"{sys.executable} -c \"import sys; sys.exit('no config')\""
    err = one_line_error(
        capsys,
        ["serve", "--model", "openai/gpt-4o-mini", "--port", "0", "--mcp", dies,
         "--sessions", str(tmp_path / "s.db")],
    )  # fmt: skip
    assert err.startswith("yiem: error: ") and "no config" in err, err
