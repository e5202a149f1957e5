"""Images larger in pixels than Anthropic's Messages API takes (DESIGN §21): more than
8000 px a side, or 2000 px in a request holding more than 20 images, make the API refuse
the request ("At least one of the image dimensions exceed max allowed size: 8000 pixels"),
and, kept in the session, every later one. Such an image goes as a text naming its size,
the user is warned when it is an attachment, and the session goes on; other APIs get it as
it is. Through the `anthropic` and `openai` SDKs against a server on 127.0.0.1."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tests.ai.servers import ReplayServer, anthropic_events, openai_chunks, sse_reply
from tests.ai.test_wire_schemas import assert_valid
from yiemagent import Agent, AgentTool, AgentToolResult
from yiemagent.ai import Context, StreamOptions, complete, get_model
from yiemagent.ai.attachments import AttachmentWarning, image_size
from yiemagent.types.messages import ImageContent, TextContent, UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-ant-test-0123456789abcdef"


def png(width: int, height: int) -> bytes:
    """A real grey PNG of `width` x `height` pixels (all black, so it compresses to a
    few kilobytes whatever its size)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    rows = (b"\x00" + b"\x00" * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 1))
        + chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


TALL = b64(png(1440, 8570))  # a full-page screenshot
WIDE = b64(png(2500, 40))  # over 2000 px, under 8000


def sent_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of the request's user turns, tool results' blocks included."""
    out: list[dict[str, Any]] = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            out.extend(block["content"] if block["type"] == "tool_result" else [block])
    return out


def test_the_size_comes_from_the_header() -> None:
    assert image_size(TALL) == (1440, 8570)
    assert image_size(b64(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8)) is None  # no header to read


async def test_a_full_page_screenshot_from_a_tool_does_not_wedge_the_session(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def screenshot(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("page"), ImageContent(TALL, "image/png")])

    tool = AgentTool("shot", "shot", "A screenshot", {"type": "object"}, screenshot)
    server.enqueue(
        sse_reply(
            anthropic_events(
                {"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}},
                stop_reason="tool_use",
            )
        ),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent(model=claude, tools=[tool])
    await agent.prompt("Look at the page")
    await agent.prompt("And again?")
    for request in server.requests[1:]:
        assert_valid(claude.api, request.body)
        blocks = sent_blocks(request.body)
        assert all(b["type"] != "image" for b in blocks)
        assert {
            "type": "text",
            "text": "[image omitted: 1440x8570 px, larger than the 8000 px a side "
            "the Messages API takes]",
        } in blocks
    # kept in the transcript as it came: another model may take it
    assert any(isinstance(b, ImageContent) for m in agent.state.messages for b in m.content)


@pytest.mark.parametrize(("count", "as_images"), [(20, True), (21, False)])
async def test_more_than_20_images_must_each_fit_2000_px(
    server: ReplayServer, count: int, as_images: bool
) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    # one BMP more, which goes as a text whatever the count: it is not an image sent
    images = [ImageContent(WIDE, "image/png") for _ in range(count)]
    images.append(ImageContent(b64(b"BM" + b"\x00" * 30), "image/bmp"))
    messages = [UserMessage([TextContent("compare"), *images])]
    reply = await complete(claude, Context("", messages), StreamOptions(api_key=KEY))
    assert reply.stop_reason == "stop", reply.error_message
    body = server.requests[0].body
    assert_valid(claude.api, body)
    kinds = [b["type"] for b in sent_blocks(body)]
    assert kinds.count("image") == (count if as_images else 0)
    if not as_images:
        texts = [b["text"] for b in sent_blocks(body) if b["type"] == "text"]
        assert (
            texts.count(
                "[image omitted: 2500x40 px, larger than the 2000 px a side the Messages API takes]"
            )
            == count
        )


async def test_an_attached_image_too_tall_warns_and_other_apis_get_it(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"), sse_reply(openai_chunks({"content": "ok"})))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent(model=claude)
    with pytest.warns(AttachmentWarning, match="at most 8000 px a side"):
        await agent.prompt("What is on this page?", attachments=[base64.b64decode(TALL)])
    assert "image" not in [b["type"] for b in sent_blocks(server.requests[0].body)]
    agent.state.model = get_model("openai/gpt-4o-mini", base_url=server.url + "/v1")
    await agent.prompt("And you?")
    [first_user] = [m for m in server.requests[1].body["messages"] if m["role"] == "user"][:1]
    assert first_user["content"][1]["image_url"]["url"] == f"data:image/png;base64,{TALL}"


@settings(max_examples=300, deadline=None)
@given(
    head=st.sampled_from([b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF89a", b"RIFF\0\0\0\0WEBP"]),
    rest=st.binary(max_size=64),
)
def test_a_damaged_header_gives_no_size_and_never_raises(head: bytes, rest: bytes) -> None:
    size = image_size(b64(head + rest))
    assert size is None or (size[0] > 0 and size[1] > 0)
