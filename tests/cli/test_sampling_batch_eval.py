"""`yiem batch` and `yiem eval` with `--temperature T --max-tokens N`: the real CLI in a
subprocess against a replay server on 127.0.0.1 speaking the OpenAI wire format; each
task's and each case's model call carries both. Beside `--agent` they are one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks

pytestmark = pytest.mark.timeout(180)

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team" / "team.toml"


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


def test_every_task_of_a_batch_is_asked_with_them(server: ReplayServer, tmp_path: Path) -> None:
    for _ in range(2):
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "Hi"}\n{"id": "b", "prompt": "Hello"}\n')
    proc = yiem_in(
        tmp_path, "batch", str(tasks), "--out", str(tmp_path / "out.jsonl"),
        "--model", "openai-compatible/m", "--base-url", server.url + "/v1",
        "--temperature", "0.4", "--max-tokens", "30",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [(r.body["temperature"], r.body["max_tokens"]) for r in server.requests] == [
        (0.4, 30),
        (0.4, 30),
    ]


def test_every_case_of_an_eval_is_asked_with_them(server: ReplayServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"name": "greet", "input": "Hi", "checks": [{"contains": "Hi"}]}))
    proc = yiem_in(
        tmp_path, "eval", str(data), "--model", "openai-compatible/m",
        "--base-url", server.url + "/v1", "--temperature", "0", "--max-tokens", "12",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.body["temperature"] == 0 and request.body["max_tokens"] == 12


@pytest.mark.parametrize("spec", [str(TEAM), "my_agents:make_agent"])
@pytest.mark.parametrize("command", ["batch", "eval"])
def test_beside_an_agent_file_or_function_they_are_one_line(
    command: str, spec: str, tmp_path: Path
) -> None:
    data = tmp_path / "in.jsonl"
    if command == "batch":
        data.write_text('{"id": "a", "prompt": "Hi"}\n')
        args = [str(data), "--out", str(tmp_path / "out.jsonl")]
    else:
        data.write_text(json.dumps({"name": "a", "input": "Hi", "checks": [{"contains": "x"}]}))
        args = [str(data)]
    proc = yiem_in(tmp_path, command, *args, "--agent", spec, "--temperature", "0.2")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == (
        "yiem: error: --temperature does not go with --agent: set it in the agent file"
        if spec.endswith(".toml")
        else f"yiem: error: --temperature does not go with --agent {spec}: the function "
        "builds the agent"
    )
