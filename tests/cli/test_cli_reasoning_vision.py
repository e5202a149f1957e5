"""`yiem run --reasoning LEVEL`, an agent file's `reasoning = "..."` and `yiem run --vision`
(DESIGN §21): the real CLI in a subprocess against replay servers on 127.0.0.1 speaking the
Anthropic and OpenAI wire formats. The level reaches the first request; a local server's
model said to read images gets the image itself; bad values are one line."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply

pytestmark = pytest.mark.timeout(180)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


KEYS = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}


def yiem(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return yiem_in(folder, *args, env=KEYS)


def warnings_in(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if "warning" in line.lower()]


def test_reasoning_reaches_claude_in_the_first_request(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    proc = yiem(
        tmp_path,
        "run", "Hi", "--model", "anthropic/claude-sonnet-4-5", "--base-url", server.url,
        "--reasoning", "medium",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert warnings_in(proc) == []


def test_reasoning_for_a_model_that_cannot_think_is_one_warning(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
    proc = yiem(
        tmp_path,
        "run", "Hi", "--model", "openai/gpt-4o", "--base-url", server.url + "/v1",
        "--reasoning", "high",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello."
    assert warnings_in(proc) == [
        "yiem: warning: --reasoning is ignored: openai/gpt-4o is not a reasoning model"
    ]
    body = server.requests[0].body
    assert "reasoning_effort" not in body and "reasoning" not in body


@pytest.mark.parametrize("name", ["openai-compatible/qwen3", "ollama/qwen3"])
def test_reasoning_reaches_a_local_server_s_model(
    server: ReplayServer, name: str, tmp_path: Path
) -> None:
    """Nothing says whether a local server's model thinks: --reasoning says it does (it was
    ignored, with a warning, so a thinking model there could not be asked to think)."""
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
    proc = yiem(
        tmp_path,
        "run",
        "Hi",
        "--model",
        name,
        "--base-url",
        server.url + "/v1",
        "--reasoning",
        "high",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello."
    assert warnings_in(proc) == []
    assert server.requests[0].body["reasoning_effort"] == "high"


def test_a_bad_reasoning_level_is_one_line(tmp_path: Path) -> None:
    proc = yiem(tmp_path, "run", "Hi", "--model", "openai/gpt-4o", "--reasoning", "max")
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        "yiem: error: --reasoning must be minimal, low, medium, high, xhigh or off, not 'max'"
    )


def test_an_agent_files_reasoning_reaches_claude(server: ReplayServer, tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text('[agents.thinker]\nreasoning = "low"\n')  # the model: --model's
    server.enqueue(sse_reply("anthropic_text.sse"))
    proc = yiem(
        tmp_path,
        "run", "Hi", "--agent", str(team), "--model", "anthropic/claude-sonnet-4-5",
        "--base-url", server.url,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_a_bad_reasoning_in_an_agent_file_is_one_line(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text('[agents.thinker]\nmodel = "openai/gpt-4o"\nreasoning = 3\n')
    proc = yiem(tmp_path, "run", "Hi", "--agent", str(team))
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert line.endswith(
        "[agents.thinker] reasoning: must be one of minimal, low, medium, high, xhigh or off, not 3"
    )


@pytest.mark.parametrize("vision", [True, False])
def test_vision_sends_the_image_to_a_local_server(
    server: ReplayServer, tmp_path: Path, vision: bool
) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})))
    proc = yiem(
        tmp_path,
        "run", "What is this?", "--model", "ollama/llava", "--base-url", server.url + "/v1",
        "--attach", str(tmp_path / "dot.png"), *(["--vision"] if vision else []),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [user] = [m for m in server.requests[0].body["messages"] if m["role"] == "user"]
    if vision:
        assert user["content"][1] == {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        }
        assert warnings_in(proc) == []
    else:
        assert user["content"][1]["type"] == "text"  # the stand-in
        assert len(warnings_in(proc)) == 1


def test_vision_for_a_hosted_model_is_one_line(tmp_path: Path) -> None:
    proc = yiem(tmp_path, "run", "Hi", "--model", "openai/gpt-4o", "--vision")
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        "yiem: error: --vision is for local servers (openai-compatible/..., ollama/...), "
        "not 'openai/gpt-4o'"
    )
