"""`--vision/--no-vision` (DESIGN §21): an `azure/` deployment reads images by default, so
`--no-vision` says its model does not; the real CLI in a subprocess against a replay server
on 127.0.0.1 speaking the OpenAI wire format. Every command that runs a model takes the
pair; either one for a model whose modalities are known is one line."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks

pytestmark = pytest.mark.timeout(180)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
AZURE = {"AZURE_OPENAI_API_KEY": "azure-test-0123456789", "AZURE_OPENAI_ENDPOINT": None}


def yiem(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return yiem_in(folder, *args, env={**AZURE, "OPENAI_API_KEY": "sk-test-0123456789abcdef"})


@pytest.mark.parametrize("flag", [[], ["--no-vision"], ["--vision"]], ids=str)
def test_no_vision_turns_an_azure_deployment_s_images_off(tmp_path: Path, flag: list[str]) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})))
        proc = yiem(
            tmp_path,
            "run", "What is this?", "--model", "azure/gpt-4o", "--base-url", server.url + "/v1",
            "--attach", str(tmp_path / "dot.png"), *flag,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        [user] = [m for m in server.requests[0].body["messages"] if m["role"] == "user"]
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    if flag == ["--no-vision"]:
        assert user["content"][1]["type"] == "text"  # the stand-in, and one line saying so
        assert len(warnings) == 1, proc.stderr
    else:
        assert user["content"][1]["type"] == "image_url"
        assert warnings == []


@pytest.mark.parametrize(
    "command",
    [
        ["run", "Hi"],
        ["batch", "tasks.jsonl", "--out", "out.jsonl"],
        ["eval", "cases.yaml"],
        ["serve", "--port", "0"],
    ],
    ids=lambda command: command[0],
)
@pytest.mark.parametrize("flag", ["--no-vision", "--vision"])
def test_either_flag_for_a_hosted_model_is_one_line(
    tmp_path: Path, command: list[str], flag: str
) -> None:
    (tmp_path / "tasks.jsonl").write_text('{"id": "1", "prompt": "Hi"}\n')
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  - name: a\n    input: Hi\n    checks: [{contains: a}]\n"
    )
    proc = yiem(tmp_path, *command, "--model", "openai/gpt-4o", flag)
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        f"yiem: error: {flag} is for local servers (openai-compatible/..., ollama/...), "
        "not 'openai/gpt-4o'"
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_chat_takes_no_vision(tmp_path: Path) -> None:
    """`yiem chat --no-vision` parses (no terminal here: the one line says so)."""
    proc = yiem(tmp_path, "chat", "--model", "azure/gpt-4o", "--base-url", "http://127.0.0.1:9/v1",
                "--no-vision")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().endswith(
        'yiem chat needs a terminal; for one prompt use: yiem run "..."'
    )
