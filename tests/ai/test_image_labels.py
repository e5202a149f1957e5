"""An image labelled with a type its bytes are not (DESIGN §8): a photo handed over as
ImageContent, a stored session's image, a tool's screenshot that is a JPEG said to be a
PNG. The Anthropic API checks the bytes against the label and refuses the request, and with
the image in the history every later request of the session; each provider sends the type
the bytes show. Through an Agent and the real SDKs against a local replay server."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentToolResult, ImageContent, TextContent, UserMessage, tool
from yiemagent.types import Model

pytestmark = pytest.mark.timeout(120)

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(40)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)


@tool
def screenshot() -> AgentToolResult:
    """Take a screenshot (the tool says PNG whatever it took)."""
    return AgentToolResult(
        [
            ImageContent(base64.b64encode(JPEG).decode(), "image/png"),
            ImageContent("data:image/gif;base64," + base64.b64encode(PNG).decode(), "image/png"),
        ]
    )


def _anthropic_call() -> list[str]:
    return [
        'event: message_start\ndata: {"type": "message_start", "message": {"id": "m1", "type":'
        ' "message", "role": "assistant", "content": [], "model": "claude-x", "stop_reason":'
        ' null, "usage": {"input_tokens": 5, "output_tokens": 1}}}',
        'event: content_block_start\ndata: {"type": "content_block_start", "index": 0,'
        ' "content_block": {"type": "tool_use", "id": "toolu_1", "name": "screenshot",'
        ' "input": {}}}',
        'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}',
        'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason":'
        ' "tool_use"}, "usage": {"output_tokens": 3}}',
        'event: message_stop\ndata: {"type": "message_stop"}',
    ]


def _images(body: Any, found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every image of a request body as (declared type, base64 data), in order."""
    if isinstance(body, dict):
        source = body.get("source")
        if body.get("type") == "image" and isinstance(source, dict):
            found.append((source["media_type"], source["data"]))
        url = (body.get("image_url") or {}) if body.get("type") == "image_url" else {}
        if isinstance(url, dict) and url.get("url", "").startswith("data:"):
            head, _, data = url["url"].partition(",")
            found.append((head[5 : -len(";base64")], data))
        for value in body.values():
            _images(value, found)
    elif isinstance(body, list):
        for value in body:
            _images(value, found)
    return found


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
async def test_a_mislabelled_image_goes_with_the_type_of_its_bytes(
    server: ReplayServer, api: str
) -> None:
    if api == "anthropic-messages":
        model = Model(
            id="claude-x",
            provider="anthropic",
            api=api,
            base_url=server.url,
            input=["text", "image"],
        )
        server.enqueue(sse_reply(_anthropic_call()), sse_reply("anthropic_text.sse"))
    else:
        model = Model(
            id="m", provider="vllm", api=api, base_url=server.url + "/v1", input=["text", "image"]
        )
        call = {"index": 0, "id": "call_1", "type": "function"}
        call["function"] = {"name": "screenshot", "arguments": "{}"}
        server.enqueue(
            sse_reply(openai_chunks({"tool_calls": [call]}, finish_reason="tool_calls")),
            sse_reply(openai_chunks({"content": "A login page."})),
        )
    jpeg, png = base64.b64encode(JPEG).decode(), base64.b64encode(PNG).decode()
    earlier = UserMessage([TextContent("Keep this one."), ImageContent(png, "image/webp")])
    agent = Agent(model=model, tools=[screenshot], messages=[earlier])
    given = ImageContent(jpeg, "image/png")  # as a UI hands a photo over, labelled by name
    reply = await agent.prompt("What is on the screen?", images=[given])
    assert reply.stop_reason == "stop", reply.error_message
    # the history's image, the prompt's, then the tool's two (the pipeline checks those)
    expected = [("image/png", png), ("image/jpeg", jpeg), ("image/jpeg", jpeg), ("image/png", png)]
    assert _images(server.requests[1].body, []) == expected
