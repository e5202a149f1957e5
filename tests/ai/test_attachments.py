"""Images and PDFs attached to a prompt (DESIGN §21): the type read from the content, the
limits checked before anything is read whole or sent, one clear line for bad input, and
each provider's wire format, seen in the requests a local server on 127.0.0.1 recorded
through the official SDKs (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses)."""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentTool, AgentToolResult
from yiemagent.ai import Context, StreamOptions, complete, get_model
from yiemagent.ai.attachments import (
    MAX_IMAGE_BYTES,
    AttachmentError,
    AttachmentWarning,
    image_from_base64,
    load_attachment,
    load_attachments,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.types.messages import (
    AssistantMessage,
    DocumentContent,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A PNG named .png, a PDF named .png (the content decides), a text file named .pdf,
    and a sparse 50 MB file that starts like a PNG."""
    paths = {
        "photo": tmp_path / "photo.png",
        "pdf_as_png": tmp_path / "scan.png",
        "text_as_pdf": tmp_path / "notes.pdf",
        "huge": tmp_path / "huge.png",
    }
    paths["photo"].write_bytes(PNG)
    paths["pdf_as_png"].write_bytes(PDF)
    paths["text_as_pdf"].write_text("just some notes\n")
    with paths["huge"].open("wb") as file:
        file.write(PNG[:16])
        file.truncate(50 * 1024 * 1024)  # sparse: nothing is written or read
    return paths


def test_the_type_comes_from_the_content_not_the_name(files: dict[str, Path]) -> None:
    image = load_attachment(files["photo"])
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG
    document = load_attachment(files["pdf_as_png"])
    assert isinstance(document, DocumentContent)
    assert document.mime_type == "application/pdf" and document.name == "scan.png"
    assert isinstance(load_attachment(PDF), DocumentContent)  # bytes work too
    for head, mime in [
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"GIF89a", "image/gif"),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp"),
    ]:
        block = load_attachment(head + b"\0" * 8)
        assert isinstance(block, ImageContent) and block.mime_type == mime


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", "no such file"),
        ("huge", "50.0 MB, larger than the 20.0 MB an image may be"),
        ("text_as_pdf", "neither an image (PNG, JPEG, GIF, WebP) nor a PDF"),
        ("folder", "is a folder"),
    ],
)
def test_bad_attachments_are_one_clear_line(
    files: dict[str, Path], tmp_path: Path, case: str, expected: str
) -> None:
    path = {"missing": tmp_path / "nope.png", "folder": tmp_path}.get(case) or files[case]
    with pytest.raises(AttachmentError) as caught:
        load_attachment(path)
    text = str(caught.value)
    assert expected in text and str(path) in text and "\n" not in text
    with pytest.raises(AttachmentError, match="the file is empty"):
        load_attachment(b"")
    with pytest.raises(AttachmentError, match="not int"):
        load_attachments([3])  # type: ignore[list-item]
    assert MAX_IMAGE_BYTES == 20 * 1024 * 1024


def test_documents_round_trip_through_json() -> None:
    message = UserMessage([TextContent("read"), DocumentContent("JVBERg==", name="a.pdf")])
    assert message_from_dict(message_to_dict(message)) == message


# ── the Agent and the CLI: nothing is sent for bad input ─────────────────────


async def test_agent_prompt_attachments_and_the_warning_for_a_text_only_model(
    files: dict[str, Path],
) -> None:
    fm = FauxModel(["It is a tiny picture."])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    with pytest.raises(AttachmentError, match="no such file"):
        await agent.prompt("What is this?", attachments=[files["photo"].parent / "x.png"])
    assert fm.call_count == 0  # nothing sent
    with pytest.warns(AttachmentWarning, match="cannot read images or PDFs"):
        await agent.prompt("What is this?", attachments=[files["photo"], PDF])
    [sent] = fm.contexts[0].messages
    assert isinstance(sent, UserMessage)
    assert [type(b).__name__ for b in sent.content] == [
        "TextContent",
        "ImageContent",
        "DocumentContent",
    ]
    seeing = FauxModel(["ok"])
    vision = Agent(
        model=Model(id="v", provider="faux", api="faux", input=("text", "image", "pdf")),
        stream_fn=seeing.stream_fn,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a model that reads both
        await vision.prompt("What is this?", attachments=[files["photo"], PDF])


@pytest.mark.parametrize("case", ["missing", "huge", "text_as_pdf"])
def test_cli_bad_attach_is_one_line_and_nothing_is_sent(
    files: dict[str, Path],
    tmp_path: Path,
    server: ReplayServer,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    path = tmp_path / "nope.png" if case == "missing" else files[case]
    code = main(
        [
            "run",
            "What is in this picture?",
            "--attach",
            str(path),
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.url + "/v1",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("yiem: error: --attach ") and str(path) in line
    assert server.requests == []


# ── each wire format ─────────────────────────────────────────────────────────


def _transcript(files: dict[str, Path]) -> list[Any]:
    """A user turn with a PNG and a PDF, a tool call, and a result carrying an image."""
    call = ToolCall(id="call_1", name="screenshot", arguments={})
    return [
        UserMessage(
            [
                TextContent("What is in these?"),
                load_attachment(files["photo"]),
                load_attachment(files["pdf_as_png"]),
            ]
        ),
        AssistantMessage([call], stop_reason="toolUse"),
        ToolResultMessage(
            "call_1", "screenshot", [TextContent("here"), ImageContent("aGk=", "image/png")]
        ),
    ]


def _data(payload: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(payload).decode()}"


async def test_openai_chat_image_url_and_file_parts(
    files: dict[str, Path], server: ReplayServer
) -> None:
    server.replies.put(sse_reply(openai_chunks({"content": "ok"})))
    model = get_model("openai/gpt-4o-mini", base_url=server.url + "/v1")
    reply = await complete(model, Context("", _transcript(files)), StreamOptions(api_key=KEY))
    assert reply.stop_reason == "stop", reply.error_message
    user, _, tool, images = server.requests[0].body["messages"]
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": _data(PNG, "image/png")},
    }
    assert user["content"][2] == {
        "type": "file",
        "file": {"filename": "scan.png", "file_data": _data(PDF, "application/pdf")},
    }
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "here"}
    assert images["role"] == "user" and images["content"][1]["image_url"]["url"].endswith("aGk=")


async def test_anthropic_image_and_document_blocks(
    files: dict[str, Path], server: ReplayServer
) -> None:
    server.replies.put(sse_reply("anthropic_text.sse"))
    model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    reply = await complete(model, Context("", _transcript(files)), StreamOptions(api_key=KEY))
    assert reply.stop_reason == "stop", reply.error_message
    user, _, results = server.requests[0].body["messages"]
    assert user["content"][1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        },
    }
    assert user["content"][2] == {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(PDF).decode(),
        },
        "title": "scan.png",
        "cache_control": {"type": "ephemeral"},  # the turn before the latest
    }
    [result] = results["content"]
    assert result["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
    }


def responses_sse(*events: dict[str, Any]) -> list[str]:
    """SSE events of a Responses stream, each `event: <type>` with its JSON."""
    return [f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events]


def responses_done(status: str = "completed", **usage: int) -> dict[str, Any]:
    counts = {"input_tokens": 10, "output_tokens": 3, "cached": 0, **usage}
    return {
        "type": f"response.{status}",
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": status,
            "model": "gpt-4o-mini",
            "output": [],
            "usage": {
                "input_tokens": counts["input_tokens"],
                "input_tokens_details": {"cached_tokens": counts["cached"]},
                "output_tokens": counts["output_tokens"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": counts["input_tokens"] + counts["output_tokens"],
            },
        },
    }


async def test_responses_input_image_and_input_file(
    files: dict[str, Path], server: ReplayServer
) -> None:
    server.replies.put(
        sse_reply(
            responses_sse(
                {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
                responses_done(),
            )
        )
    )
    model = get_model("openai-responses/gpt-4o-mini", base_url=server.url + "/v1")
    reply = await complete(model, Context("", _transcript(files)), StreamOptions(api_key=KEY))
    assert reply.stop_reason == "stop" and reply.text == "ok", reply.error_message
    request = server.requests[0]
    assert request.path == "/v1/responses"
    user, call, output = request.body["input"]
    assert user["content"][1] == {
        "type": "input_image",
        "image_url": _data(PNG, "image/png"),
        "detail": "auto",
    }
    assert user["content"][2] == {
        "type": "input_file",
        "filename": "scan.png",
        "file_data": _data(PDF, "application/pdf"),
    }
    assert call["type"] == "function_call" and call["call_id"] == "call_1"
    assert output == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": "data:image/png;base64,aGk=", "detail": "auto"},
        ],
    }


async def test_a_text_only_server_gets_stand_ins(
    files: dict[str, Path], server: ReplayServer
) -> None:
    server.replies.put(sse_reply(openai_chunks({"content": "ok"})))
    model = get_model("openai-compatible/small", base_url=server.url + "/v1")
    await complete(model, Context("", _transcript(files)[:1]), StreamOptions())
    [user] = server.requests[0].body["messages"]
    texts = [part["text"] for part in user["content"]]
    assert texts[1] == "[image omitted: this model cannot see images]"
    assert texts[2] == "[PDF scan.png omitted: this model cannot read PDFs]"


async def test_an_image_declared_with_the_wrong_type_goes_with_its_own() -> None:
    """anthropics/claude-code#12009, microsoft/playwright-mcp#1211: a screenshot tool that
    declares PNG bytes as image/jpeg gets "Image does not match the provided media type"
    from Anthropic on every later call, and the stored session stays broken. The bytes
    tell the type; a type they do not show (or data that is no known image) is kept."""
    png = base64.b64encode(PNG).decode()

    async def screenshot(*_: Any) -> Any:
        return AgentToolResult([ImageContent(png, "image/jpeg"), ImageContent("aGk=", "image/bmp")])

    tool = AgentTool(
        "shot", "shot", "a screenshot", {"type": "object", "properties": {}}, screenshot
    )
    fm = FauxModel([faux_message(faux_tool_call("shot", {})), "seen"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    await agent.prompt("look")
    [result] = [m for m in fm.contexts[-1].messages if isinstance(m, ToolResultMessage)]
    assert [(b.mime_type, b.data) for b in result.content] == [  # type: ignore[union-attr]
        ("image/png", png),
        ("image/bmp", "aGk="),
    ]
    assert image_from_base64(f"data:image/webp;base64,{png}").mime_type == "image/png"


def test_a_device_that_is_no_image_is_not_called_empty() -> None:
    """A device or pipe has a size of 0 whatever it holds: /dev/zero is neither an image
    nor a PDF, not an empty file."""
    with pytest.raises(AttachmentError) as caught:
        load_attachment("/dev/zero")
    assert "neither an image (PNG, JPEG, GIF, WebP) nor a PDF" in str(caught.value)
    with pytest.raises(AttachmentError, match="the file is empty"):
        load_attachment("/dev/null")
