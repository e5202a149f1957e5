"""`yiem run --attach` (DESIGN §21) on each hosted wire format, through `--base-url` to a
server on 127.0.0.1: an image and a PDF reach Anthropic as `image` and `document` blocks,
the Responses API as `input_image` and `input_file` parts, Chat Completions as
`image_url` and `file` parts; an image larger than Anthropic takes is one `yiem: warning:`
line and a text naming it, and the run goes on."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import PDF, PNG, responses_done, responses_sse
from tests.ai.test_image_pixel_limits import png
from tests.ai.test_wire_schemas import assert_valid
from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


ANSWERS: dict[str, Any] = {
    "anthropic/claude-sonnet-4-5": "anthropic_text.sse",
    "openai-responses/gpt-4o-mini": responses_sse(
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "seen"},
        responses_done(),
    ),
    "openai/gpt-4o-mini": openai_chunks({"content": "seen"}),
}


def _user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages") or body["input"]
    user: list[dict[str, Any]] = next(m for m in messages if m.get("role") == "user")["content"]
    return user


def _run(server: ReplayServer, model: str, *files: Path) -> int:
    root = server.url if model.startswith("anthropic/") else server.url + "/v1"
    attach = [arg for path in files for arg in ("--attach", str(path))]
    return main(["run", "What are these?", "--model", model, "--base-url", root, *attach])


@pytest.mark.parametrize("model", list(ANSWERS))
def test_an_image_and_a_pdf_reach_each_api_in_its_format(
    model: str,
    server: ReplayServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    server.enqueue(sse_reply(ANSWERS[model]))
    assert _run(server, model, tmp_path / "photo.png", tmp_path / "report.pdf") == 0
    _, err = capsys.readouterr()
    assert "warning" not in err
    body = server.requests[0].body
    api = {"anthropic": "anthropic-messages", "openai-responses": "openai-responses"}
    assert_valid(api.get(model.split("/")[0], "openai-completions"), body)
    png64, pdf64 = base64.b64encode(PNG).decode(), base64.b64encode(PDF).decode()
    image, document = _user_parts(body)[1:]
    if model.startswith("anthropic/"):
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": png64}
        assert document["type"] == "document" and document["source"]["data"] == pdf64
        assert document["title"] == "report.pdf"
    elif model.startswith("openai-responses/"):
        assert image["image_url"] == f"data:image/png;base64,{png64}"
        assert document == {
            "type": "input_file",
            "filename": "report.pdf",
            "file_data": f"data:application/pdf;base64,{pdf64}",
        }
    else:
        assert image["image_url"] == {"url": f"data:image/png;base64,{png64}"}
        assert document["file"]["file_data"] == f"data:application/pdf;base64,{pdf64}"


def test_an_image_too_tall_for_anthropic_is_one_warning_line(
    server: ReplayServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    (tmp_path / "page.png").write_bytes(png(1200, 9000))
    server.enqueue(sse_reply("anthropic_text.sse"))
    assert _run(server, "anthropic/claude-sonnet-4-5", tmp_path / "page.png") == 0
    _, err = capsys.readouterr()
    [line] = [line for line in err.splitlines() if line.startswith("yiem: warning: ")]
    assert "at most 8000 px a side" in line and "Traceback" not in err
    [_, stand_in] = _user_parts(server.requests[0].body)
    assert stand_in["text"].startswith("[image omitted: 1200x9000 px")
