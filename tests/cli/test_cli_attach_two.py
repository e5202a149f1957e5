"""`yiem run --attach A --attach B` (DESIGN §21), the real CLI in a subprocess against a
replay server on 127.0.0.1: a model that reads images and PDFs gets both in the user
message, in order, in the OpenAI wire format; a text-only server gets a stand-in for each
and the user one `yiem: warning:` line."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks

pytestmark = pytest.mark.timeout(180)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


def yiem_run(
    folder: Path, server: ReplayServer, model: str, *files: Path
) -> subprocess.CompletedProcess[str]:
    attach = [arg for path in files for arg in ("--attach", str(path))]
    args = ["run", "What are these?", *attach, "--model", model, "--base-url", server.url + "/v1"]
    return yiem_in(folder, *args, env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})


@pytest.mark.parametrize("vision", [True, False])
def test_two_attachments_reach_the_model_or_their_stand_ins(
    server: ReplayServer, tmp_path: Path, vision: bool
) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "A dot, a PDF."})))
    model = "openai/gpt-4o" if vision else "openai-compatible/small"
    proc = yiem_run(tmp_path, server, model, tmp_path / "shot.png", tmp_path / "report.pdf")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "A dot, a PDF."
    [request] = server.requests
    [user] = [m for m in request.body["messages"] if m["role"] == "user"]
    parts = user["content"]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("yiem: warning:")]
    if vision:
        assert [p["type"] for p in parts] == ["text", "image_url", "file"]
        assert (
            parts[1]["image_url"]["url"]
            == "data:image/png;base64," + base64.b64encode(PNG).decode()
        )
        assert parts[2]["file"]["filename"] == "report.pdf"
        assert warnings == []
    else:
        assert [p.get("text") for p in parts[1:]] == [
            "[image omitted: this model cannot see images]",
            "[PDF report.pdf omitted: this model cannot read PDFs]",
        ]
        [warning] = warnings
        assert "openai-compatible/small cannot read images or PDFs" in warning


def test_attach_dev_stdin_reads_a_piped_image(server: ReplayServer) -> None:
    """`cat photo.png | yiem run "..." --attach /dev/stdin`: a pipe cannot seek back, and
    its size is unknown until read; the image is read once, within its limit."""
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})))
    args = ["run", "What is this?", "--attach", "/dev/stdin", "--model", "openai/gpt-4o"]
    proc = subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", *args, "--base-url", server.url + "/v1"],
        input=PNG,
        capture_output=True,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-0123456789abcdef"},
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "A dot."
    [user] = [m for m in server.requests[0].body["messages"] if m["role"] == "user"]
    image = user["content"][1]["image_url"]["url"]
    assert image == "data:image/png;base64," + base64.b64encode(PNG).decode()
