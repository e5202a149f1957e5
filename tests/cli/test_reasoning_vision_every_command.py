"""`--reasoning LEVEL` and `--vision` in `yiem batch`, `yiem eval` and `yiem serve`, as in
`yiem run` and `yiem chat` (DESIGN §21): the real CLI in a subprocess against a replay server
on 127.0.0.1 speaking the OpenAI wire format, as an Ollama model. The level reaches the first
request; a model said to read images gets a tool's image itself in the next one (without
`--vision` it gets a note in its place). A `MODULE:FUNCTION` agent builds its own model:
there the options are refused in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests._snap import PNG, SNAP_CALL, SNAP_TOOL
from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.serve._kit import run_events, start_run

pytestmark = pytest.mark.timeout(240)

FLAGS = ["--vision", "--reasoning", "high"]


def enqueue_snap_then_answer(server: ReplayServer) -> None:
    server.enqueue(
        Reply(events=openai_chunks({"tool_calls": [SNAP_CALL]}, finish_reason="tool_calls")),
        Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})),
    )


def check_requests(server: ReplayServer, flagged: bool) -> None:
    """The level in the first request; the image itself in the second one, or not."""
    first, second = (request.body for request in server.requests)
    assert first.get("reasoning_effort") == ("high" if flagged else None)
    assert (f"data:image/png;base64,{PNG}" in json.dumps(second)) == flagged


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "snap.py").write_text(SNAP_TOOL)
    return folder


@pytest.mark.parametrize("flagged", [True, False], ids=["flags", "none"])
def test_batch(tmp_path: Path, tools: Path, flagged: bool) -> None:
    (tmp_path / "tasks.jsonl").write_text('{"id": "1", "prompt": "What do you see?"}\n')
    with ReplayServer() as server:
        enqueue_snap_then_answer(server)
        proc = yiem_in(
            tmp_path,
            "batch", str(tmp_path / "tasks.jsonl"), "--out", str(tmp_path / "out.jsonl"),
            "--tools", str(tools), "--model", "ollama/llava", "--base-url", server.url + "/v1",
            *(FLAGS if flagged else []),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        [result] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert result["status"] == "ok" and result["text"] == "A dot.", result
        check_requests(server, flagged)


@pytest.mark.parametrize("flagged", [True, False], ids=["flags", "none"])
def test_eval(tmp_path: Path, tools: Path, flagged: bool) -> None:
    data = tmp_path / "d.yaml"
    data.write_text(
        "cases:\n  - name: dot\n    input: What do you see?\n    checks: [{contains: dot}]\n"
    )
    with ReplayServer() as server:
        enqueue_snap_then_answer(server)
        proc = yiem_in(
            tmp_path,
            "eval", str(data), "--tools", str(tools), "--model", "ollama/llava",
            "--base-url", server.url + "/v1", *(FLAGS if flagged else []),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        check_requests(server, flagged)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_one_run(*options: str) -> list[dict[str, Any]]:
    """`yiem serve OPTIONS` in a process, one run through its API; the run's events."""
    port = free_port()
    argv = [sys.executable, "-m", "yiemagent.cli.main", "serve", "--port", str(port), *options]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # a bound while the process imports, not a budget
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        with httpx.Client(base_url=url, timeout=60) as client:
            run_id = start_run(client, "s1", "What do you see?")
            return [event for _, event in run_events(client, run_id)]
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("flagged", [True, False], ids=["flags", "none"])
def test_serve(tmp_path: Path, tools: Path, flagged: bool) -> None:
    with ReplayServer() as server:
        enqueue_snap_then_answer(server)
        events = serve_one_run(
            "--tools", str(tools), "--model", "ollama/llava", "--base-url", server.url + "/v1",
            "--sessions", str(tmp_path / "s.db"), *(FLAGS if flagged else []),
        )  # fmt: skip
        assert events[-1]["type"] == "agent_end" and events[-1]["reason"] == "stop", events[-1]
        check_requests(server, flagged)


def test_an_agent_files_entry_agent_thinks_at_the_level_given(tmp_path: Path) -> None:
    """`--reasoning` is the entry agent's level over the file's, as in `yiem run`; its
    model is `--model`'s, a local server's, so the level is sent."""
    team = tmp_path / "team.toml"
    team.write_text('[agents.looker]\nreasoning = "low"\n')
    (tmp_path / "tasks.jsonl").write_text('{"id": "1", "prompt": "Hi"}\n')
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
        proc = yiem_in(
            tmp_path,
            "batch", str(tmp_path / "tasks.jsonl"), "--out", str(tmp_path / "out.jsonl"),
            "--agent", str(team), "--model", "ollama/qwen3", "--base-url", server.url + "/v1",
            "--reasoning", "high",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        [request] = server.requests
        assert request.body["reasoning_effort"] == "high"


@pytest.mark.parametrize("command", ["batch", "eval"])
@pytest.mark.parametrize(
    "flag", [["--vision"], ["--reasoning", "low"]], ids=["vision", "reasoning"]
)
def test_a_function_agent_refuses_the_model_options(
    tmp_path: Path, command: str, flag: list[str]
) -> None:
    (tmp_path / "agents.py").write_text("def make(task):\n    raise AssertionError\n")
    (tmp_path / "tasks.jsonl").write_text('{"id": "1", "prompt": "Hi"}\n')
    (tmp_path / "d.yaml").write_text("cases:\n  - name: a\n    input: Hi\n")
    given = (
        ["batch", "tasks.jsonl", "--out", "out.jsonl"] if command == "batch" else ["eval", "d.yaml"]
    )
    proc = yiem_in(tmp_path, *given, "--agent", "agents:make", *flag)
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        f"yiem: error: {flag[0]} does not go with --agent agents:make: the function builds "
        "the agent"
    )


def test_a_bad_level_is_one_line_in_every_command(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text('{"id": "1", "prompt": "Hi"}\n')
    (tmp_path / "d.yaml").write_text("cases:\n  - name: a\n    input: Hi\n")
    for given in (
        ["batch", "tasks.jsonl", "--out", "out.jsonl"],
        ["eval", "d.yaml"],
        ["serve", "--port", "0"],
    ):
        proc = yiem_in(tmp_path, *given, "--model", "openai/gpt-4o", "--reasoning", "max")
        assert proc.returncode != 0, given
        assert proc.stderr.strip() == (
            "yiem: error: --reasoning must be minimal, low, medium, high, xhigh or off, not 'max'"
        ), given
    assert set(os.listdir(tmp_path)) == {"tasks.jsonl", "d.yaml"}  # nothing was run
